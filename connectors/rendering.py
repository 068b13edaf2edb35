"""How the model reads each ``response_type``: the renderer registry. Pure: no I/O.

A renderer turns a ToolResponse dict into what the model reads: a string (our own words)
or a list of ``Part``s, where a part with a ``source`` is third-party text that
``connectors.plain_text`` fences as data (``connectors.untrusted``). A renderer that cannot
read its payload raises ``Unreadable`` (or anything else) and the payload is shown as
compact JSON instead.

Each connector registers its types beside its agent (``connectors/<name>/render.py``)
with ``register_type``; the generic kinds (error, file, link, text, account cards) are in
``connectors.generic_renderers``. A type says where its text comes from: ``source=None``
for results that hold only what we or the user's own bank wrote (never fenced); every
other type, including unregistered ones, is third-party text.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from importlib import import_module
from importlib.metadata import entry_points
from importlib.util import find_spec
from typing import Any

from connectors.names import ENTRY_POINT_GROUP
from connectors.plugin_code import PluginCodeFailed, run_plugin_code
from connectors.text import SNIPPET_CHARS, dumps, one_line, plural

logger = logging.getLogger("switchboard.connectors")

#: What the fence calls the text of a type that does not say.
THIRD_PARTY = "tool result"

PLAIN = object()  # a Part's ``value`` when it is plain text, not JSON


@dataclass(frozen=True)
class Part:
    """A piece of what the model reads. With a ``source`` it is third-party text, fenced as
    data from there; ``value`` is the JSON ``text`` shows, so a cut keeps whole items."""

    text: str
    source: str | None = None
    value: object = PLAIN


Rendering = str | list[Part]
Renderer = Callable[[dict[str, Any]], Rendering]
# How a type's ``content_chunks`` are introduced: (heading, what the fence calls them).
CitationHeading = Callable[[dict[str, Any]], tuple[str, str]]


class Unreadable(Exception):
    """A renderer cannot read its payload: fall back to compact JSON."""


def _sources_heading(_data: dict[str, Any]) -> tuple[str, str]:
    return "Sources", "sources"


@dataclass(frozen=True)
class TypeInfo:
    render: Renderer | None = None
    source: str | None = THIRD_PARTY
    cite: CitationHeading = _sources_heading


_TYPES: dict[str, TypeInfo] = {}

# Renderers register when their modules are imported: the shared ones below, and each
# installed connector's ``render`` module beside its entry point (``switchboard_weather.render``
# for ``switchboard_weather:connector``), found by that convention, not by a list of names.
# That happens on first use rather than at import time: importing a connector package
# imports its agent and tools, which import this module.
_SHARED_MODULES = ("connectors.generic_renderers", "connectors.rap.results")
_loaded = False
_loading = threading.RLock()


def register_type(
    *response_types: str,
    render: Renderer | None = None,
    source: str | None = THIRD_PARTY,
    cite: CitationHeading = _sources_heading,
) -> None:
    """Say how the model reads ``response_types``: ``render`` (None: compact JSON, or the
    text itself), where their text comes from (``source``, None: our own words) and how
    their citations are introduced (``cite``)."""
    info = TypeInfo(render, source, cite)
    for response_type in response_types:
        _TYPES[response_type] = info


def type_info(response_type: str) -> TypeInfo:
    global _loaded
    with _loading:  # re-entrant: a module being loaded may look a type up
        if not _loaded:
            _loaded = True
            for name in _SHARED_MODULES:
                import_module(name)
            for name in _connector_render_modules():
                _import_plugin_module(name)
    return _TYPES.get(response_type) or TypeInfo()


def _connector_render_modules() -> list[str]:
    modules = []
    for point in entry_points(group=ENTRY_POINT_GROUP):
        package = point.value.partition(":")[0].strip()
        # Finding a submodule imports its package: a plug-in's own code, which may raise
        # anything (sys.exit included) on the first tool result of a turn.
        try:
            found = run_plugin_code(partial(find_spec, f"{package}.render")) is not None
        except PluginCodeFailed:  # a plug-in that does not import: the registry reports it
            continue
        if found:
            modules.append(f"{package}.render")
    return modules


def _import_plugin_module(name: str) -> None:
    try:
        run_plugin_code(partial(import_module, name))
    except PluginCodeFailed as failed:
        # Its types are then read as compact JSON; the turn goes on.
        logger.error("renderers of %s not loaded", name, exc_info=failed.error)


def source_of(response_type: str) -> str | None:
    """What the fence calls a response type's text; None for our own results."""
    return type_info(response_type).source


def own_types() -> frozenset[str]:
    """The registered types whose text is only ours (never fenced)."""
    type_info("")  # the built-ins registered
    return frozenset(name for name, info in _TYPES.items() if info.source is None)


# --------------------------------------------------------------------------- for renderers


def items(data: dict[str, Any]) -> list[Any]:
    """The response as a list of items, or ``Unreadable``."""
    found = data.get("response")
    if not isinstance(found, list):
        raise Unreadable
    return found


def header(data: dict[str, Any], count: int, word: str) -> str:
    name = one_line(data.get("friendly_name")) or one_line(data.get("agent_name")) or "Result"
    return f"{name} ({plural(count, word)}):"


def numbered(
    data: dict[str, Any],
    entries: list[Any],
    noun: str,
    empty: str,
    describe: Callable[[dict[str, Any]], str],
) -> Rendering:
    """A header, then one numbered line per entry; an entry that is not an object as JSON.

    The lines are fenced when the response type's entries come from third parties.
    """
    if not entries:
        return empty
    lines = []
    for number, entry in enumerate(entries, 1):
        body = describe(entry) if isinstance(entry, dict) else one_line(dumps(entry), SNIPPET_CHARS)
        lines.append(f"{number}. {body}")
    return [
        Part(header(data, len(entries), noun)),
        Part("\n".join(lines), source_of(str(data.get("response_type")))),
    ]


def citations(chunks: Iterable[Any]) -> list[str]:
    """``[n] title — url`` lines, each with its snippet below."""
    lines = []
    for number, chunk in enumerate(chunks, 1):
        if not isinstance(chunk, dict):
            lines.append(f"[{number}] {one_line(dumps(chunk), SNIPPET_CHARS)}")
            continue
        title = one_line(chunk.get("title"), 160) or "(untitled)"
        url = one_line(chunk.get("url"))
        line = f"[{number}] {title}" + (f" — {url}" if url else "")
        snippet = one_line(chunk.get("snippet"), SNIPPET_CHARS * 2)
        lines.append(f"{line}\n    {snippet}" if snippet else line)
    return lines
