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

from app.llm.offline_generic import generic_steps
from app.llm.offline_knowledge import OfflineKnowledge
from app.llm.offline_routing import Route, plan, routes_for
from app.llm.offline_summary import help_text, small_talk_reply, summarize
from app.llm.offline_transcript import CallTool, Decision, Offer, Say, Transcript
from connectors.offline_hints import Clause, Step, Turn

_GREETING = re.compile(
    r"^\s*(hi|hello|hey|yo|good (morning|afternoon|evening)|help|thanks|"
    r"thank you|what can you do|who are you)\b",
    re.I,
)
SELF = "(this agent)"  # the calling agent, when no connector's hints say who it is


def is_small_talk(prompt: str, routes: list[Route]) -> bool:
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


def decide(
    transcript: Transcript, offer: Offer, today: date, knowledge: OfflineKnowledge
) -> Decision:
    """The next move of whichever agent is calling: a tool call, a hand-off or the answer."""
    if not offer.tools:
        return _route(transcript, offer, knowledge)
    situation = Situation(transcript, offer, knowledge, today)
    own = situation.own_agent()
    described = [f"{tool.name} {tool.description}" for tool in offer.tools.values()]
    routes = routes_for(knowledge, offer, (own, described))
    parts = plan(transcript.prompt, routes, knowledge.catch_all)
    if not any(agent == own for agent, _ in parts):
        # Handed a request that is not ours (or a follow-up with no keywords): do our default.
        parts = [(own, transcript.prompt), *parts]
    progress = _next_step(situation, parts, own)
    if progress.decision is not None:
        return progress.decision
    for agent, _ in parts:
        if agent == own:
            continue
        tool = offer.handoff_for(agent)
        if tool and not _acted(transcript, agent, offer, knowledge):
            return CallTool(tool, {})
    return Say(summarize(transcript, progress.notes, knowledge, own))


def _route(transcript: Transcript, offer: Offer, knowledge: OfflineKnowledge) -> Decision:
    """The orchestrator: small talk answered directly, everything else handed off."""
    prompt = transcript.prompt
    routes = routes_for(knowledge, offer)
    if not prompt or is_small_talk(prompt, routes):
        return Say(small_talk_reply(prompt, offer, knowledge))
    fallback = knowledge.catch_all if knowledge.catch_all in offer.handoffs else None
    for agent, _ in plan(prompt, routes, fallback):
        handoff = offer.handoff_for(agent)
        if handoff:
            return CallTool(handoff, {})
    return Say(
        "I can't help with that in this setup: none of the connected services covers "
        "it. " + help_text(offer, knowledge)
    )
