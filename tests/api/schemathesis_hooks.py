"""schemathesis hooks for tests/api/test_schemathesis.py: only for what an OpenAPI 3.1
document cannot say, so that ``positive_data_acceptance`` holds everywhere else.

One operation is left out of ``positive_data_acceptance`` instead
(tests/api/schemathesis.toml): ``POST /api/chats/{chat_id}/attachments``. The server reads
what a file *is* from its bytes (a PNG, a PDF, UTF-8 text), whatever it is named or
declared as; a schema can say "binary", not "bytes that are a PNG", and a hook that
swapped in a valid file reached cases schemathesis derives as invalid ones.

Each hook rewrites a *positive* case (one the document says is valid) whose validity
rests on something no schema can state; negative cases go out as generated. What each
stands for, and why the document cannot say it:

- ``GET /api/chats?cursor=``: a cursor is a position the server encoded in a previous
  page's ``next_cursor``; its form is the server's, not the contract's. A cursor not
  from a page is dropped.
- ``POST /ag-ui``: a run's messages end with the person's new message (``role``
  ``user``, with text) unless it resumes; JSON Schema can say what every item is, not
  what the last one is. The messages become one such message (see ``_agui`` for why
  the history goes too).
- ``POST /v1/responses`` and ``/compact``: ``compaction`` items carry the server's own
  ciphertext, ``function_call_output`` items answer calls of an earlier response (and a
  ``function_call`` sent back needs its output by ``call_id``), approval responses answer
  its approval requests, and images and files are read from their bytes: all state,
  cryptography or content. Those are dropped, and a list ends with a user message, the
  turn's prompt, which a list of items must hold (the document says the rest). Tool
  names in ``tool_choice`` and ``switchboard:tool`` entries name the server's tools or the
  request's own: they go.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

import schemathesis

# Items whose validity rests on server state or the server's key (see above).
_STATEFUL_ITEMS = {
    "compaction",
    "function_call",
    "function_call_output",
    "switchboard:approval_response",
    "item_reference",
}
PROMPT = {"role": "user", "content": "hello"}
_BYTES = {"input_image", "input_file"}


def _positive(case: Any) -> bool:
    meta = getattr(case, "meta", None)
    if meta is None or not meta.generation.mode.is_positive:
        return False
    return not any(info.mode.is_negative for info in meta.components.values())


def _from_a_page(cursor: object) -> bool:
    # The form storage.chats.encode_cursor gives (a check, not the server's decoder).
    if not isinstance(cursor, str):
        return False
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (binascii.Error, ValueError):
        return False
    return isinstance(data, dict) and {"u", "i"} <= data.keys()


def _chats(case: Any) -> None:
    if case.query and not _from_a_page(case.query.get("cursor", "")):
        case.query = {k: v for k, v in case.query.items() if k != "cursor"}


def _agui(case: Any) -> None:
    if not isinstance(case.body, dict) or case.body.get("resume"):
        return
    body = case.body = dict(case.body)
    # The history before it goes too: the ag-ui package's schema admits message shapes
    # its own validator refuses (a tool message's content as parts), and the server
    # validates with the package.
    body["messages"] = [{"id": "m1", **PROMPT}]


def _responses(case: Any) -> None:
    if not isinstance(case.body, dict):
        return
    body = case.body = dict(case.body)
    # Tool names refer to the server's tools, or to the request's own tools by name.
    if isinstance(body.get("tool_choice"), dict):
        body["tool_choice"] = "auto"
    if isinstance(body.get("tools"), list):
        # ...and are unique (JSON Schema's uniqueItems compares whole items, not a field).
        named: dict[object, Any] = {}
        for tool in body["tools"]:
            if isinstance(tool, dict) and tool.get("type") != "switchboard:tool":
                if _storable(tool.get("parameters")):
                    named.setdefault(tool.get("name"), tool)
        body["tools"] = list(named.values())
    if not isinstance(body.get("input"), list):
        return
    kept = []
    for item in body["input"]:
        if isinstance(item, dict) and item.get("type") in _STATEFUL_ITEMS:
            continue
        content = item.get("content") if isinstance(item, dict) else None
        if isinstance(content, list):
            # Images and files are sniffed from their bytes, as attachments are.
            parts = [p for p in content if not (isinstance(p, dict) and p.get("type") in _BYTES)]
            item = {**item, "content": parts or "hello"}
        kept.append(item)
    body["input"] = [*kept, PROMPT][-1000:]


def _storable(value: object) -> bool:
    # A tool's parameters are any JSON Schema, free-form: that no string in it, at any
    # depth, holds U+0000 or an unpaired surrogate needs a recursive schema of all JSON,
    # which the document does not carry (every string it types says so).
    if isinstance(value, str):
        return "\x00" not in value and not any(0xD800 <= ord(c) <= 0xDFFF for c in value)
    if isinstance(value, dict):
        return all(_storable(k) and _storable(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_storable(v) for v in value)
    return True


_BY_OPERATION = {
    "GET /api/chats": _chats,
    "POST /ag-ui": _agui,
    "POST /v1/responses": _responses,
    "POST /v1/responses/compact": _responses,
}


@schemathesis.hook
def before_call(ctx: Any, case: Any, **kwargs: Any) -> None:
    rewrite = _BY_OPERATION.get(case.operation.label)
    if rewrite is not None and _positive(case):
        rewrite(case)
