"""JSON columns that store their large values deflated on SQLite (issue 21: bytes per turn).

A tool's output is kilobytes of JSON with the same keys over and over (a Yelp search is
~6 KB, which deflate takes to ~1.2 KB). PostgreSQL already compresses such values itself
(JSONB values over ~2 KB are TOASTed with pglz) and keeps JSONB there; SQLite stores
text as it is, so on SQLite a value whose JSON is at least ``PACK_MIN_BYTES`` long is
stored as a BLOB: one format byte, then the JSON's UTF-8 deflated (raw deflate, no
header, with a preset dictionary of the keys such values repeat). Smaller values, and values deflate does not shrink, stay JSON text, as every
row written before this was.

Lossless: ``unpack(pack(v))`` is ``v`` with its keys in the same order (orjson both
ways), so a replayed event equals the live one byte for byte. Readers get the value, never
the stored form: ``PackedJSON`` does both directions for SQLAlchemy statements, and a
writer that goes around SQLAlchemy (the raw driver) must store ``pack(value)`` and read
with ``unpack``. SQL cannot look inside a packed value (``json_extract`` refuses a BLOB),
so a column whose JSON a query reads in SQL must not use this type.
"""

from __future__ import annotations

import zlib
from typing import Any

from sqlalchemy import JSON, Dialect
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.types import TypeDecorator, TypeEngine

from storage.engine import json_dumps, json_loads
from storage.sqlite_packed import PackedOnSqlite

# Below this, even with the dictionary, deflate saves a few bytes at most (a 46-byte
# handoff packs to 24).
PACK_MIN_BYTES = 32
# The stored form's first byte: what follows is raw deflate of the JSON text with
# ``DICTIONARY_V1`` as the preset dictionary. Another encoding (another dictionary) would
# take another byte value; every value ever written stays readable.
DEFLATED = b"\x01"
_LEVEL = 6  # zlib default: 0.3 ms to pack a bench turn (level 1: 0.2 ms, 7% larger)

# Deflate's preset dictionary: text the values are likely to repeat, so that even a
# short value finds its keys in it (a 105-byte end_of_stream packs to 27 bytes). The
# JSON shapes of the events (wire/events.py), the Agents SDK's conversation items and
# ToolResponse, and the keys of the built-in connectors' results; the most common last
# (deflate reaches closer text with shorter codes). NEVER EDIT: stored values are
# inflated with exactly these bytes (a test pins their hash); a better dictionary is a
# new format byte.
DICTIONARY_V1 = b"".join(
    [
        b'{"id":"","alias":"","name":"","image_url":"","is_closed":false,"url":"https://www.',
        b'yelp.com/biz/","review_count":,"categories":[{"alias":"","title":""}],"rating":,',
        b'"coordinates":{"latitude":,"longitude":},"transactions":["delivery","pickup"],',
        b'"price":"$$","location":{"address1":"","address2":"","address3":"","city":"",',
        b'"zip_code":"","country":"US","state":"","display_address":["",""]},"phone":"+1",',
        b'"display_phone":"","business_hours":[{"hour_type":"REGULAR","is_open_now":true,',
        b'"open":[{"day":0,"start":"1100","end":"2200","is_overnight":false},{"day":1,',
        b'"start":"1100","end":"2200","is_overnight":false}]}],"distance":}',
        b'{"id":"","thread_id":"","from":"","to":[""],"cc":[],"bcc":[],"subject":"",',
        b'"date":"","snippet":"","body":"","labels":["INBOX","UNREAD"]}',
        b"rating  reviews), , \xe2\x80\x94  Email sent to ; subject: .\\nBody: ",
        b' businesses):\\n<external source=\\"\\">\\n1. \\n2. \\n3. </external>',
        b'{"approval_id":"","call_id":"call_","decision":"approved","reason":null,',
        b'"decided_by":null,"decided_via":null,"expires_at":""}',
        b'{"code":"","message":"","retryable":false}{"title":""}',
        b'{"type":"reasoning","summary":[],"id":"rs_"}',
        b'{"type":"function_call_output","call_id":"call_","output":"',
        b'{"content":"","role":"user"}',
        b'{"id":"msg_","content":[{"annotations":[],"text":"","type":"output_text",',
        b'"logprobs":[]}],"role":"assistant","status":"completed","type":"message"}',
        b'{"arguments":"{}","call_id":"call_","name":"transfer_to_","type":"function_call",',
        b'"id":"fc_","status":"completed"}',
        b'{"call_id":"call_","output":"{\\"assistant\\": \\"","type":"function_call_output"}',
        b'{"text":"","client_message_id":null,"attachments":[{"id":"","name":"",',
        b'"content_type":"","size":,"width":,"height":}]}',
        b'{"from_agent":"","to_agent":""}{"new_agent":"","name":"","current_agent":""}',
        b'{"status":"completed","usage":{"input_tokens":,"output_tokens":,"total_tokens":,',
        b'"requests":}}{"prompts":["","",""]}{"text":"","current_agent":""}',
        b'{"call_id":"call_","name":"","description":"","arguments":{},"current_agent":""}',
        b'{"call_id":"call_","output":{"response_type":"","agent_name":"","friendly_name":"',
        b'","response":{},"display_response":true},"current_agent":""}',
    ]
)


def pack(value: Any) -> str | bytes:
    """The stored form of a JSON value on SQLite: its JSON text, or a deflated BLOB."""
    text = json_dumps(value)
    if len(text) < PACK_MIN_BYTES:  # characters <= bytes: a cheap first test
        return text
    raw = text.encode()
    deflate = zlib.compressobj(_LEVEL, zlib.DEFLATED, -zlib.MAX_WBITS, zdict=DICTIONARY_V1)
    packed = DEFLATED + deflate.compress(raw) + deflate.flush()
    return packed if len(packed) < len(raw) else text


def unpack(stored: str | bytes) -> Any:
    """The JSON value of a stored form (JSON text, or a BLOB made by ``pack``)."""
    if isinstance(stored, str):
        return json_loads(stored)
    data = bytes(stored)
    if data[:1] != DEFLATED:
        raise ValueError(f"unknown packed JSON format {data[:1]!r}")
    inflate = zlib.decompressobj(-zlib.MAX_WBITS, zdict=DICTIONARY_V1)
    return json_loads(inflate.decompress(data[1:]) + inflate.flush())


class PackedJSON(PackedOnSqlite, TypeDecorator[Any]):
    """JSONB on PostgreSQL; on SQLite a column declared JSON holding ``pack``'s forms.

    SQL NULL for None, as ``JSON(none_as_null=True)``. The column's declared type is JSON
    on both engines, the same as before, so no migration changes it and old rows (text)
    read as they did.
    """

    impl = JSON(none_as_null=True)
    cache_ok = True
    pack = staticmethod(pack)
    unpack = staticmethod(unpack)

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "postgresql":
            return dialect.type_descriptor(JSONB(none_as_null=True))
        return dialect.type_descriptor(JSON(none_as_null=True))
