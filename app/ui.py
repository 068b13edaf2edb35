"""The bundled browser UI: ``/`` serves ``static/index.html``, ``/static`` the rest.

The UI is buildless (ES modules, vendored libraries under ``static/vendor/``), so there is
nothing to compile: ``make run`` serves it as it is. The page is public (it holds no data);
every call it makes goes through the same auth as any other client.
"""

from __future__ import annotations

from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

STATIC_DIR = Path(__file__).parent / "static"

# Model and tool text is rendered through a sanitizer; this policy is the second line:
# no inline script at all, no plugins, no framing of the UI by other sites. Plaid Link
# (live Plaid connections only) is the one outside script, loaded on demand.
CONTENT_SECURITY_POLICY = "; ".join((
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
))

PAGE_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    # The page is tiny and changes with every release: always revalidate.
    "Cache-Control": "no-cache",
}


async def index(request: Request) -> Response:
    return FileResponse(STATIC_DIR / "index.html", headers=PAGE_HEADERS)


def ui_routes() -> list[BaseRoute]:
    return [
        Route("/", index, methods=["GET", "HEAD"]),
        Mount("/static", app=StaticFiles(directory=STATIC_DIR), name="static"),
    ]
