"""The bundled browser UI: ``/`` serves ``static/index.html`` (with the server's limits
filled in), ``/static`` the rest, ``/connectors/{name}/card.js`` each connector's own card
(``app.connector_assets``).

The UI is buildless (ES modules, vendored libraries under ``static/vendor/``), so there is
nothing to compile: ``make run`` serves it as it is. The page is public (it holds no data);
every call it makes goes through the same auth as any other client.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from app.api_docs import Answer, Operation, documented
from app.connector_assets import connector_asset_routes
from app.oidc import OidcVerifier, ProviderUnreachable
from app.services import services_of
from connectors.registry import Connector
from connectors.ui_card import csp_sources

STATIC_DIR = Path(__file__).parent / "static"

# Model and tool text is rendered through a sanitizer; this policy is the second line:
# no inline script at all, no plugins, no framing of the UI by other sites. The installed
# connectors add the outside sources their cards need (``Connector.csp``, e.g. a widget's
# script and frame, loaded on demand); nothing else is let in.
BASE_POLICY: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("default-src", ("'self'",)),
    ("script-src", ("'self'",)),
    ("style-src", ("'self'",)),
    ("img-src", ("'self'", "data:", "https:")),
    ("connect-src", ("'self'",)),
    ("frame-src", ()),  # only what a connector declares
    ("font-src", ()),
    ("media-src", ()),
    ("object-src", ("'none'",)),
    ("base-uri", ("'none'",)),
    ("form-action", ("'self'",)),
    ("frame-ancestors", ("'none'",)),
)


def content_security_policy(connectors: Iterable[Connector], connect: Iterable[str] = ()) -> str:
    """The page's policy: the base one, plus each connector's declared sources, plus
    ``connect`` (the identity provider's origins, whose token endpoint the page calls).

    A directive the base leaves empty appears only when a connector adds to it (else
    ``default-src 'self'`` governs it).
    """
    extra = {key: list(values) for key, values in csp_sources(connectors).items()}
    extra["connect-src"] = [*extra.get("connect-src", ()), *connect]
    directives = []
    for directive, base in BASE_POLICY:
        sources = [*base, *(s for s in extra.get(directive, ()) if s not in base)]
        if sources:
            directives.append(" ".join((directive, *sources)))
    return "; ".join(directives)


def page_headers(connectors: Iterable[Connector], connect: Iterable[str] = ()) -> dict[str, str]:
    return {
        "Content-Security-Policy": content_security_policy(connectors, connect),
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


def _origin(url: str | None) -> str | None:
    parts = urlsplit(url) if url else None
    return f"{parts.scheme}://{parts.netloc}" if parts and parts.scheme and parts.netloc else None


async def provider_origins(oidc: OidcVerifier | None) -> list[str]:
    """The origins the page calls to sign in (oidc mode): the issuer's and the token
    endpoint's (the discovery document, when it can be had, names it)."""
    if oidc is None:
        return []
    urls: list[str | None] = [oidc.issuer]
    try:
        urls.append((await oidc.metadata()).token_endpoint)
    except ProviderUnreachable:
        pass  # the page will say that sign-in is unavailable
    origins: list[str] = []
    for origin in map(_origin, urls):
        if origin is not None and origin not in origins:
            origins.append(origin)
    return origins


def page_renderer() -> Callable[[Request], Awaitable[Response]]:
    """The ``/`` endpoint: index.html, read once, with this server's limits filled in."""
    template = (STATIC_DIR / "index.html").read_text(encoding="utf-8")
    missing = [name for name in LIMIT_PLACEHOLDERS if name not in template]
    if missing:  # an edit lost them: the page would count against the wrong limit
        raise RuntimeError(f"app/static/index.html lacks {', '.join(missing)}")

    @documented(
        "GET",
        Operation(
            summary="The bundled browser UI",
            tag="ui",
            signed_in=False,
            errors="html",
            answers={200: Answer("The page (it holds no data)", media_type="text/html")},
        ),
    )
    async def index(request: Request) -> Response:
        services = services_of(request)
        settings = services.settings
        page = template
        for placeholder, setting in LIMIT_PLACEHOLDERS.items():
            page = page.replace(placeholder, str(int(getattr(settings, setting))))
        connect = await provider_origins(services.auth.oidc)
        return HTMLResponse(page, headers=page_headers(services.connectors, connect))

    return index


def ui_routes() -> list[BaseRoute]:
    return [
        Route("/", page_renderer(), methods=["GET", "HEAD"]),
        *connector_asset_routes(),
        Mount("/static", app=StaticFiles(directory=STATIC_DIR), name="static"),
    ]
