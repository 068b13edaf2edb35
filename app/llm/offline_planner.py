"""What the offline demo model decides to do: pure functions over the model's input.

The model sees only what a real model sees: the conversation items (user prompt, earlier
function calls and their text outputs) and the tools and hand-offs it is offered. From
those it works out which agent it is acting as, which tool step comes next, whom to hand
off to, and finally a short summary of this turn's tool results.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date

from app.llm.offline_steps import generic_arguments, steps_for
from app.llm.offline_summary import help_text, small_talk_reply, summarize
from app.llm.offline_transcript import (
    TOOL_ROLE,
    CallTool,
    Decision,
    Offer,
    Say,
    Transcript,
)

# ----------------------------------------------------------------------------- routing

_ROLE_PATTERNS: dict[str, re.Pattern[str]] = {
    "gmail": re.compile(
        r"\b(e-?mails?|inbox|gmail|mail|unread|reply|replies|send|sent|"
        r"messages?|compose)\b",
        re.I,
    ),
    "plaid": re.compile(
        r"\b(balances?|spen[dt]|spending|transactions?|bank(?:ing)?|accounts?|"
        r"budget|money|purchases?|charges?|income|paycheck|savings|checking|"
        r"credit card)\b",
        re.I,
    ),
    "yelp": re.compile(
        r"\b(restaurants?|food|eat|eating|dinner|lunch|breakfast|brunch|sushi|"
        r"pizza|coffee|caf[eé]s?|tacos?|mexican|burgers?|ramen|thai|italian|"
        r"bbq|barbecue|bakery|bakeries|near me|nearby|near|yelp|reviews?)\b",
        re.I,
    ),
    "search": re.compile(
        r"\b(search the web|web|google|internet|online|look up|wikipedia|"
        r"news)\b",
        re.I,
    ),
}
# Clause boundaries: "and", "also", ", then", sentence ends. Captured, so merged clauses
# keep their original wording ("saying see you then" stays whole).
_SPLIT = re.compile(
    r"(\s*(?:,?\s*\b(?:and then|and also|also|plus|and)\b|,\s*then\b|[;!?]|"
    r"\.(?=\s|$))\s*)",
    re.I,
)
_LEADING_JOINER = re.compile(r"^(?:then|and|also|so|plus)\b[\s,]*", re.I)
_GREETING = re.compile(
    r"^\s*(hi|hello|hey|yo|good (morning|afternoon|evening)|help|thanks|"
    r"thank you|what can you do|who are you)\b",
    re.I,
)


def role_of(text: str) -> str | None:
    """The connector a piece of text is about: the earliest keyword wins."""
    best: tuple[int, str] | None = None
    for role, pattern in _ROLE_PATTERNS.items():
        match = pattern.search(text)
        if match and (best is None or match.start() < best[0]):
            best = (match.start(), role)
    return best[1] if best else None


def plan(prompt: str) -> list[tuple[str, str]]:
    """The request as ordered (role, clause) parts; neighbouring parts of one role merge."""
    pieces = _SPLIT.split(prompt)
    parts: list[list[str]] = []  # [role, text]
    pending = ""  # leading text with no role joins the first clause that has one
    separator = ""
    for index, piece in enumerate(pieces):
        if index % 2:  # a captured separator
            separator = piece
            continue
        clause = _LEADING_JOINER.sub("", piece.strip())
        if not clause:
            continue
        role = role_of(clause)
        if role is None or (parts and parts[-1][0] == role):
            if parts:
                parts[-1][1] += separator + clause
            else:
                pending += clause + separator
        else:
            parts.append([role, (pending + clause).strip()])
            pending = ""
    if not parts:
        return [("search", prompt.strip())]
    return [(role, text.strip()) for role, text in parts]


def is_small_talk(prompt: str) -> bool:
    return bool(_GREETING.match(prompt)) and role_of(prompt) is None


# ----------------------------------------------------------------------------- deciding


@dataclass
class Progress:
    decision: Decision | None = None
    notes: list[str] = field(default_factory=list)


def _next_step(
    transcript: Transcript, parts: list[tuple[str, str]], own: list[str], today: date
) -> Progress:
    # The steps already taken this turn are matched, in order, against this agent's calls,
    # so each model call resumes exactly where the turn is.
    progress = Progress()
    done = [call for call in transcript.calls if TOOL_ROLE.get(call.name) in own]
    cursor = 0
    for role, clause in parts:
        if role not in own:
            continue
        for step in steps_for(role, clause, transcript.prompt, today):
            if cursor < len(done) and done[cursor].name == step.name:
                cursor += 1
                continue
            arguments = step.build(transcript)
            if arguments is None:
                if step.skip_note:
                    progress.notes.append(step.skip_note)
                continue
            progress.decision = CallTool(step.name, arguments)
            return progress
    return progress


def _acted(transcript: Transcript, role: str, agent: str) -> bool:
    return any(
        TOOL_ROLE.get(call.name) == role or call.name == f"transfer_to_{agent.lower()}"
        for call in transcript.calls
    )


def decide(transcript: Transcript, offer: Offer, today: date) -> Decision:
    """The next move of whichever agent is calling: a tool call, a hand-off or the answer."""
    own = offer.roles
    if not own and not offer.tools:
        return _route(transcript, offer)
    if not own:
        return _plugin_move(transcript, offer)
    parts = plan(transcript.prompt)
    if not any(role in own for role, _ in parts):
        # Handed a request that is not ours (or a follow-up with no keywords): do our default.
        parts = [(own[0], transcript.prompt), *parts]
    progress = _next_step(transcript, parts, own, today)
    if progress.decision is not None:
        return progress.decision
    for role, _ in parts:
        if role in own:
            continue
        agent = _agent_for(role)
        tool = offer.handoff_for(agent)
        if tool and not _acted(transcript, role, agent):
            return CallTool(tool, {})
    return Say(summarize(transcript, progress.notes))


ROLE_AGENT = {"gmail": "GMail", "plaid": "Plaid", "yelp": "Yelp", "search": "Search"}
KNOWN_AGENTS = frozenset({*ROLE_AGENT.values(), "Switchboard"})


def _agent_for(role: str) -> str:
    return ROLE_AGENT.get(role, role)


def _route(transcript: Transcript, offer: Offer) -> Decision:
    """The orchestrator: small talk answered directly, everything else handed off."""
    prompt = transcript.prompt
    for agent, tool in offer.handoffs.items():
        # A plug-in agent the user names ("ask Weather …") gets the request.
        if agent not in KNOWN_AGENTS and re.search(rf"\b{re.escape(agent)}\b", prompt, re.I):
            return CallTool(tool, {})
    if is_small_talk(prompt) or not prompt:
        return Say(small_talk_reply(prompt, offer))
    for role, _ in plan(prompt):
        handoff = offer.handoff_for(_agent_for(role))
        if handoff:
            return CallTool(handoff, {})
    return Say(
        "I can't help with that in this setup: none of the connected services covers "
        "it. " + help_text(offer)
    )


def _plugin_move(transcript: Transcript, offer: Offer) -> Decision:
    if any(call.name in offer.tools for call in transcript.calls):
        return Say(summarize(transcript, []))
    name, schema = next(iter(offer.tools.items()))
    return CallTool(name, generic_arguments(schema, transcript.prompt))
