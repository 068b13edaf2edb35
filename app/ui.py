"""The bundled browser UI: ``/`` serves ``static/index.html`` (with the server's limits
filled in), ``/static`` the rest.

The UI is buildless (ES modules, vendored libraries under ``static/vendor/``), so there is
nothing to compile: ``make run`` serves it as it is. The page is public (it holds no data);
every call it makes goes through the same auth as any other client.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from app.services import services_of

STATIC_DIR = Path(__file__).parent / "static"

# Model and tool text is rendered through a sanitizer; this policy is the second line:
# no inline script at all, no plugins, no framing of the UI by other sites. Plaid Link
# (live Plaid connections only) is the one outside script, loaded on demand.
CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self' https://cdn.plaid.com",
        "style-src 'self'",
        "img-src 'self' data: https:",
        "connect-src 'self'",
        "frame-src https://cdn.plaid.com",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    )
)

PAGE_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    # The page is tiny and changes with every release: always revalidate.
    "Cache-Control": "no-cache",
}


# The server's limits, written into the page (attributes of <body>) so the composer counts
# against the real prompt limit and can say which limit refused a message.
LIMIT_PLACEHOLDERS = {
    "__MAX_PROMPT_CHARS__": "max_prompt_chars",
    "__MAX_FRAME_BYTES__": "max_frame_bytes",
}


def page_renderer() -> Callable[[Request], Awaitable[Response]]:
    """The ``/`` endpoint: index.html, read once, with this server's limits filled in."""
    template = (STATIC_DIR / "index.html").read_text(encoding="utf-8")
    missing = [name for name in LIMIT_PLACEHOLDERS if name not in template]
    if missing:  # an edit lost them: the page would count against the wrong limit
        raise RuntimeError(f"app/static/index.html lacks {', '.join(missing)}")

    async def index(request: Request) -> Response:
        settings = services_of(request).settings
        page = template
        for placeholder, setting in LIMIT_PLACEHOLDERS.items():
            page = page.replace(placeholder, str(int(getattr(settings, setting))))
        return HTMLResponse(page, headers=PAGE_HEADERS)

    return index


def ui_routes() -> list[BaseRoute]:
    return [
        Route("/", page_renderer(), methods=["GET", "HEAD"]),
        Mount("/static", app=StaticFiles(directory=STATIC_DIR), name="static"),
    ]
