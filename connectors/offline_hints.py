"""What a connector tells the offline demo model about itself. Pure: no I/O.

The offline model (``app.llm.offline``) runs ``make run`` without an API key. It reads
only what a real model reads (the prompt, earlier tool calls and their text outputs, the
tools and hand-offs it is offered) plus these hints, which stand in for a real model's
knowledge of the world. Every field is optional: a connector without hints is still
routed by its agent's ``handoff_description``, its tools picked by their descriptions and
their arguments read from the prompt by their JSON schemas.

A connector declares ``Connector(..., offline=OfflineHints(...))``:

- ``examples``: prompts people would type for it ("list the open issues in Apollo"). The
  orchestrator routes a request to the connector whose examples and description share
  the most telling words with it.
- ``tools``: per tool name, ``ToolHints``: its own example prompts (to pick the tool),
  ``extract`` (arguments read from the request when the schema alone is not enough) and
  ``lookups`` (argument → the tool whose output yields it: a hidden lookup chained first).
- ``planner`` / ``summary`` / ``follow_up`` / ``result_title``: full control over the steps,
  the answer's sentences and the results' titles, for connectors that need more than the
  generic path (the built-ins keep their demo behaviour with these).
- ``suggestions``: follow-up prompts offered after a card of a given ``response_type``.
- ``declines``: what people ask of this kind of service that the connector cannot do
  ("transfer $500 to Bob" of a bank that only reads): the model says so, in the request's
  language, instead of routing it somewhere it would become something else.
- ``capability_in``: ``capability`` in other languages, for the same help text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from connectors.registry import Connector

Arguments = dict[str, Any]


@dataclass(frozen=True)
class PastCall:
    """A tool call made earlier in this turn, as the model reads it back."""

    call_id: str
    name: str
    arguments: dict[str, Any]
    output: str | None  # the tool's text output; None while there is none

    @property
    def is_handoff(self) -> bool:
        return self.name.startswith("transfer_to_")

    @property
    def failed(self) -> bool:
        return self.output is None or self.output.lstrip().startswith(("Error", "An error"))

    @property
    def not_run(self) -> bool:
        """The person declined the call, or its approval expired (websocket.pause)."""
        return (self.output or "").lstrip().startswith("Not run:")


def _untitled(call: PastCall) -> str:
    return "Results from Switchboard"


@dataclass(frozen=True)
class Turn:
    """This turn so far, as a step's argument builder reads it."""

    prompt: str  # the latest user message
    calls: tuple[PastCall, ...]  # every call since that message, hand-offs included
    # Visible results of other connectors' tools this turn (what "email them" refers to).
    shared: tuple[PastCall, ...] = ()
    # A short title for a result ("Sushi in Boston"), from its connector's hints.
    title_of: Callable[[PastCall], str] = _untitled

    def outputs(self, *names: str) -> list[PastCall]:
        """The successful calls of the tools ``names``, oldest first."""
        wanted = set(names)
        return [call for call in self.calls if call.name in wanted and not call.failed]


@dataclass(frozen=True)
class Clause:
    """The part of the request a connector was given ("email the list to bob@…")."""

    text: str
    prompt: str  # the whole latest user message
    today: date


Builder = Callable[[Turn], Arguments | None]


@dataclass(frozen=True)
class Step:
    """One tool call a planner wants; ``build`` returns its arguments, or None to skip it
    (then ``skip_note`` is said in the answer)."""

    name: str
    build: Builder
    skip_note: str = ""


@dataclass(frozen=True)
class ToolHints:
    examples: tuple[str, ...] = ()
    # Arguments this tool's connector can read from the request better than the schema
    # alone; what it leaves out is read generically.
    extract: Callable[[Clause], Mapping[str, Any]] | None = None
    # Argument → the tool whose output yields it ("project_id": "find_project"): when the
    # request does not give the argument, that tool is called first, out of sight.
    lookups: Mapping[str, str] = field(default_factory=dict)
    # A lookup nobody needs to read about (its card is hidden too).
    hidden: bool = False
    follow_up: str | None = None  # offered after this tool's result


@dataclass(frozen=True)
class Decline:
    """A request the model answers with "I can't" and what it can do instead.

    ``asks``: per language code ("en", "fr", "es", "de"), how people ask for it; ``says``:
    the answer, per language (English when the request's language has none). ``about``:
    words a connector that *can* do it would use ("move money"): while another agent's
    description or examples use one, the decline stands aside and the request is routed.
    """

    asks: Mapping[str, re.Pattern[str]]
    says: Mapping[str, str]
    about: str = ""

    def languages(self, text: str) -> list[str]:
        """The languages in which ``text`` asks for this (none: it does not)."""
        return [language for language, pattern in self.asks.items() if pattern.search(text)]

    def answer(self, language: str) -> str:
        return self.says.get(language) or self.says.get("en") or next(iter(self.says.values()))


@dataclass(frozen=True)
class OfflineHints:
    examples: tuple[str, ...] = ()  # the first one is offered as a starter prompt
    tools: Mapping[str, ToolHints] = field(default_factory=dict)
    # Words that route a request here outright ("inbox", "unread" for email).
    keywords: re.Pattern[str] | None = None
    catch_all: bool = False  # gets what no connector claims (web search)
    capability: str = ""  # "search the web": for the offline help text
    capability_in: Mapping[str, str] = field(default_factory=dict)  # {"fr": "chercher…"}
    declines: tuple[Decline, ...] = ()
    # The steps for a clause routed here, instead of the generic choice of one tool.
    planner: Callable[[Clause], list[Step]] | None = None
    # The answer's sentence for one of its calls; None leaves it to the generic one.
    summary: Callable[[PastCall], str | None] | None = None
    follow_up: str | None = None  # offered after its results ("Want reviews for any?")
    result_title: Callable[[PastCall], str | None] | None = None
    suggestions: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def tool(self, name: str) -> ToolHints:
        return self.tools.get(name) or NO_TOOL_HINTS


NO_TOOL_HINTS = ToolHints()
NO_HINTS = OfflineHints()


def hints_by_agent(connectors: Iterable[Connector]) -> dict[str, OfflineHints]:
    """Agent name → its connector's hints (``NO_HINTS`` for a connector without any)."""
    return {connector.agent_name: connector.offline or NO_HINTS for connector in connectors}
