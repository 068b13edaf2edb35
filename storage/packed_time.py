"""Times that SQLite stores as a few bytes instead of text (issue 21: bytes per turn).

An event's ``ts`` is RFC 3339 text of 24 characters (``2026-01-31T12:00:00.123Z``) and a
conversation item's ``created_at`` is SQLAlchemy's SQLite text of 26
(``2026-01-31 12:00:00.123456``); a turn writes a dozen of each. On SQLite these columns
store, when it is lossless, a BLOB: one format byte, then the time as a big-endian
integer (milliseconds for ``ts``: 7 bytes; microseconds for ``created_at``: 9 bytes).
Anything else (a ``ts`` in another spelling, rows written before) stays text and reads as
it did. PostgreSQL keeps its types (``varchar``, ``timestamptz``).

Lossless: ``unpack_ts(pack_ts(ts)) == ts`` is checked for every value packed, so a
replayed event's ``ts`` equals the live one byte for byte. No query compares or orders
these columns in SQL (a BLOB sorts after all text there), so it is safe to mix the forms;
a column that SQL compares must not use these types.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import String

from storage.sqlite_packed import PackedOnSqlite

PACKED = b"\x01"  # format byte; another encoding would take another value
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)
_US = timedelta(microseconds=1)


def pack_ts(ts: str) -> str | bytes:
    """The stored form of an event's ``ts`` on SQLite: 7 bytes, or the text as it is."""
    if len(ts) != 24 or ts[-1] != "Z":  # cheap first test: not now_ts()'s spelling
        return ts
    try:
        moment = datetime.fromisoformat(ts)
    except ValueError:
        return ts
    ms = (moment - _EPOCH) // _MS
    if not 0 <= ms < 1 << 48:
        return ts
    packed = PACKED + ms.to_bytes(6, "big")
    return packed if unpack_ts(packed) == ts else ts


def unpack_ts(stored: str | bytes) -> str:
    """The ``ts`` text of a stored form (text, or a BLOB made by ``pack_ts``)."""
    if isinstance(stored, str):
        return stored
    data = bytes(stored)
    if len(data) != 7 or data[:1] != PACKED:
        raise ValueError(f"unknown packed timestamp {data!r}")
    ms = int.from_bytes(data[1:], "big")
    moment = _EPOCH + ms * _MS
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{ms % 1000:03d}Z"


def pack_time(value: datetime) -> bytes:
    """An aware datetime as 9 bytes: the format byte and signed microseconds since 1970."""
    if value.tzinfo is None:
        raise ValueError(f"naive datetime {value!r}; pass a timezone-aware datetime")
    return PACKED + ((value - _EPOCH) // _US).to_bytes(8, "big", signed=True)


def unpack_time(stored: str | bytes) -> datetime:
    """An aware UTC datetime from ``pack_time``'s bytes or SQLAlchemy's SQLite text."""
    if isinstance(stored, str):
        return datetime.fromisoformat(stored).replace(tzinfo=UTC)
    data = bytes(stored)
    if len(data) != 9 or data[:1] != PACKED:
        raise ValueError(f"unknown packed time {data!r}")
    return _EPOCH + int.from_bytes(data[1:], "big", signed=True) * _US


class PackedTimestamp(PackedOnSqlite, String):
    """``String(40)`` holding RFC 3339 text; on SQLite, ``pack_ts``'s forms."""

    pack = staticmethod(pack_ts)
    unpack = staticmethod(unpack_ts)

    def __init__(self) -> None:
        super().__init__(40)
