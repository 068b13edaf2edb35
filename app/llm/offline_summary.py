"""The offline demo model's answer: a few sentences about this turn's tool results.

A connector's hints may word the sentence for its own calls; every other call gets a
generic one read from its output text: what was found (the listed items), what was done
(a write's result), or the gist of the text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from app.llm.offline_knowledge import OfflineKnowledge
from app.llm.offline_language import ENGLISH, listed
from app.llm.offline_transcript import Offer, Transcript
from connectors.offline_hints import PastCall
from connectors.offline_reading import (
    NOT_CONNECTED,
    clip,
    items_of,
    names_of,
    parse_json,
    plural,
    unfenced,
)

# Verbs that only read: their results are "found", the others' "done".
_READS = frozenset(
    "get list find search show fetch read lookup look query check count resolve describe".split()
)
_PAST = {"send": "sent", "make": "made", "set": "set", "put": "put", "pay": "paid", "run": "ran"}


def _past(verb: str) -> str:
    if verb in _PAST:
        return _PAST[verb]
    return verb + "d" if verb.endswith("e") else verb + "ed"


def _noun(tool: str) -> str:
    """What a tool returns, from its name: list_issues → "issue"."""
    words = [word for word in tool.split("_") if word not in _READS and word not in {"at", "by"}]
    noun = words[0] if words else "result"
    if noun.endswith("ies"):
        return noun[:-3] + "y"
    return noun[:-1] if noun.endswith("s") and not noun.endswith("ss") else noun


def _fields(data: dict[str, object], limit: int = 4) -> str:
    shown = [
        f"{key.replace('_', ' ')} {value}"
        for key, value in data.items()
        if isinstance(value, str | int | float) and not isinstance(value, bool) and value != ""
    ]
    return ", ".join(shown[:limit])


def generic_sentence(call: PastCall) -> str:
    """What a call found or did, from its output text, for a tool nobody described."""
    output = call.output or ""
    verb = call.name.split("_")[0]
    reading = verb in _READS
    items = items_of(output)
    if reading and items:
        noun = _noun(call.name)
        return f"I found {plural(len(items), noun)}: {names_of(items)}."
    data = parse_json(output)
    if isinstance(data, dict) and isinstance(data.get("response"), dict):
        data = data["response"]
    if isinstance(data, dict):
        gist = _fields(data)
    else:  # an empty JSON list says nothing; text says what it says
        gist = "" if isinstance(data, list) else _first_sentences(output)
    if reading:
        return f"Here's what I found: {gist}." if gist else "I didn't find anything."
    rest = " ".join(call.name.split("_")[1:]) or "that"
    done = f"I {_past(verb)} the {rest}"
    return f"{done}: {gist}." if gist else f"{done}."


def _first_sentences(text: str, words: int = 40) -> str:
    flat = " ".join(unfenced(text).split())
    return clip(flat, 240) if len(flat.split()) > words else flat.rstrip(".")


def _not_run_sentence(call: PastCall) -> str:
    words = call.name.split("_")
    what = " ".join([words[0], "the", *words[1:]]) if len(words) > 1 else call.name
    if "in time" in (call.output or ""):
        return f"I didn't {what}: the approval request expired, so nothing was done."
    said = re.search(r'They said: "(.*)"', call.output or "")
    because = f" (you said: “{said.group(1)}”)" if said else ""
    return f"OK, I didn't {what}: you declined it{because}, so nothing was done."


def _fed_a_later_call(call: PastCall, calls: Sequence[PastCall]) -> bool:
    """A lookup: an id-like value it returned is an argument of a later call."""
    later = calls[calls.index(call) + 1 :]
    output = call.output or ""
    for other in later:
        for value in other.arguments.values():
            token = str(value)
            if isinstance(value, str | int) and 0 < len(token) <= 64 and " " not in token:
                if re.search(rf"(?<![\w-]){re.escape(token)}(?![\w-])", output):
                    return True
    return False


class Summarizer:
    def __init__(self, knowledge: OfflineKnowledge, own_agent: str | None) -> None:
        self._knowledge = knowledge
        self._own = own_agent

    def _owner(self, tool: str) -> str | None:
        return self._knowledge.owner(tool) or self._own

    def sentence(self, call: PastCall, calls: Sequence[PastCall]) -> str:
        output = call.output or ""
        if call.failed:
            message = output.strip().removeprefix("Error:").strip() or "it failed"
            return f"I couldn't complete that step: {message.rstrip('.')}."
        if output.startswith(NOT_CONNECTED):
            # A "Connect" card was shown: say so, rather than reporting an empty result.
            return (
                "I need access to that account first: use the **Connect** button on the "
                "card above, then ask me again."
            )
        hints = self._knowledge.hints(self._owner(call.name))
        if hints.summary is not None:
            said = hints.summary(call)
            if said is not None:
                return said
        if call.not_run:
            return _not_run_sentence(call)
        if hints.tool(call.name).hidden or _fed_a_later_call(call, calls):
            return ""  # a lookup: the call it fed tells the story
        return generic_sentence(call)

    def follow_up(self, call: PastCall | None) -> str:
        if call is None or call.failed:
            return "Want me to try something else?"
        if call.not_run:
            return "Want me to change something and try again?"
        if (call.output or "").startswith(NOT_CONNECTED):
            return ""  # its sentence already says what to do: connect, then ask again
        hints = self._knowledge.hints(self._owner(call.name))
        return (
            hints.tool(call.name).follow_up or hints.follow_up or "Anything else I can help with?"
        )

    def summarize(self, transcript: Transcript, notes: Sequence[str]) -> str:
        """~30-60 words of markdown about this turn's tool results."""
        calls = [call for call in transcript.calls if not call.is_handoff]
        sentences = [said for call in calls if (said := self.sentence(call, calls))]
        sentences.extend(notes)
        if not sentences:
            return "I couldn't find anything to act on there. Could you tell me a bit more?"
        text = " ".join(sentences)
        if len(text.split()) < 30 and (follow_up := self.follow_up(calls[-1] if calls else None)):
            text += " " + follow_up
        return text


def summarize(
    transcript: Transcript,
    notes: Sequence[str],
    knowledge: OfflineKnowledge,
    own_agent: str | None = None,
) -> str:
    return Summarizer(knowledge, own_agent).summarize(transcript, notes)


def help_text(offer: Offer, knowledge: OfflineKnowledge) -> str:
    can = listed([knowledge.capability(agent, ENGLISH) for agent in offer.handoffs])
    example = _example(offer, knowledge)
    return (
        f"Hi! I'm Switchboard, running on the offline demo model with demo data, so "
        f"nothing real is touched. I can {can or 'chat'}."
        + (f" Try “{example}”." if example else "")
    )


def _example(offer: Offer, knowledge: OfflineKnowledge) -> str:
    for agent in offer.handoffs:
        examples = knowledge.hints(agent).examples
        if examples:
            text = str(examples[0]).rstrip("?.!")
            return text[0].lower() + text[1:]
    return ""


def small_talk_reply(prompt: str, offer: Offer, knowledge: OfflineKnowledge) -> str:
    if re.match(r"^\s*(thanks|thank you)\b", prompt, re.I):
        return "You're welcome! Anything else I can look up, send or find for you?"
    return help_text(offer, knowledge)
