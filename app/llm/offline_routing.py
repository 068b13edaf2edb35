"""Which agent each part of a request is for: word overlap with what each agent says it
does (its hand-off description, its tools) and the examples its connector declares, plus
the keywords a connector's hints name. Pure functions."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from app.llm.offline_knowledge import OfflineKnowledge
from app.llm.offline_language import FUNCTION_WORDS_ABROAD
from app.llm.offline_transcript import Offer
from connectors.offline_hints import Decline

# Words that say nothing about which service is meant.
_ENGLISH_STOP_WORDS = frozenset(
    """a an the and or but of to in on at for from with by about into over under up out
    i me my mine we us our you your it its this that these those them they their he she his
    her is are was were be been being do does did done have has had can could would should
    will shall may might must what which who whom whose when where why how please hey hi ok
    okay there here then also just more most very much many than too not no yes so if as
    some any all each every one other another user users via e g etc""".split()
)
STOP_WORDS = _ENGLISH_STOP_WORDS | FUNCTION_WORDS_ABROAD
# Verbs every service uses: they pick a tool within a service, not the service.
COMMON_VERBS = frozenset(
    "show find get give tell list let make see look want need like ask use check".split()
)
# A clause routes somewhere only with at least this much evidence.
MIN_SCORE = 0.5
STRONG = 2.0  # a keyword of the connector's hints, or the agent named outright
EARLIEST = 1.0  # for the strong match that comes first ("spend on food": the spending)

_WORD = re.compile(r"[^\W\d_][\w'-]*")  # letters of any language: "dépensé" is one word


def stem(word: str) -> str:
    """A crude English stem: "issues" → "issue", "searches" → "search", "spent" stays."""
    word = word.lower().strip("'-")
    if word.endswith("'s"):
        word = word[:-2]
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("ches", "shes", "sses", "xes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    if len(word) > 5 and word.endswith("ing"):
        return word[:-3]
    if len(word) > 4 and word.endswith("ed"):
        return word[:-2] if not word.endswith("eed") else word
    return word


def words_of(text: str, stop: frozenset[str] = STOP_WORDS) -> list[tuple[int, str]]:
    """(position, stem) of each telling word of ``text``."""
    found = []
    for match in _WORD.finditer(text.replace("_", " ")):
        lowered = match.group(0).lower()
        if lowered in stop:
            continue
        found.append((match.start(), stem(lowered)))
    return found


def vocabulary(*texts: str) -> frozenset[str]:
    return frozenset(word for text in texts for _, word in words_of(text, ROUTING_STOP))


# "What's the weather like": a stop word with its 's says no more about the service.
CONTRACTIONS = frozenset(
    f"{word}'s" for word in ("what", "it", "that", "there", "here", "who", "where", "how", "let")
)
# Words that say when, not what: "open now" in one connector's example must not pull
# "what time is it in Tokyo right now" to it.
TIME_WORDS = frozenset(
    """now today tonight tomorrow yesterday week weeks month months year years day days last
    past next recent recently latest right morning afternoon evening
    mois semaine jour jours an année aujourd hier demain dernier dernière ci
    mes semana día días año hoy ayer mañana pasado pasada
    monat woche tag tage jahr heute gestern morgen letzten letzte diesen""".split()
)
ROUTING_STOP = STOP_WORDS | COMMON_VERBS | CONTRACTIONS | TIME_WORDS


@dataclass(frozen=True)
class Route:
    agent: str
    words: frozenset[str]
    keywords: re.Pattern[str] | None = None


# In an example prompt, the sample values ("in Boston", "titled 'Login fails'",
# bob@example.com) are not what the connector is about: only its other words count.
_SAMPLE_VALUES = re.compile(r"\"[^\"]*\"|'[^']*'(?!\w)|\S+@\S+|(?<=\s)[A-Z][\w'-]*")


def _hint_texts(knowledge: OfflineKnowledge, agent: str) -> list[str]:
    hints = knowledge.hints(agent)
    examples = [*hints.examples, *(e for tool in hints.tools.values() for e in tool.examples)]
    return [_SAMPLE_VALUES.sub(" ", example) for example in examples]


# Cached: the same few agents are routed to on every model call of every turn, and their
# vocabulary (stemming every hint) was most of the offline model's time.
@functools.lru_cache(maxsize=1024)
def route_of(knowledge: OfflineKnowledge, agent: str, *described: str) -> Route:
    words = vocabulary(agent, *described, *_hint_texts(knowledge, agent))
    return Route(agent, words, knowledge.hints(agent).keywords)


def routes_for(
    knowledge: OfflineKnowledge, offer: Offer | None, own: tuple[str, list[str]] | None = None
) -> list[Route]:
    """The agents a request can go to: ``own`` (the calling agent, described by its tools)
    first, then its hand-offs (described by their tools), else every agent with hints."""
    routes = []
    if own is not None:
        routes.append(route_of(knowledge, own[0], *own[1]))
    if offer is None:
        return routes + [route_of(knowledge, agent) for agent in knowledge.agents]
    return routes + [
        route_of(knowledge, handoff.agent, handoff.description)
        for handoff in offer.handoffs.values()
    ]


def _mentions(agent: str, text: str) -> re.Match[str] | None:
    return re.search(rf"(?<![\w-]){re.escape(agent)}(?![\w-])", text, re.I) if agent else None


def route_text(text: str, routes: Sequence[Route]) -> str | None:
    """The agent ``text`` is for, or None when nothing points anywhere."""
    if not routes:
        return None
    tokens = words_of(text, ROUTING_STOP)
    document_frequency: dict[str, int] = {}
    for route in routes:
        for word in route.words:
            document_frequency[word] = document_frequency.get(word, 0) + 1
    scored: list[tuple[float, int, int, str]] = []  # score, -position, -order, agent
    strong_at: dict[str, int] = {}
    strong_spans: list[tuple[int, int, str]] = []
    for order, route in enumerate(routes):
        score, position = 0.0, len(text)
        for word in {word for _, word in tokens if word in route.words}:
            score += 1.0 / document_frequency[word]
        for at, word in tokens:
            if word in route.words:
                position = min(position, at)
                break
        for match in (route.keywords.search(text) if route.keywords else None,) + (
            _mentions(route.agent, text),
        ):
            if match is not None:
                score += STRONG
                strong_at[route.agent] = min(strong_at.get(route.agent, len(text)), match.start())
                strong_spans.append((match.start(), match.end(), route.agent))
                position = min(position, match.start())
        scored.append((score, -position, -order, route.agent))
    if strong_at:
        first = _head(min(strong_at, key=lambda agent: strong_at[agent]), strong_spans, text)
        scored = [
            (score + EARLIEST if agent == first else score, at, order, agent)
            for score, at, order, agent in scored
        ]
    best = max(scored)
    return best[3] if best[0] >= MIN_SCORE else None


# What comes before a word that describes the noun after it ("show my coffee transactions",
# "für Restaurants ausgegeben").
_LEADS_A_NOUN = (
    frozenset(
        """my our your his her their the a an all any some these those recent latest last
        this show list find get give see view display pull check of for""".split()
    )
    | FUNCTION_WORDS_ABROAD
)


def _head(first: str, spans: list[tuple[int, int, str]], text: str) -> str:
    """The agent whose strong word heads the phrase ``first``'s starts: in "coffee
    transactions" the coffee only says which transactions, so the bank's word leads."""
    begin, end = min((start, stop) for start, stop, agent in spans if agent == first)
    if not text[begin:end].isalpha():
        return first  # a phrase ("how do I make"), not one word describing the next
    before = text[:begin].split()
    if before and before[-1].lower() not in _LEADS_A_NOUN:
        return first  # "have I spent eating out": a verb, not a word describing a noun
    for start, _, agent in sorted(spans):
        if agent != first and start >= end and not text[end:start].strip():
            return agent
    return first


# ----------------------------------------------------------------------------- clauses

# Clause boundaries: "and", "also", ", then", sentence ends. Captured, so merged clauses
# keep their original wording ("saying see you then" stays whole).
_SPLIT = re.compile(
    r"(\s*(?:,?\s*\b(?:and then|and also|also|plus|and)\b|,\s*then\b|[;!?]|"
    r"\.(?=\s|$))\s*)",
    re.I,
)
_LEADING_JOINER = re.compile(r"^(?:then|and|also|so|plus)\b[\s,]*", re.I)
# Quoted text is one piece: "titled 'Login and signup fail'" is not two requests.
_QUOTED = re.compile(r"\"[^\"]+\"|“[^”]+”|(?<![\w])'[^']+'(?![\w])")


def _pieces(prompt: str) -> list[str]:
    quoted: list[str] = []

    def hold(match: re.Match[str]) -> str:
        quoted.append(match.group(0))
        return f"\x00{len(quoted) - 1}\x00"

    held = _QUOTED.sub(hold, prompt)
    return [
        re.sub(r"\x00(\d+)\x00", lambda m: quoted[int(m.group(1))], piece)
        for piece in _SPLIT.split(held)
    ]


# The agent of a part no agent may have: it asks for what a standing decline says the
# demo cannot do (``standing``).
DECLINED = "(declined)"


@functools.lru_cache(maxsize=256)
def _words_about(text: str) -> frozenset[str]:
    return vocabulary(text)


def standing(knowledge: OfflineKnowledge, routes: Sequence[Route]) -> tuple[Decline, ...]:
    """The connectors' declines that hold here: those no other agent's words claim (with a
    weather connector beside it, web search's "no live weather" stands aside)."""
    return tuple(
        decline
        for owner, decline in knowledge.declines
        if not any(
            route.agent != owner and _words_about(decline.about) & route.words for route in routes
        )
    )


def plan(
    prompt: str,
    routes: Sequence[Route],
    fallback: str | None,
    declines: Sequence[Decline] = (),
) -> list[tuple[str, str]]:
    """The request as ordered (agent, clause) parts; neighbouring parts of one agent merge.
    A request nobody claims goes to ``fallback`` (a catch-all such as web search); a
    clause that asks for what one of ``declines`` says cannot be done is ``DECLINED``."""
    pieces = _pieces(prompt)
    parts: list[list[str]] = []  # [agent, text]
    pending = ""  # leading text with no agent joins the first clause that has one
    separator = ""
    for index, piece in enumerate(pieces):
        if index % 2:  # a captured separator
            separator = piece
            continue
        clause = _LEADING_JOINER.sub("", piece.strip())
        if not clause:
            continue
        agent = route_text(clause, routes)
        if any(decline.languages(clause) for decline in declines):
            agent = DECLINED
        if agent is None or (parts and parts[-1][0] == agent != DECLINED):
            if parts:
                parts[-1][1] += separator + clause
            else:
                pending += (separator if pending else "") + clause
        else:
            # Leading text with no agent keeps the words that joined it to this clause.
            parts.append([agent, (pending + separator + clause) if pending else clause])
            pending = ""
    if not parts:
        return [(fallback, prompt.strip())] if fallback else []
    return [(agent, text.strip()) for agent, text in parts]


def first_clause(prompt: str, knowledge: OfflineKnowledge) -> str:
    """The first part of a request (for a chat title), as the orchestrator would split it."""
    parts = plan(prompt, routes_for(knowledge, None), knowledge.catch_all)
    return parts[0][1] if parts else prompt


def agents_in(parts: Iterable[tuple[str, str]]) -> list[str]:
    return [agent for agent, _ in parts]
