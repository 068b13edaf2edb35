"""What the offline demo model says to a request the demo cannot carry out ("transfer $500
to Bob", "book a table for two"): the connector's own "I can't" (its hints' ``declines``),
in the request's language, and, when nothing else was asked, what the demo can do
instead. Pure functions.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from app.llm.offline_knowledge import OfflineKnowledge
from app.llm.offline_language import ENGLISH, can_do, language_of
from app.llm.offline_transcript import Offer
from connectors.offline_hints import Decline


def declined(
    clauses: Iterable[str], declines: Sequence[Decline], prompt: str
) -> list[tuple[str, str]]:
    """(the "I can't" sentence, its language) for each declined clause, once each: in the
    language the clause asks in, the prompt's where it could be several."""
    guess = language_of(prompt)
    said: list[tuple[str, str]] = []
    for clause in clauses:
        for decline in declines:
            languages = decline.languages(clause)
            if languages:
                language = guess if guess in languages else languages[0]
                if (found := (decline.answer(language), language)) not in said:
                    said.append(found)
                break
    return said


def decline_answer(
    said: Sequence[tuple[str, str]], offer: Offer, knowledge: OfflineKnowledge
) -> str:
    """The whole answer to a request that asks only for what cannot be done: what cannot,
    then what can, in the request's language."""
    language = said[0][1] if said else ENGLISH
    capabilities = [knowledge.capability(agent, language) for agent in offer.handoffs]
    return " ".join([*(text for text, _ in said), can_do(capabilities, language)]).strip()
