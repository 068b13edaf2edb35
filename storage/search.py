"""Full-text search over one user's chats: titles, prompts and final answers.

The texts live in ``chat_search`` (written by database triggers, migration 0006); the
index is the engine's own: SQLite FTS5 (``chat_search_fts``, porter stemming, no word
positions since migration 0012: no query here needs a phrase or a ranking) or
PostgreSQL's ``to_tsvector('english', body)`` under a GIN index. A query is reduced to
its words, each matched as a prefix ("coff" finds "coffee"), all of them required.
Results are whole chats, ordered and paged exactly like ``ChatRepository.list``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import ColumnElement, Select, bindparam, func, literal_column, select, table, tuple_

from storage.chats import MAX_PAGE, decode_cursor, encode_cursor, has_prompt
from storage.engine import Database
from storage.models import chat_search, chats
from storage.records import ChatRecord, chat_from_row

MAX_QUERY_CHARS = 200
MAX_TERMS = 12
SNIPPET_CHARS = 160
# Letters and digits of any script (\w without "_", which both engines' tokenizers treat
# as a separator). Only these reach the engines' query syntax, so no input can inject an
# operator.
WORD = re.compile(r"[^\W_]+")

# Engine-specific search objects that storage.models does not describe (an FTS5 table and
# its shadow tables; an expression index): the schema comparison leaves them out.
MARKUP = re.compile(r"\*\*|__|`+|^#+ |^> ", re.MULTILINE)

# SQLite's unicode61 tokenizer (Unicode 6.1 tables) splits words at these characters, which
# later Unicode made letters (New Tai Lue vowel signs, two Vedic signs): a term holding one
# is several words in the index, and an index without positions (migration 0012) cannot
# match them as a phrase, so each is matched as a word of its own (all still required).
FTS_SEPARATORS = re.compile("[\u19b0-\u19c0\u19c8\u19c9\u1cf2\u1cf3]+")

ENGINE_SPECIFIC_TABLES = re.compile(r"^chat_search_fts(_\w+)?$")
ENGINE_SPECIFIC_INDEXES = frozenset({"ix_chat_search_body"})

MatchKind = Literal["title", "prompt", "answer"]


class BadQuery(ValueError):
    """A search query that cannot run: empty, too long, or without a single word."""


@dataclass(frozen=True)
class SearchHit:
    chat: ChatRecord
    kind: MatchKind  # where the snippet comes from
    snippet: str


def search_terms(query: str) -> list[str]:
    """The words of ``query``, lower-cased and de-duplicated; ``BadQuery`` if none."""
    text = query.strip()
    if not text:
        raise BadQuery("q is empty; pass a word or two to search for")
    if len(text) > MAX_QUERY_CHARS:
        raise BadQuery(f"q is longer than {MAX_QUERY_CHARS} characters")
    terms = list(dict.fromkeys(word.lower() for word in WORD.findall(text)))
    if not terms:
        raise BadQuery("q has no letters or digits to search for")
    if len(terms) > MAX_TERMS:
        raise BadQuery(f"q has more than {MAX_TERMS} words")
    return terms


def matching_texts(dialect: str, terms: Sequence[str]) -> ColumnElement[bool]:
    """The condition on ``chat_search`` rows whose body holds every term (as a prefix)."""
    if dialect == "sqlite":
        # FTS5 query syntax: "word"* is a prefix term; juxtaposed terms are ANDed.
        # A term the tokenizer splits is matched word by word (FTS_SEPARATORS).
        words = [
            word
            for term in terms
            for word in ([piece for piece in FTS_SEPARATORS.split(term) if piece] or [term])
        ]
        fts_query = " ".join(f'"{word}"*' for word in words)
        fts = table("chat_search_fts")
        rowids: Select[Any] = (
            select(literal_column("rowid"))
            .select_from(fts)
            .where(literal_column("chat_search_fts").op("MATCH")(bindparam("fts_q", fts_query)))
        )
        return chat_search.c.id.in_(rowids)
    # tsquery syntax: word:* is a prefix term; & ANDs. The expression is the index's own.
    ts_query = " & ".join(f"{term}:*" for term in terms)
    english: ColumnElement[Any] = literal_column("'english'::regconfig")
    vector = func.to_tsvector(english, chat_search.c.body)
    return vector.op("@@")(func.to_tsquery(english, bindparam("ts_q", ts_query)))


async def search_chats(
    db: Database, user_id: str, query: str, limit: int = 50, cursor: str | None = None
) -> tuple[list[SearchHit], str | None]:
    """The user's chats with a title, prompt or answer matching ``query``, most recently
    active first, a page at a time (the cursor is ``ChatRepository.list``'s kind).

    Raises ``BadQuery`` for an unusable query and ``ValueError`` for a foreign cursor.
    """
    terms = search_terms(query)
    if not 1 <= limit <= MAX_PAGE:
        raise ValueError(f"limit must be between 1 and {MAX_PAGE}, got {limit}")
    matching = matching_texts(db.dialect, terms)
    matched_chats = select(chat_search.c.chat_id).where(matching)
    statement = select(chats).where(
        chats.c.user_id == user_id, chats.c.id.in_(matched_chats), has_prompt()
    )
    if cursor is not None:
        updated_at, chat_id = decode_cursor(cursor)
        statement = statement.where(tuple_(chats.c.updated_at, chats.c.id) < (updated_at, chat_id))
    statement = statement.order_by(chats.c.updated_at.desc(), chats.c.id.desc()).limit(limit + 1)
    async with db.session() as session:
        rows = (await session.execute(statement)).all()
        page = [chat_from_row(row) for row in rows[:limit]]
        # One text per chat gives its snippet: its newest matching prompt or answer (the
        # title, shown anyway, only when nothing else matches). Picked in the database, so
        # a long chat full of matches sends one row, not all of them.
        rank = (
            func.row_number()
            .over(
                partition_by=chat_search.c.chat_id,
                order_by=((chat_search.c.kind == "title").asc(), chat_search.c.id.desc()),
            )
            .label("rank")
        )
        ranked = (
            select(chat_search.c.chat_id, chat_search.c.kind, chat_search.c.body, rank)
            .where(chat_search.c.chat_id.in_([chat.id for chat in page]), matching)
            .subquery()
        )
        texts = (
            await session.execute(
                select(ranked.c.chat_id, ranked.c.kind, ranked.c.body).where(ranked.c.rank == 1)
            )
        ).all()
    best: dict[str, tuple[MatchKind, str]] = {row.chat_id: (row.kind, row.body) for row in texts}
    hits = [
        SearchHit(chat, kind, snippet(body, terms))
        for chat in page
        for kind, body in [best.get(chat.id, ("title", chat.title or ""))]
    ]
    more = len(rows) > limit
    return hits, encode_cursor(page[-1]) if more else None


def snippet(body: str, terms: Sequence[str], width: int = SNIPPET_CHARS) -> str:
    """About ``width`` characters of ``body`` around its first word that starts with a
    term (or with a term's first four letters, which catches most stemmed matches), on
    one line, with "…" where it was cut."""
    # Answers are Markdown: a snippet is plain text, so emphasis and code marks go.
    flat = " ".join(MARKUP.sub("", body).split())
    if len(flat) <= width:
        return flat
    at = _first_hit(flat, terms)
    start = max(0, at - width // 3)
    # Start and end on word boundaries, so no word is cut in half.
    if start > 0:
        space = flat.find(" ", start)
        start = space + 1 if 0 <= space < at else start
    end = min(len(flat), start + width)
    if end < len(flat):
        space = flat.rfind(" ", start, end)
        end = space if space > at else end
    return ("…" if start > 0 else "") + flat[start:end] + ("…" if end < len(flat) else "")


def _first_hit(text: str, terms: Sequence[str]) -> int:
    lowered = text.lower()
    for stems in (terms, [term[:4] for term in terms]):
        found = [
            match.start()
            for stem in stems
            if (match := re.search(r"\b" + re.escape(stem), lowered)) is not None
        ]
        if found:
            return min(found)
    return 0
