"""Each connector's UI files (``connectors.ui_card``): ``GET /connectors/{name}/card.js``
and ``/connectors/{name}/card.css``, and the URLs ``GET /api/connectors`` lists for them.

Public like ``/static``: a card is code, not data, and the page imports it without a
token. Only the two names a connector may ship are served, looked up in a table built
from the served connectors, so no path from the request ever reaches the file system.
A URL carries its file's digest (``?v=``): with the current one the answer is cached for
good; without it (or with an old one) it is revalidated with its ETag.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from weakref import WeakKeyDictionary

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

from app.api_docs import Answer, Operation, Query, documented
from app.services import Services, services_of
from connectors.registry import Connector
from connectors.ui_card import CardFile, card_files

logger = logging.getLogger("switchboard.connectors")

FOREVER = "public, max-age=31536000, immutable"
REVALIDATE = "no-cache"


@dataclass(frozen=True)
class CardAssets:
    """The UI files of every served connector, read once per app."""

    files: dict[str, dict[str, CardFile]]  # connector name → file name → file

    def url(self, connector: str, name: str) -> str | None:
        found = self.files.get(connector, {}).get(name)
        if found is None:
            return None
        return f"/connectors/{connector}/{name}?v={found.digest}"


_cache: WeakKeyDictionary[Services, CardAssets] = WeakKeyDictionary()
_reading: WeakKeyDictionary[Services, asyncio.Lock] = WeakKeyDictionary()


def _read(connectors: tuple[Connector, ...]) -> CardAssets:
    files = {}
    for connector in connectors:
        try:
            found = card_files(connector)
        except OSError as exc:  # unreadable: the UI shows its cards the generic way
            logger.warning("connector %r: its UI files cannot be read (%s)", connector.name, exc)
            continue
        if found:
            files[connector.name] = found
    return CardAssets(files)


async def card_assets(services: Services) -> CardAssets:
    """The served connectors' UI files, read from disk in a thread the first time."""
    cached = _cache.get(services)
    if cached is not None:
        return cached
    lock = _reading.setdefault(services, asyncio.Lock())
    async with lock:
        cached = _cache.get(services)
        if cached is None:
            cached = await anyio.to_thread.run_sync(_read, services.connectors)
            _cache[services] = cached
    return cached


@documented(
    "GET",
    Operation(
        summary="A connector's UI card module (card.js) or stylesheet (card.css)",
        tag="ui",
        signed_in=False,
        errors="text",
        query=(Query("v", {"type": "string"}, "The file's digest: cached for good when current"),),
        answers={
            200: Answer("The file", media_type="text/javascript", also=("text/css",)),
            304: Answer("Not modified (If-None-Match)"),
            404: Answer("No such file of a served connector", media_type="text/plain"),
        },
    ),
)
async def connector_asset(request: Request) -> Response:
    assets = await card_assets(services_of(request))
    connector = request.path_params["name"]
    found = assets.files.get(connector, {}).get(request.path_params["file"])
    if found is None:
        return PlainTextResponse(
            "no such connector card file; GET /api/connectors lists each connector's card",
            status_code=404,
            headers={"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"},
        )
    etag = f'"{found.digest}"'
    current = request.query_params.get("v") == found.digest
    headers = {
        "ETag": etag,
        "Cache-Control": FOREVER if current else REVALIDATE,
        "X-Content-Type-Options": "nosniff",
    }
    matches = _etags(request.headers.get("if-none-match", ""))
    if etag in matches or "*" in matches:
        return Response(status_code=304, headers=headers)
    return Response(found.body, media_type=found.media_type, headers=headers)


def _etags(header: str) -> set[str]:
    return {tag.strip().removeprefix("W/") for tag in header.split(",") if tag.strip()}


def connector_asset_routes() -> list[BaseRoute]:
    return [Route("/connectors/{name}/{file}", connector_asset, methods=["GET", "HEAD"])]
