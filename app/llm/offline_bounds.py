"""How much the offline demo model lets a tool call or an answer carry. Pure functions.

A prompt, or a tool result it quotes, can be any size; what the model reads out of it is
cut here, at a word, before it becomes a call or streams as an answer (issue 33: a pasted
essay became a 31,000-character search query and a 31,000-character answer).
"""

from __future__ import annotations

from typing import Any

from app.llm.offline_transcript import CallTool, Decision, Say
from connectors.offline_reading import clip

# A search is a few words; a few hundred characters is already a paragraph.
MAX_QUERY_CHARS = 200
# Any other text argument (an email's body built from results, a title): a page at most.
MAX_ARGUMENT_CHARS = 4000
# The answer: the model says a few sentences; this is a couple of paragraphs.
MAX_ANSWER_CHARS = 1500

# Arguments a tool searches with, by name.
_QUERIES = frozenset({"query", "q", "search", "term", "terms", "keyword", "keywords", "topic"})


def _bounded(value: Any, limit: int, ellipsis: str) -> Any:
    if isinstance(value, str):
        return clip(value, limit, ellipsis)
    if isinstance(value, list):
        return [_bounded(item, limit, ellipsis) for item in value]
    return value


def bounded(decision: Decision) -> Decision:
    """``decision`` with every text it carries cut to size at a word boundary."""
    if isinstance(decision, Say):
        return Say(clip(decision.text, MAX_ANSWER_CHARS))
    # A query is searched for as it is: its last whole words, no "…" to search for too.
    arguments = {
        name: _bounded(value, MAX_QUERY_CHARS, "")
        if name in _QUERIES
        else _bounded(value, MAX_ARGUMENT_CHARS, "…")
        for name, value in decision.arguments.items()
    }
    return CallTool(decision.name, arguments)
