"""The offline model's steps for a connector that plans nothing itself: the tool whose
name, description and examples fit the request best, its arguments read from the request
(``offline_arguments``), and before it any hidden lookup an argument needs."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from app.llm.offline_arguments import extract, last_resort, properties, value_from_output
from app.llm.offline_routing import stem, words_of
from app.llm.offline_transcript import Offer, OfferedTool
from connectors.offline_hints import Clause, OfflineHints, PastCall, Step, Turn

# What people say for what tools are called ("show" the issues → list_issues).
_SYNONYMS: dict[str, tuple[str, ...]] = {
    "show": ("list", "get"),
    "display": ("list", "get"),
    "what": ("list", "get"),
    "which": ("list",),
    "any": ("list",),
    "file": ("create",),
    "add": ("create",),
    "new": ("create",),
    "make": ("create",),
    "report": ("create",),
    "open": ("create",),
    "remove": ("delete",),
    "erase": ("delete",),
    "edit": ("update",),
    "change": ("update",),
    "rename": ("update",),
    "lookup": ("find", "get"),
    "look": ("find", "get"),
    "search": ("find", "list"),
}


def _clause_words(text: str) -> set[str]:
    found: set[str] = set()
    for _, word in words_of(text, frozenset()):
        found.add(word)
        found.update(_SYNONYMS.get(word, ()))
    return found


def _tool_words(tool: OfferedTool, hints: OfflineHints) -> set[str]:
    texts = [tool.name, tool.description, *hints.tool(tool.name).examples]
    for prop in properties(tool.schema):
        texts.extend(str(value) for value in prop.enum)
    return {word for text in texts for _, word in words_of(text)}


def lookup_targets(offer: Offer, hints: OfflineHints) -> set[str]:
    """Tools that only feed others (declared lookups, hidden tools)."""
    targets = {tool for tools in hints.tools.values() for tool in tools.lookups.values()}
    return targets | {name for name in offer.tools if hints.tool(name).hidden}


def pick_tool(text: str, offer: Offer, hints: OfflineHints) -> OfferedTool:
    """The offered tool that fits ``text`` best; reads win ties over writes."""
    tools = list(offer.tools.values())
    wanted = _clause_words(text)
    vocabularies = {tool.name: _tool_words(tool, hints) for tool in tools}
    frequency: dict[str, int] = {}
    for words in vocabularies.values():
        for word in words:
            frequency[word] = frequency.get(word, 0) + 1
    feeders = lookup_targets(offer, hints)

    def score(indexed: tuple[int, OfferedTool]) -> tuple[float, int, int]:
        index, tool = indexed
        fit = sum(1.0 / frequency[word] for word in wanted & vocabularies[tool.name])
        if tool.name in feeders:
            fit -= 0.5  # asked for directly only when nothing else fits as well
        return fit, -int(tool.needs_approval), -index

    return max(enumerate(tools), key=score)[1]


def _source_for(argument: str, tool: OfferedTool, offer: Offer, hints: OfflineHints) -> str | None:
    """The tool whose output gives ``argument``: declared, else the one named after it
    ("project_id" ← find_project) that does not itself need it."""
    declared = hints.tool(tool.name).lookups.get(argument)
    if declared in offer.tools:
        return declared
    subject = {stem(word) for word in argument.lower().split("_") if word not in {"id", "key"}}
    best: tuple[float, str] | None = None
    for other in offer.tools.values():
        if other.name == tool.name or argument in {p.name for p in properties(other.schema)}:
            continue
        named = {word for _, word in words_of(other.name + " " + other.description)}
        fit = len(subject & named) - 0.5 * int(other.needs_approval)
        if fit >= 1 and (best is None or fit > best[0]):
            best = (fit, other.name)
    return best[1] if best else None


def _found_earlier(turn: Turn, argument: str, types: frozenset[str], source: str | None) -> Any:
    calls: list[PastCall] = list(reversed(turn.calls))
    if source is not None:  # the declared or matching lookup first, then any other output
        calls.sort(key=lambda call: call.name != source)
    for call in calls:
        if call.is_handoff or call.failed or call.not_run:
            continue
        value = value_from_output(call.output or "", argument, types)
        if value is not None:
            return value
    return None


def _phrase(tool_name: str) -> str:
    words = tool_name.replace("_", " ").split()
    return " ".join([words[0], "the", *words[1:]]) if len(words) > 1 else tool_name


def _fixed(arguments: Mapping[str, Any]) -> Callable[[Turn], dict[str, Any]]:
    return lambda turn: dict(arguments)


def generic_steps(clause: Clause, offer: Offer, hints: OfflineHints) -> list[Step]:
    """The lookups a tool needs, then the tool, for a clause routed to this agent."""
    tool = pick_tool(clause.text, offer, hints)
    extractor = hints.tool(tool.name).extract
    extraction = extract(tool.schema, clause, extractor(clause) if extractor else None)
    types = {prop.name: prop.types for prop in properties(tool.schema)}
    sources: dict[str, str | None] = {
        name: _source_for(name, tool, offer, hints) for name in extraction.missing
    }
    steps = []
    for source in dict.fromkeys(s for s in sources.values() if s is not None):
        looked_up = offer.tools[source]
        finder = hints.tool(source).extract
        found = extract(looked_up.schema, clause, finder(clause) if finder else None)
        arguments: Mapping[str, Any] = {
            **found.arguments,
            **{name: last_resort(name, looked_up.schema, clause) for name in found.missing},
        }
        steps.append(Step(source, _fixed(arguments)))

    def build(turn: Turn) -> dict[str, Any] | None:
        arguments = dict(extraction.arguments)
        for name, source in sources.items():
            value = _found_earlier(turn, name, types[name], source)
            if value is None and source is not None:
                return None  # the lookup found nothing: do not call the tool with a guess
            arguments[name] = value if value is not None else last_resort(name, tool.schema, clause)
        return arguments

    needed = ", ".join(name.replace("_", " ") for name, s in sources.items() if s)
    note = f"I couldn't find the {needed} to {_phrase(tool.name)}." if needed else ""
    return [*steps, Step(tool.name, build, note)]
