"""What a connector brings to the browser UI, found by convention beside its entry point.

A connector package may ship ``card.js`` (a JavaScript module the UI imports: its card
renderers, approval summaries, connect label, client widgets; docs/connectors.md "The UI
card") and ``card.css`` (its styles) in its own folder, next to its ``__init__.py``, as it
ships ``render.py`` for the model. The server serves them; nothing else names them.

Two declarative fields of ``Connector`` are checked here when it registers: ``icon``, the
name of one of the UI's icons (``mail``, ``bank``, ``store``, ``search``, …), and ``csp``,
the outside sources its card needs in the page's Content-Security-Policy (a widget script,
its frame), per directive. Sources are plain ``https://`` (or ``wss://``) hosts: a
connector can let one service in, never weaken the policy for every page (no
``'unsafe-inline'``, no ``*``, no ``http:`` or ``data:``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from connectors.registry import Connector

#: The files a connector may ship for the UI, and how each is served.
CARD_FILES: Mapping[str, str] = {
    "card.js": "text/javascript; charset=utf-8",
    "card.css": "text/css; charset=utf-8",
}
#: The directives a connector may add sources to.
CSP_DIRECTIVES = frozenset(
    {"script-src", "style-src", "img-src", "connect-src", "frame-src", "font-src", "media-src"}
)
_SOURCE = re.compile(
    r"(https|wss)://(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*"
    r"(:[0-9]{1,5})?(/[A-Za-z0-9._~%!$&()*+=:@/-]*)?",
    re.IGNORECASE,
)
_ICON = re.compile(r"[a-z][a-z0-9-]{0,31}")
# The digest in a card's URL: enough to tell versions apart, short enough to read.
DIGEST_CHARS = 16


def ui_problems(connector: Connector) -> list[str]:
    """What is wrong with ``connector``'s UI declarations (empty: nothing); each line says
    what was declared and what is accepted."""
    problems = []
    if connector.icon is not None and not _ICON.fullmatch(connector.icon):
        problems.append(
            f"icon={connector.icon!r} is not an icon name (lower-case letters, digits and "
            "dashes, e.g. 'store')"
        )
    for directive, sources in connector.csp.items():
        if directive not in CSP_DIRECTIVES:
            problems.append(
                f"csp names {directive!r}, which a connector cannot extend; it may add "
                f"sources to {', '.join(sorted(CSP_DIRECTIVES))}"
            )
            continue
        if isinstance(sources, str):
            problems.append(f"csp[{directive!r}] is a string; give a tuple of sources")
            continue
        for source in sources:
            if not isinstance(source, str) or not _SOURCE.fullmatch(source):
                problems.append(
                    f"csp[{directive!r}] source {source!r} is not an https:// or wss:// host "
                    "(keywords, wildcards and other schemes would weaken every page's policy)"
                )
    return problems


def csp_sources(connectors: Iterable[Connector]) -> dict[str, list[str]]:
    """Every connector's declared sources per directive, in connector order, each once."""
    merged: dict[str, list[str]] = {}
    for connector in connectors:
        for directive, sources in connector.csp.items():
            found = merged.setdefault(directive, [])
            found.extend(source for source in sources if source not in found)
    return merged


@dataclass(frozen=True)
class CardFile:
    """One asset, read once: its bytes, how it is served, and a digest of its content."""

    name: str  # "card.js"
    body: bytes
    media_type: str
    digest: str


def folder_of(connector: Connector) -> Path | None:
    """The folder of the package its entry point names; None for a plain module or a
    connector without one (RAP and MCP servers)."""
    if connector.module is None:
        return None
    try:
        spec = find_spec(connector.module)
    except Exception:  # it imported at registration; gone since: no assets
        return None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    return Path(locations[0]) if locations else None


def card_files(connector: Connector) -> dict[str, CardFile]:
    """The UI files ``connector`` ships, read from disk (blocking: call it in a thread)."""
    folder = folder_of(connector)
    if folder is None:
        return {}
    found = {}
    for name, media_type in CARD_FILES.items():
        path = folder / name
        if path.is_file():
            body = path.read_bytes()
            digest = hashlib.sha256(body).hexdigest()[:DIGEST_CHARS]
            found[name] = CardFile(name, body, media_type, digest)
    return found
