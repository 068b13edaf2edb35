"""What the offline demo model decides to do: pure functions over the model's input.

The model sees only what a real model sees: the conversation items (user prompt, earlier
function calls and their text outputs) and the tools and hand-offs it is offered, plus
the connectors' offline hints it was built with (``OfflineKnowledge``). From those it
works out which agent it is acting as, which tool step comes next, whom to hand off to,
and finally a short summary of this turn's tool results.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from app.llm.offline_arguments import extract, last_resort
from app.llm.offline_declines import decline_answer, declined
from app.llm.offline_direct import direct_answer
from app.llm.offline_generic import generic_steps, pick_tool
from app.llm.offline_knowledge import OfflineKnowledge
from app.llm.offline_routing import DECLINED, Route, plan, routes_for, standing, vocabulary
from app.llm.offline_summary import help_text, small_talk_reply, summarize
from app.llm.offline_transcript import (
    CallTool,
    Decision,
    Offer,
    OfferedTool,
    Say,
    Transcript,
)
from connectors.offline_hints import NO_HINTS, Clause, Decline, Step, Turn

_GREETING = re.compile(
    r"^\s*(hi|hello|hey|yo|good (morning|afternoon|evening)|help|thanks|"
    r"thank you|what can you do|who are you)\b",
    re.I,
)
SELF = "(this agent)"  # the calling agent, when no connector's hints say who it is


# A message that is only a greeting or thanks ("thanks!", "hi there"): never a request,
# whatever a connector's examples say ("Reply saying thanks").
_ONLY_GREETING = re.compile(
    r"^\s*(?:hi|hello|hey|yo|thanks|thank you|thx|cheers|good (?:morning|afternoon|evening)|"
    r"help|what can you do|who are you)(?:\s+(?:so much|a lot|again|there|very much|all))*"
    r"[\s!.?,]*$",
    re.I,
)


def is_small_talk(prompt: str, routes: list[Route]) -> bool:
    if _ONLY_GREETING.match(prompt):
        return True
    return bool(_GREETING.match(prompt)) and not plan(prompt, routes, None)


@dataclass
class Progress:
    decision: Decision | None = None
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Situation:
    transcript: Transcript
    offer: Offer
    knowledge: OfflineKnowledge
    today: date

    def own_agent(self) -> str:
        """Who is calling: the agent whose hints name these tools, else the one connector
        agent the calling agent cannot hand off to (every agent hands off to its peers)."""
        named = self.knowledge.agent_for_tools(self.offer.tools)
        if named is not None:
            return named
        others = [agent for agent in self.knowledge.agents if agent not in self.offer.handoffs]
        return others[0] if len(others) == 1 else SELF

    def turn(self) -> Turn:
        own = set(self.offer.tools)
        shared = tuple(
            call
            for call in self.transcript.calls
            if not call.is_handoff
            and call.name not in own
            and not self.knowledge.is_hidden(call.name)
        )
        return Turn(self.transcript.prompt, self.transcript.calls, shared, self.knowledge.title_of)

    def steps(self, agent: str, clause: str) -> list[Step]:
        part = Clause(clause, self.transcript.prompt, self.today)
        hints = self.knowledge.hints(agent)
        if hints.planner is not None:
            return hints.planner(part)
        return generic_steps(part, self.offer, hints)


def _next_step(situation: Situation, parts: list[tuple[str, str]], own: str) -> Progress:
    # The steps already taken this turn are matched, in order, against this agent's calls,
    # so each model call resumes exactly where the turn is.
    progress = Progress()
    transcript = situation.transcript
    done = [call for call in transcript.calls if call.name in situation.offer.tools]
    turn = situation.turn()
    cursor = 0
    for agent, clause in parts:
        if agent != own:
            continue
        for step in situation.steps(own, clause):
            if cursor < len(done) and done[cursor].name == step.name:
                cursor += 1
                continue
            if step.name not in situation.offer.tools:
                continue  # a planner asking for a tool this deployment does not offer
            arguments = step.build(turn)
            if arguments is None:
                if step.skip_note:
                    progress.notes.append(step.skip_note)
                continue
            progress.decision = CallTool(step.name, arguments)
            return progress
    return progress


def _acted(transcript: Transcript, agent: str, offer: Offer, knowledge: OfflineKnowledge) -> bool:
    return any(
        knowledge.owner(call.name) == agent or call.name == offer.handoff_for(agent)
        for call in transcript.calls
    )


# ----------------------------------------------------------------------------- the caller's tools

CALLER = "(the caller's tools)"  # a route to the API caller's own tools


def _callers(offer: Offer) -> tuple[Offer, dict[str, OfferedTool]]:
    """``offer`` without the caller's tools, and those tools."""
    callers = {name: tool for name, tool in offer.tools.items() if tool.caller}
    own = {name: tool for name, tool in offer.tools.items() if not tool.caller}
    return Offer(own, offer.handoffs), callers


def _caller_calls(transcript: Transcript, offer: Offer, knowledge: OfflineKnowledge) -> list[str]:
    """Names of this request's calls of the caller's tools: calls that are neither hand-offs
    nor tools a connector owns or this agent has."""
    return [
        call.name
        for call in transcript.calls
        if not call.is_handoff
        and knowledge.owner(call.name) is None
        and call.name not in offer.tools
    ]


def _caller_route(callers: dict[str, OfferedTool], called: list[str]) -> Route:
    texts = [f"{tool.name} {tool.description}" for tool in callers.values()] + called
    return Route(CALLER, vocabulary(*texts))


def _call_caller(
    clause: str, transcript: Transcript, callers: dict[str, OfferedTool], today: date
) -> CallTool:
    """A call of the caller's tool that fits ``clause``, its arguments read from it."""
    only = Offer(callers, {})
    tool = pick_tool(clause, only, NO_HINTS)
    return CallTool(tool.name, _arguments(tool, clause, transcript, today))


def _arguments(
    tool: OfferedTool, clause: str, transcript: Transcript, today: date
) -> dict[str, Any]:
    part = Clause(clause, transcript.prompt, today)
    extraction = extract(tool.schema, part, None)
    arguments = dict(extraction.arguments)
    for name in extraction.missing:
        arguments[name] = last_resort(name, tool.schema, part)
    return {
        key: value.strip().rstrip(".,;:!?") if isinstance(value, str) else value
        for key, value in arguments.items()
    }


# ----------------------------------------------------------------------------- deciding


def decide(
    transcript: Transcript,
    offer: Offer,
    today: date,
    knowledge: OfflineKnowledge,
    tool_choice: str | None = None,
) -> Decision:
    """The next move of whichever agent is calling: a tool call, a hand-off or the answer.
    ``tool_choice`` is the model setting: ``none``, ``required`` or a tool to call."""
    if tool_choice == "none":
        offer = Offer({}, {})
    forced = _forced(transcript, offer, today, knowledge, tool_choice)
    if forced is not None:
        return forced
    decision = _decide(transcript, offer, today, knowledge)
    if tool_choice == "required" and isinstance(decision, Say):
        return _any_tool(transcript, offer, today, knowledge) or decision
    return decision


def _forced(
    transcript: Transcript,
    offer: Offer,
    today: date,
    knowledge: OfflineKnowledge,
    tool_choice: str | None,
) -> CallTool | None:
    if tool_choice in (None, "auto", "none", "required"):
        return None
    if any(handoff.tool == tool_choice for handoff in offer.handoffs.values()):
        return CallTool(str(tool_choice), {})
    tool = offer.tools.get(str(tool_choice))
    if tool is None:
        return None
    if not tool.caller:
        # A connector's tool: its planned step if it has one, else read from the request.
        own = Offer({tool.name: tool}, {})
        agent = knowledge.owner(tool.name)
        situation = Situation(transcript, own, knowledge, today)
        steps = situation.steps(agent, transcript.prompt) if agent else []
        for step in steps:
            if step.name == tool.name:
                arguments = step.build(situation.turn())
                if arguments is not None:
                    return CallTool(tool.name, arguments)
    return CallTool(tool.name, _arguments(tool, transcript.prompt, transcript, today))


def _any_tool(
    transcript: Transcript, offer: Offer, today: date, knowledge: OfflineKnowledge
) -> CallTool | None:
    """A tool call for ``tool_choice: required``, when the model would have answered."""
    if offer.tools:
        tool = pick_tool(transcript.prompt, offer, NO_HINTS)
        return _forced(transcript, offer, today, knowledge, tool.name)
    fallback = knowledge.catch_all if knowledge.catch_all in offer.handoffs else None
    for agent, _ in plan(transcript.prompt, routes_for(knowledge, offer), fallback):
        if (handoff := offer.handoff_for(agent)) is not None:
            return CallTool(handoff, {})
    first = next(iter(offer.handoffs.values()), None)
    return CallTool(first.tool, {}) if first is not None else None


def _decide(
    transcript: Transcript, offer: Offer, today: date, knowledge: OfflineKnowledge
) -> Decision:
    offer, callers = _callers(offer)
    if not offer.tools:
        return _route(transcript, offer, callers, knowledge, today)
    situation = Situation(transcript, offer, knowledge, today)
    own = situation.own_agent()
    described = [f"{tool.name} {tool.description}" for tool in offer.tools.values()]
    routes = routes_for(knowledge, offer, (own, described))
    if callers:
        routes.append(_caller_route(callers, []))
    declines = standing(knowledge, routes)
    parts = plan(transcript.prompt, routes, knowledge.catch_all, declines)
    if not any(agent == own for agent, _ in parts):
        # Handed a request that is not ours (or a follow-up with no keywords): do our default.
        parts = [(own, transcript.prompt), *parts]
    progress = _next_step(situation, parts, own)
    if progress.decision is not None:
        return progress.decision
    for agent, clause in parts:
        if agent == own:
            continue
        if agent == CALLER:
            if not _caller_calls(transcript, offer, knowledge):
                return _call_caller(clause, transcript, callers, today)
            continue
        tool = offer.handoff_for(agent)
        if tool and not _acted(transcript, agent, offer, knowledge):
            return CallTool(tool, {})
    refused = [text for text, _ in _refused(parts, declines, transcript.prompt)]
    return Say(summarize(transcript, [*progress.notes, *refused], knowledge, own))


def _refused(
    parts: list[tuple[str, str]], declines: tuple[Decline, ...], prompt: str
) -> list[tuple[str, str]]:
    """What the declined parts of the request get said (the demo cannot do them), and in
    which language."""
    return declined([clause for agent, clause in parts if agent == DECLINED], declines, prompt)


def _route(
    transcript: Transcript,
    offer: Offer,
    callers: dict[str, OfferedTool],
    knowledge: OfflineKnowledge,
    today: date,
) -> Decision:
    """The orchestrator: what it answers itself answered directly, everything else handed
    off (or, for the caller's tools, called); once every part is done, the answer."""
    prompt = transcript.prompt
    if not transcript.calls:
        direct = direct_answer(transcript)
        if direct is not None:
            return Say(direct)
    routes = routes_for(knowledge, offer)
    called = _caller_calls(transcript, offer, knowledge)
    if callers or called:
        routes.append(_caller_route(callers, called))
    if not prompt or is_small_talk(prompt, routes):
        return Say(small_talk_reply(prompt, offer, knowledge))
    fallback = knowledge.catch_all if knowledge.catch_all in offer.handoffs else None
    declines = standing(knowledge, routes)
    parts = plan(prompt, routes, fallback, declines)
    for agent, clause in parts:
        if agent == CALLER:
            if callers and not called:
                return _call_caller(clause, transcript, callers, today)
            continue
        if _acted(transcript, agent, offer, knowledge):
            continue  # done earlier in this request (it goes on after the caller's results)
        handoff = offer.handoff_for(agent)
        if handoff:
            return CallTool(handoff, {})
    refused = _refused(parts, declines, prompt)
    if transcript.calls:
        return Say(summarize(transcript, [text for text, _ in refused], knowledge, None))
    if refused:
        return Say(decline_answer(refused, offer, knowledge))
    return Say(
        "I can't help with that in this setup: none of the connected services covers "
        "it. " + help_text(offer, knowledge)
    )
