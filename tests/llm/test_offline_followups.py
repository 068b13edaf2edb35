"""The offline model's follow-ups and titles, with the built-in connectors' real hints:
suggestions never offer what the turn just did, titles never end mid-phrase."""

from __future__ import annotations

import pytest

from app.llm.offline_followups import (
    TITLE_CHARS,
    TITLE_WORDS,
    just_done,
    offline_suggestions,
    offline_title,
)
from app.llm.offline_knowledge import OfflineKnowledge
from app.llm.suggest import clean_suggestions
from app.settings import Settings
from connectors.registry import load_connectors
from tests.connectors.test_offline_routing_table import TABLE

KNOWLEDGE = OfflineKnowledge.of(load_connectors(Settings()))
SUSHI_AND_EMAIL = "find sushi in Boston and email the list to bob@example.com"

# ----------------------------------------------------------------------------- suggestions


def test_the_email_just_sent_is_not_offered_again() -> None:
    offered_alone = offline_suggestions("find sushi in Boston", ["yelp_search_results"], KNOWLEDGE)
    assert "Email this list to bob@example.com" in offered_alone  # the filter is not blanket

    after = offline_suggestions(
        SUSHI_AND_EMAIL, ["yelp_search_results", "send_google_email"], KNOWLEDGE
    )
    assert after and "Email this list to bob@example.com" not in after
    assert "Show reviews for the top result" in after  # not done yet: still offered


@pytest.mark.parametrize(
    ("candidate", "prompt", "repeated"),
    [
        ("Email this list to bob@example.com", SUSHI_AND_EMAIL, True),
        ("Email this list to ana@example.com", SUSHI_AND_EMAIL, False),  # someone new
        ("Show reviews for the top result", SUSHI_AND_EMAIL, False),
        ("Show my sent emails", SUSHI_AND_EMAIL, False),  # another tool
        ("Search the web for python asyncio", "search the web for python asyncio", True),
        ("Look up python asyncio", "search the web for python asyncio", True),  # same query
        ("Search the web for rust async", "search the web for python asyncio", False),
        ("Tell me more about the first result", "search the web for python asyncio", False),
        ("Find cheap tacos instead", "find sushi in Boston", False),
        ("Find sushi in Boston", "find sushi in Boston", True),
        ("Show my transactions from last week", "show my transactions from last week", True),
        ("Show my transactions from last week", "show my transactions from last month", False),
        ("How much did I spend this month?", "show my coffee transactions", False),
        ("What's in my inbox?", "", False),
    ],
)
def test_what_counts_as_just_done(candidate: str, prompt: str, repeated: bool) -> None:
    assert just_done(candidate, prompt, KNOWLEDGE) is repeated


def test_a_search_is_not_suggested_again_after_it_ran() -> None:
    prompt = "search the web for python asyncio"
    offered = offline_suggestions(prompt, ["google_search_results"], KNOWLEDGE)
    assert offered and not any(just_done(option, prompt, KNOWLEDGE) for option in offered)
    # A real model's suggestions get the same filter.
    kept = clean_suggestions(
        ["Look up python asyncio", "Search the web for python asyncio", "Find asyncio tutorials"],
        prompt,
        KNOWLEDGE,
    )
    assert kept == ["Find asyncio tutorials"]


# ----------------------------------------------------------------------------- titles

# Words a title that reads complete cannot end on.
LEADS_ON = {
    "a", "an", "the", "my", "to", "on", "in", "at", "for", "from", "of", "with", "about", "and",
    "or", "but", "last", "this", "next", "past", "every", "that", "which", "by", "than",
}  # fmt: skip


@pytest.mark.parametrize(
    ("prompt", "title"),
    [
        ("what did I spend on coffee last month", "What did I spend on coffee"),
        ("Find sushi in Boston", "Find sushi in Boston"),
        (SUSHI_AND_EMAIL, "Find sushi in Boston"),
        ("  please, what's in my inbox?  ", "What's in my inbox"),
        ("show the last ten emails from the team", "Show the last ten emails"),
        ("email the list to my friend", "Email the list to my friend"),
        (
            "please can you show me my unread emails from the marketing team about the offsite",
            "Show me my unread emails",
        ),
        (
            "how much did I spend on groceries at Whole Foods this month",
            "How much did I spend on groceries",
        ),
        (
            "find me the very best and most wonderful sushi restaurants in the whole of Boston",
            "Find me the very best",
        ),
        ("thanks!", "Getting started"),
        ("", "New chat"),
        # No place where a phrase ends: the words that fit and an ellipsis, never a bare cut.
        (
            "supercalifragilistic expialidocious antidisestablishmentarianism words galore",
            "Supercalifragilistic expialidocious…",
        ),
    ],
)
def test_titles_from_a_table(prompt: str, title: str) -> None:
    assert offline_title(prompt, KNOWLEDGE) == title


@pytest.mark.parametrize(
    "prompt", sorted({row.prompt for rows in TABLE.values() for row in rows}) + [SUSHI_AND_EMAIL]
)
def test_no_everyday_title_ends_mid_phrase(prompt: str) -> None:
    title = offline_title(prompt, KNOWLEDGE)
    words = title.rstrip("…").split()
    assert words and len(words) <= TITLE_WORDS and len(title) <= TITLE_CHARS
    if title.endswith("…") or title in ("Getting started", "New chat"):
        return
    # A whole start of the prompt (its words, in order), cut only where a phrase begins.
    # French sets "?" apart ("ce mois-ci ?"): a mark alone is no word.
    lowered = [bare for word in prompt.split() if (bare := word.lower().strip(",.?!"))]
    start = lowered.index(words[0].lower().strip(",.?!"))
    assert [w.lower().strip(",.?!") for w in words] == lowered[start : start + len(words)]
    rest = lowered[start + len(words) :]
    if rest:  # cut: it must not end on a word that leads on ("on coffee last")
        assert words[-1].lower().strip(",.?!") not in LEADS_ON, title
    assert not rest or rest[0] in {
        "in", "on", "at", "for", "from", "with", "by", "about", "to", "of", "and", "or", "then",
        "that", "last", "this", "next", "past", "every", "each", "near", "around", "so", "but",
        "during", "before", "after", "since", "until", "which", "who", "where", "when", "while",
    }, title  # fmt: skip
