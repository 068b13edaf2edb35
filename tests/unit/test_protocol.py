"""websocket.protocol: client frame parsing, server event models, envelope and serialiser."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, get_args

import pytest
from pydantic import ValidationError

from websocket import protocol
from websocket.protocol import (
    ENVELOPE_KEYS,
    ApprovalFrame,
    CancelFrame,
    ErrorCode,
    FrameError,
    PingFrame,
    PromptFrame,
    ResumeFrame,
    client_frame_json_schema,
    encode,
    envelope,
    now_ts,
    parse_client_frame,
    server_event_json_schema,
    validate_server_event,
)

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "protocol.md"
SHARED = REPO.parent / "shared" / "PROTOCOL.md"
MAX = 32_000
TS = "2025-01-31T12:00:00.123Z"


def parse(text: str, max_prompt_chars: int = MAX) -> Any:
    return parse_client_frame(text, max_prompt_chars=max_prompt_chars)


def frame_error(text: str, max_prompt_chars: int = MAX) -> str:
    with pytest.raises(FrameError) as info:
        parse(text, max_prompt_chars)
    message = info.value.message
    assert str(info.value) == message
    # Short and human: never a pydantic dump.
    assert len(message) < 120 and "\n" not in message
    assert "pydantic" not in message and "validation error" not in message.lower()
    return message


# --------------------------------------------------------------------------- client frames


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"type":"prompt","text":"hi"}', PromptFrame(text="hi")),
        (
            '{"type":"prompt","text":"hi","client_message_id":"m1"}',
            PromptFrame(text="hi", client_message_id="m1"),
        ),
        ('{"type":"prompt","text":"hi","client_message_id":null}', PromptFrame(text="hi")),
        ('{"type":"cancel"}', CancelFrame()),
        ('{"type":"cancel","turn_id":null}', CancelFrame()),
        ('{"type":"cancel","turn_id":"t1"}', CancelFrame(turn_id="t1")),
        ('{"type":"resume","after_seq":0}', ResumeFrame(after_seq=0)),
        ('{"type":"resume","after_seq":41}', ResumeFrame(after_seq=41)),
        ('{"type":"ping"}', PingFrame()),
        (
            '{"type":"approval","approval_id":"ap_1","decision":"approve"}',
            ApprovalFrame(approval_id="ap_1", decision="approve"),
        ),
        (
            '{"type":"approval","approval_id":"ap_1","decision":"reject","reason":"no"}',
            ApprovalFrame(approval_id="ap_1", decision="reject", reason="no"),
        ),
        (
            '{"type":"approval","approval_id":"ap_1","decision":"reject","reason":null}',
            ApprovalFrame(approval_id="ap_1", decision="reject"),
        ),
        (' {"type": "ping"} \n', PingFrame()),
        ('{"type":"prompt","text":"  padded  "}', PromptFrame(text="  padded  ")),
        ('{"type":"prompt","text":"' + "x" * MAX + '"}', PromptFrame(text="x" * MAX)),
    ],
)
def test_valid_frames(text: str, expected: Any) -> None:
    assert parse(text) == expected


@pytest.mark.parametrize(
    "text",
    ["hello there", "what's {the} weather?", "{not json", "Ünïcödé ✓", "[1, 2", "'single'"],
)
def test_non_json_text_is_a_prompt(text: str) -> None:
    assert parse(text) == PromptFrame(text=text)


@pytest.mark.parametrize("text", ["42", '"hi"', "[1]", "null", "true", "1.5", "[]", "NaN"])
def test_json_that_is_not_an_object(text: str) -> None:
    assert frame_error(text) == "frame must be a JSON object"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '{"type":"foo"}',
            "unknown frame type 'foo'; expected prompt, cancel, resume, ping, approval, regenerate, edit or continue",
        ),
        (
            '{"type":"PROMPT","text":"x"}',
            "unknown frame type 'PROMPT'; expected prompt, cancel, resume, ping, approval, regenerate, edit or continue",
        ),
        (
            '{"type":5}',
            "unknown frame type '5'; expected prompt, cancel, resume, ping, approval, regenerate, edit or continue",
        ),
        (
            '{"text":"hi"}',
            "frame needs a 'type' field: prompt, cancel, resume, ping, approval, regenerate, edit or continue",
        ),
        (
            "{}",
            "frame needs a 'type' field: prompt, cancel, resume, ping, approval, regenerate, edit or continue",
        ),
        ('{"type":"prompt","text":"hi","foo":1}', "unknown field 'foo' in prompt frame"),
        ('{"type":"ping","x":true}', "unknown field 'x' in ping frame"),
        ('{"type":"cancel","chat_id":"c"}', "unknown field 'chat_id' in cancel frame"),
        ('{"type":"prompt"}', "prompt.text is required"),
        ('{"type":"resume"}', "resume.after_seq is required"),
        ('{"type":"prompt","text":""}', "prompt.text must be 1..32000 characters"),
        (
            '{"type":"prompt","text":"' + "x" * (MAX + 1) + '"}',
            "prompt.text must be 1..32000 characters",
        ),
        ('{"type":"prompt","text":42}', "prompt.text must be a string"),
        ('{"type":"prompt","text":["a"]}', "prompt.text must be a string"),
        ('{"type":"prompt","text":"   \\n\\t "}', "prompt.text must not be blank"),
        (
            '{"type":"prompt","text":"hi","client_message_id":"' + "m" * 65 + '"}',
            "prompt.client_message_id must be a string of 1..64 characters",
        ),
        (
            '{"type":"prompt","text":"hi","client_message_id":""}',
            "prompt.client_message_id must be a string of 1..64 characters",
        ),
        (
            '{"type":"prompt","text":"hi","client_message_id":7}',
            "prompt.client_message_id must be a string of 1..64 characters",
        ),
        ('{"type":"cancel","turn_id":3}', "cancel.turn_id must be a string or null"),
        ('{"type":"resume","after_seq":-1}', "resume.after_seq must be an integer >= 0"),
        ('{"type":"resume","after_seq":"5"}', "resume.after_seq must be an integer >= 0"),
        ('{"type":"resume","after_seq":true}', "resume.after_seq must be an integer >= 0"),
        ('{"type":"approval","decision":"approve"}', "approval.approval_id is required"),
        ('{"type":"approval","approval_id":"ap_1"}', "approval.decision is required"),
        (
            '{"type":"approval","approval_id":"ap_1","decision":"yes"}',
            'approval.decision must be "approve" or "reject"',
        ),
        (
            '{"type":"approval","approval_id":"ap_1","decision":true}',
            'approval.decision must be "approve" or "reject"',
        ),
        (
            '{"type":"approval","approval_id":"","decision":"approve"}',
            "approval.approval_id must be a string of 1..64 characters",
        ),
        (
            '{"type":"approval","approval_id":"' + "a" * 65 + '","decision":"approve"}',
            "approval.approval_id must be a string of 1..64 characters",
        ),
        (
            '{"type":"approval","approval_id":7,"decision":"approve"}',
            "approval.approval_id must be a string of 1..64 characters",
        ),
        (
            '{"type":"approval","approval_id":"ap_1","decision":"reject","reason":"'
            + "r" * 501
            + '"}',
            "approval.reason must be a string of at most 500 characters, or null",
        ),
        (
            '{"type":"approval","approval_id":"ap_1","decision":"reject","reason":5}',
            "approval.reason must be a string of at most 500 characters, or null",
        ),
        (
            '{"type":"approval","approval_id":"ap_1","decision":"reject","reason":"a\\u0000"}',
            "approval.reason must not contain NUL (U+0000) characters",
        ),
        (
            '{"type":"approval","approval_id":"ap_1","decision":"approve","call_id":"c"}',
            "unknown field 'call_id' in approval frame",
        ),
        ('{"type":"resume","after_seq":1.5}', "resume.after_seq must be an integer >= 0"),
        ('{"type":"resume","after_seq":null}', "resume.after_seq must be an integer >= 0"),
    ],
)
def test_invalid_frames(text: str, message: str) -> None:
    assert frame_error(text) == message


def test_client_message_id_of_64_chars_is_accepted() -> None:
    frame = parse('{"type":"prompt","text":"hi","client_message_id":"' + "m" * 64 + '"}')
    assert frame == PromptFrame(text="hi", client_message_id="m" * 64)


def test_prompt_limit_is_the_configured_one() -> None:
    assert parse("x" * 10, max_prompt_chars=10) == PromptFrame(text="x" * 10)
    assert frame_error("x" * 11, max_prompt_chars=10) == "prompt.text must be 1..10 characters"
    assert frame_error('{"type":"prompt","text":"' + "x" * 11 + '"}', max_prompt_chars=10) == (
        "prompt.text must be 1..10 characters"
    )
    # A deployment may allow more than the default.
    big = "y" * (MAX + 5)
    assert parse(json.dumps({"type": "prompt", "text": big}), max_prompt_chars=MAX * 2).text == big


def test_limit_counts_characters_not_bytes() -> None:
    assert parse("é" * 10, max_prompt_chars=10).text == "é" * 10


@pytest.mark.parametrize("text", ["   ", "\n", " \t \r\n"])
def test_blank_plain_text_is_rejected(text: str) -> None:
    assert frame_error(text) == "prompt.text must not be blank"


def test_deeply_nested_json_does_not_crash() -> None:
    text = "[" * 20_000
    assert parse(text).type == "prompt"  # not JSON: taken as text, like any other


def test_frame_error_is_a_value_error() -> None:
    assert issubclass(FrameError, ValueError)


def test_client_frame_schema_has_every_frame() -> None:
    schema = client_frame_json_schema()
    assert set(schema["discriminator"]["mapping"]) == {
        "prompt",
        "cancel",
        "resume",
        "ping",
        "approval",
        "regenerate",
        "edit",
        "continue",
    }
    prompt = schema["$defs"]["PromptFrame"]
    assert prompt["additionalProperties"] is False
    assert prompt["properties"]["text"]["maxLength"] == MAX


# --------------------------------------------------------------------------- server events

CHAT = "6f1c2a7e-3b1d-4c1e-9f0a-2d5b8c9e0a11"
TOOL_RESPONSE = {
    "response_type": "yelp_search_results",
    "agent_name": "Yelp",
    "friendly_name": "Searching Yelp",
    "response": [{"name": "Oishii"}],
    "display_response": True,
    "display_as": [{"type": "markdown", "content": "**Oishii**"}],
    "content_chunks": [{"id": "1", "title": "Oishii", "url": "https://x", "snippet": "sushi"}],
    "debug_info": {"latency_ms": 120},
}

# (type, turn_id, seq, payload): one valid event of each type.
VALID: list[tuple[str, str | None, int | None, dict[str, Any]]] = [
    ("user_prompt", "t1", 1, {"text": "hi", "client_message_id": None}),
    ("user_prompt", "t1", 1, {"text": "hi", "client_message_id": "m1"}),
    ("handoff", "t1", 2, {"from_agent": "Switchboard", "to_agent": "Yelp"}),
    ("agent_updated", "t1", 3, {"new_agent": "Yelp", "name": "Yelp", "current_agent": "Yelp"}),
    (
        "tool_call",
        "t1",
        4,
        {
            "call_id": "c1",
            "name": "search",
            "description": "Searching Yelp",
            "arguments": {"term": "sushi"},
            "current_agent": "Yelp",
        },
    ),
    ("tool_output", "t1", 5, {"call_id": "c1", "output": TOOL_RESPONSE, "current_agent": "Yelp"}),
    (
        "tool_output",
        "t1",
        5,
        {
            "call_id": "c1",
            "current_agent": "Yelp",
            "output": {k: v for k, v in TOOL_RESPONSE.items() if k != "debug_info"},
        },
    ),
    ("llm_response_delta", "t1", None, {"delta": "Hel", "current_agent": "Yelp"}),
    ("llm_response", "t1", 6, {"text": "Hello", "current_agent": "Yelp"}),
    ("error", "t1", 7, {"code": "tool_error", "message": "boom", "retryable": False}),
    ("error", None, None, {"code": "invalid_request", "message": "bad", "retryable": False}),
    (
        "end_of_stream",
        "t1",
        8,
        {
            "status": "completed",
            "usage": {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3, "requests": 1},
        },
    ),
    ("suggested_prompts", "t1", 9, {"prompts": ["a", "b", "c", "d"]}),
    ("suggested_prompts", "t1", 9, {"prompts": []}),
    ("pong", None, None, {}),
    (
        "approval_required",
        "t1",
        10,
        {
            "approval_id": "ap_1",
            "call_id": "c2",
            "name": "send_google_email",
            "description": "Sending an email",
            "current_agent": "GMail",
            "arguments": {"to": ["bob@example.com"], "subject": "Sushi", "body": "Hi"},
            "expires_at": "2025-02-01T12:00:00.000Z",
        },
    ),
    (
        "approval_resolved",
        "t1",
        11,
        {"approval_id": "ap_1", "call_id": "c2", "decision": "approved", "reason": None},
    ),
    (
        "approval_resolved",
        "t1",
        11,
        {
            "approval_id": "ap_1",
            "call_id": "c2",
            "decision": "rejected",
            "reason": "wrong person",
            "decided_by": "u1",
            "decided_via": "rest",
        },
    ),
    (
        "approval_resolved",
        "t1",
        11,
        {
            "approval_id": "ap_1",
            "call_id": "c2",
            "decision": "superseded",
            "reason": None,
            "decided_by": None,
            "decided_via": "prompt",
        },
    ),
    # Project events and fields (docs/protocol.md, "Regenerate, edit and continue").
    ("turn_superseded", "t1", 12, {"by_turn_id": "t2", "action": "regenerate"}),
    (
        "user_prompt",
        "t2",
        13,
        {"text": "hi", "client_message_id": "m2", "action": "regenerate", "source_turn_id": "t1"},
    ),
    ("chat_renamed", None, None, {"title": "Coffee spending"}),
    (
        "error",
        None,
        None,
        {
            "code": "invalid_request",
            "message": "only the chat's latest turn can be regenerated",
            "retryable": False,
            "refusal": "not_latest_turn",
            "client_message_id": "m3",
        },
    ),
]


@pytest.mark.parametrize(("type_", "turn_id", "seq", "payload"), VALID)
def test_valid_server_events(
    type_: str, turn_id: str | None, seq: int | None, payload: dict[str, Any]
) -> None:
    event = envelope(type_, CHAT, turn_id, seq, payload, TS)
    model = validate_server_event(event)
    assert model.type == type_  # type: ignore[attr-defined]
    assert json.loads(encode(event)) == event


def test_every_event_type_has_a_valid_example() -> None:
    mapping = server_event_json_schema()["discriminator"]["mapping"]
    assert set(mapping) == {row[0] for row in VALID}


def _with(base: int, **changes: Any) -> dict[str, Any]:
    type_, turn_id, seq, payload = VALID[base]
    event = envelope(type_, CHAT, turn_id, seq, payload, TS)
    event.update(changes)
    return {k: v for k, v in event.items() if v is not _DROP}


_DROP = object()


def test_display_hints_of_any_type_are_valid() -> None:
    """A client renders the first hint it supports and falls back to ``text`` (§3), so a
    connector may send its own: the one ToolResponse schema accepts it."""
    image = {**TOOL_RESPONSE, "display_as": [{"type": "image", "content": {"url": "https://x"}}]}
    validate_server_event(_with(5, output=image))


@pytest.mark.parametrize(
    "event",
    [
        _with(7, seq=3),  # a delta is never numbered
        _with(4, seq=None),  # a tool_call is persisted
        _with(4, seq=0),  # seqs start at 1
        _with(4, turn_id=None),
        _with(4, seq=_DROP),
        _with(4, arguments="{}"),  # arguments is an object
        _with(4, extra=1),
        _with(9, seq=None),  # a turn error has a seq
        _with(10, seq=4),  # a connection error has none
        _with(9, code="kaboom"),
        _with(9, retryable="no"),
        _with(11, status="done"),
        _with(12, prompts=["1", "2", "3", "4", "5"]),
        _with(14, turn_id="t1"),
        _with(8, ts="2025-01-31T12:00:00Z"),  # milliseconds are required
        _with(8, ts="2025-01-31 12:00:00.123"),
        _with(8, chat_id="bad id!"),
        _with(5, output={"response_type": "x"}),
        _with(5, output={**TOOL_RESPONSE, "display_as": [{"type": "", "content": ""}]}),
        _with(5, output={**TOOL_RESPONSE, "display_as": [{"type": "markdown", "content": 5}]}),
        _with(5, output={**TOOL_RESPONSE, "content_chunks": [{"id": "1", "title": "t"}]}),
        _with(0, client_message_id="m" * 65),
        _with(0, type="user_promptx"),
        _with(15, expires_at="tomorrow"),
        _with(15, arguments='{"to": "bob"}'),  # the arguments are an object
        _with(15, approval_id=""),
        _with(15, seq=None),  # persisted
        _with(16, decision="approve"),  # the decision, not the frame's verb
        _with(16, decision="maybe"),
        _with(16, reason=_DROP),
        _with(16, extra=1),
    ],
)
def test_invalid_server_events(event: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        validate_server_event(event)


def test_error_codes_are_those_of_the_protocol() -> None:
    text = DOC.read_text()
    section = text.split("## 5. Errors", 1)[1].split("## 6.", 1)[0]
    codes = re.findall(r"`([a-z_]+)`", section.split("`code` values:", 1)[1].split(".", 1)[0])
    assert set(get_args(ErrorCode)) == set(codes)
    assert len(codes) == 12


# --------------------------------------------------------------------------- envelope, ts, encode


def test_envelope_key_order() -> None:
    event = envelope("llm_response", CHAT, "t1", 5, {"text": "x", "current_agent": "A"}, TS)
    assert list(event) == [*ENVELOPE_KEYS, "text", "current_agent"]
    assert list(json.loads(encode(event))) == list(event)
    assert encode(event).startswith('{"type":"llm_response","chat_id":')


def test_envelope_defaults_ts_to_now() -> None:
    event = envelope("pong", CHAT, None, None, {})
    assert re.fullmatch(protocol.TS_PATTERN, event["ts"])


def test_envelope_refuses_payload_that_shadows_the_envelope() -> None:
    with pytest.raises(ValueError, match="seq"):
        envelope("llm_response", CHAT, "t1", 5, {"seq": 9, "text": "x"}, TS)


def test_now_ts_format() -> None:
    ts = now_ts()
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z", ts)
    parsed = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    assert parsed.tzinfo is not None and parsed.utcoffset().total_seconds() == 0  # type: ignore[union-attr]
    assert abs((datetime.now(UTC) - parsed).total_seconds()) < 5


@pytest.mark.parametrize(
    "now", [1_700_000_000.0, 1_700_000_000.9995, 1_700_000_001.0004, 1_700_000_001.5, 1e9 + 0.25]
)
def test_now_ts_reuses_the_second_only_within_it(
    now: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    from types import SimpleNamespace

    from wire import events

    monkeypatch.setattr(events, "time", SimpleNamespace(time=lambda: now))
    # A second's text formatted for an earlier call must not leak into this one.
    monkeypatch.setattr(events, "_second", (int(now) - 1, "stale"))
    expected = datetime.fromtimestamp(now, UTC).isoformat(timespec="milliseconds")
    assert now_ts() == expected.replace("+00:00", "Z")
    assert now_ts() == now_ts()  # the cached second gives the same text


ROUND_TRIP = [
    envelope(
        "tool_output",
        CHAT,
        "t1",
        5,
        {"call_id": "c", "output": TOOL_RESPONSE, "current_agent": "Yelp"},
        TS,
    ),
    envelope(
        "llm_response_delta",
        CHAT,
        "t1",
        None,
        {"delta": 'café ✓ 😀 "quoted" \\ \n\t \u2028 \x00', "current_agent": "A"},
        TS,
    ),
    {"nested": {"list": [1, 2.5, -3, 1e300, True, False, None, [], {}], "big": 2**62}},
]


@pytest.mark.parametrize("event", ROUND_TRIP)
def test_encode_round_trips(event: dict[str, Any]) -> None:
    text = encode(event)
    assert isinstance(text, str)
    assert json.loads(text) == event


def test_encode_is_compact_utf8() -> None:
    text = encode({"a": "é", "b": [1, 2]})
    assert text == '{"a":"é","b":[1,2]}'


def test_encode_nan_becomes_null() -> None:
    assert json.loads(encode({"x": float("nan"), "y": float("inf")})) == {"x": None, "y": None}


def test_encode_stringifies_int_keys() -> None:
    assert json.loads(encode({"m": {1: "a"}})) == {"m": {"1": "a"}}


def test_encode_rejects_non_json_values() -> None:
    with pytest.raises(TypeError):
        encode({"x": object()})


def test_encode_round_trips_as_utf8() -> None:
    for event in ROUND_TRIP:
        assert json.loads(encode(event)) == event
    assert encode({"a": "é"}) == '{"a":"é"}'


# --------------------------------------------------------------------------- docs/protocol.md


def _json_blocks(markdown: str) -> list[dict[str, Any]]:
    return [json.loads(block) for block in re.findall(r"```json\n(.*?)```", markdown, re.S)]


def test_doc_examples_are_valid() -> None:
    examples = DOC.read_text().split("\n## Examples\n", 1)[1]
    client, server = examples.split("### Server events", 1)
    frames = [parse(json.dumps(block)) for block in _json_blocks(client)]
    assert {frame.type for frame in frames} == {"prompt", "cancel", "resume", "ping", "approval"}
    events = _json_blocks(server)
    for event in events:
        validate_server_event(event)
    assert {e["type"] for e in events} == {row[0] for row in VALID}


def _doc_body() -> str:
    """docs/protocol.md after its leading comment."""
    doc = DOC.read_text()
    assert doc.startswith("<!--"), "docs/protocol.md starts with its maintenance comment"
    return doc.split("-->\n\n", 1)[1]


@pytest.mark.skipif(not SHARED.exists(), reason="shared/PROTOCOL.md is not beside the repo")
def test_doc_starts_with_the_shared_contract_verbatim() -> None:
    # The shared contract comes first, unchanged; the project's own sections may follow it,
    # each a level-2 heading, so extending the page never needs a change to the shared file.
    body, contract = _doc_body(), SHARED.read_text().rstrip() + "\n"
    assert body.startswith(contract), "docs/protocol.md must begin with shared/PROTOCOL.md"
    extension = body[len(contract) :]
    assert extension == "" or extension.startswith("\n## "), (
        "what follows the shared contract must be sections of its own (## headings)"
    )


def test_doc_contract_is_v1_1() -> None:
    assert _doc_body().startswith("# Switchboard wire protocol (v1.1)\n")


def test_a_new_event_type_is_one_model() -> None:
    """docs/architecture.md, "Adding a server event": the model alone gives the event its
    payload, envelope, validator and schema. In a child process: the model registry is
    global, and this type is not part of the protocol."""
    script = """
import json
import subprocess
import sys
from pydantic import Field, ValidationError
from wire.events import Event, encode, server_event_json_schema, validate_server_event

class ChatPinnedEvent(Event):
    type = "chat_pinned"
    title: str = Field(min_length=1)

event = ChatPinnedEvent(title="Sushi in Boston")
wire = event.enveloped("chat-1", "turn-1", 7, "2025-01-31T12:00:00.123Z")
validate_server_event(json.loads(encode(wire)))
try:
    validate_server_event({**wire, "title": ""})
except ValidationError:
    pass
else:
    raise SystemExit("an empty title was accepted")
schema = json.dumps(server_event_json_schema())
print(encode(wire))
print("chat_pinned" in schema)
"""
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        '{"type":"chat_pinned","chat_id":"chat-1","turn_id":"turn-1","seq":7,'
        '"ts":"2025-01-31T12:00:00.123Z","title":"Sushi in Boston"}',
        "True",
    ]
