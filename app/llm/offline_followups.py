"""What the offline demo model offers after a turn: follow-up prompts that never repeat what
the turn just did, and a chat title that never ends mid-phrase. Pure functions over the
prompt and the connectors' offline hints (no connector is named here)."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from datetime import UTC, date, datetime
from typing import Any

from app.llm.offline_knowledge import NO_KNOWLEDGE, OfflineKnowledge
from app.llm.offline_planner import is_small_talk
from app.llm.offline_routing import (
    COMMON_VERBS,
    STOP_WORDS,
    first_clause,
    plan,
    routes_for,
    words_of,
)
from connectors.offline_hints import Clause, Turn

MAX_SUGGESTIONS = 4

# ----------------------------------------------------------------------------- suggestions


Action = tuple[str, str]  # (agent, tool); tool "" for an agent that plans nothing itself
_FREE_TEXT_CHARS = 60  # longer strings (an email's body) are wording, not what is asked


def _actions(
    text: str, knowledge: OfflineKnowledge, today: date
) -> dict[Action, dict[str, Any] | None]:
    """What each part of ``text`` would do (on ``today``): the tool its answer rests on (the
    connector planner's last step) and the arguments it would read from ``text`` alone
    (None when they depend on earlier results)."""
    found: dict[Action, dict[str, Any] | None] = {}
    for agent, clause in plan(text, routes_for(knowledge, None), knowledge.catch_all):
        planner = knowledge.hints(agent).planner
        steps = planner(Clause(clause, text, today)) if planner is not None else []
        if not steps:
            found[(agent, "")] = None
            continue
        arguments = steps[-1].build(Turn(text, ()))
        found[(agent, steps[-1].name)] = (
            None
            if arguments is None
            else {
                key: value
                for key, value in arguments.items()
                if not (isinstance(value, str) and ("\n" in value or len(value) > _FREE_TEXT_CHARS))
            }
        )
    return found


def _content(text: str) -> set[str]:
    # Time words count here: "last week" after "last month" is a new request.
    return {word for _, word in words_of(text, STOP_WORDS | COMMON_VERBS)}


# Cached: every turn checks the same few hint texts, and planning them was most of the
# suggestions' time (the result is only read).
@functools.lru_cache(maxsize=256)
def _candidate_actions(
    text: str, knowledge: OfflineKnowledge, today: date
) -> dict[Action, dict[str, Any] | None]:
    return _actions(text, knowledge, today)


def just_done(candidate: str, prompt: str, knowledge: OfflineKnowledge = NO_KNOWLEDGE) -> bool:
    """Whether ``candidate`` asks again for what ``prompt`` already did: the same tools, with
    the same arguments or nothing the prompt did not already say ("Email this list to
    bob@example.com" after "find sushi in Boston and email the list to bob@example.com";
    "Look up python asyncio" after "search the web for python asyncio")."""
    today = datetime.now(UTC).date()
    return _repeats(candidate, prompt, knowledge, today, lambda: _actions(prompt, knowledge, today))


def _repeats(
    candidate: str,
    prompt: str,
    knowledge: OfflineKnowledge,
    today: date,
    done_by_prompt: Callable[[], dict[Action, dict[str, Any] | None]],
) -> bool:
    if " ".join(candidate.split()).casefold() == " ".join(prompt.split()).casefold():
        return True
    if not prompt.strip():
        return False
    wanted = _candidate_actions(candidate, knowledge, today)
    if not wanted:
        return False
    done = done_by_prompt()
    if not set(wanted) <= set(done):
        return False
    same_arguments = all(
        arguments is not None and arguments == done[action] for action, arguments in wanted.items()
    )
    return same_arguments or _content(candidate) <= _content(prompt)


def offline_suggestions(
    prompt: str, response_types: list[str], knowledge: OfflineKnowledge = NO_KNOWLEDGE
) -> list[str]:
    """0-4 short follow-up prompts, from what the turn showed (deterministic): the ones
    the connectors' hints give for those cards, or their starters after small talk; never
    one that repeats what the turn just did."""
    picked: list[str] = []
    sources = [knowledge.suggestions_for(kind) for kind in reversed(response_types)]
    if not any(sources) and (
        not prompt.strip() or is_small_talk(prompt, routes_for(knowledge, None))
    ):
        sources = [knowledge.starters]
    today = datetime.now(UTC).date()
    done = functools.cache(lambda: _actions(prompt, knowledge, today))  # once, if ever needed
    for options in sources:
        for option in options:
            if option not in picked and not _repeats(option, prompt, knowledge, today, done):
                picked.append(option)
    return picked[:MAX_SUGGESTIONS]


# ----------------------------------------------------------------------------- titles

_TITLE_FILLER = re.compile(r"^(please|can you|could you|would you|hey|hi|ok|okay)[, ]+", re.I)
TITLE_WORDS = 7
TITLE_CHARS = 48
# Words a title must not end on: they lead into something ("and my", "on coffee last").
_DANGLING = frozenset(
    """a an and the my your our their his her its of to in on at for from with by about or but
    then also me us last this next past every each very most more some any that which who
    where when whose is are was were be do does did have has had will would can could should
    i into onto over under near around than via so if as""".split()
)
# Words that open a phrase: a cut just before one leaves the phrases before it whole.
_PHRASE_START = frozenset(
    """in on at for from with by about to of into over under near around and or but then that
    which who where when while before after since until during last this next past every
    each because so if than via including like without""".split()
)


def _bare(word: str) -> str:
    return word.lower().strip(",;:.!?\"'“”()")


def _fits(words: list[str]) -> bool:
    return len(words) <= TITLE_WORDS and len(" ".join(words)) <= TITLE_CHARS


def shorten(text: str) -> str:
    """``text`` if it fits a title, else its longest start that ends where a phrase does
    ("What did I spend on coffee" of "… on coffee last month in Boston"); with no such
    place, the words that fit and an ellipsis, so it does not read as whole."""
    words = text.split()
    if _fits(words):
        return text
    for end in range(len(words) - 1, 1, -1):
        head = words[:end]
        if _fits(head) and _bare(words[end]) in _PHRASE_START and _bare(head[-1]) not in _DANGLING:
            return " ".join(head).rstrip(",;:")
    head = words[:TITLE_WORDS]
    while len(" ".join(head)) > TITLE_CHARS - 1 and len(head) > 1:
        head.pop()
    while len(head) > 1 and _bare(head[-1]) in _DANGLING:
        head.pop()
    clipped = " ".join(head)[: TITLE_CHARS - 1].rstrip(",;:")
    return clipped + "…"


def offline_title(prompt: str, knowledge: OfflineKnowledge = NO_KNOWLEDGE) -> str:
    """A short chat title from the first prompt ("Find sushi in Boston")."""
    text = " ".join(prompt.split())
    while (stripped := _TITLE_FILLER.sub("", text)) != text:
        text = stripped
    text = text.strip(" ?!.")
    if not text:
        return "New chat"
    if is_small_talk(prompt, routes_for(knowledge, None)):
        return "Getting started"
    clause = first_clause(text, knowledge) if len(text) > TITLE_CHARS else text
    title = shorten(clause.strip(" ?!.,;:"))
    return title[0].upper() + title[1:]
