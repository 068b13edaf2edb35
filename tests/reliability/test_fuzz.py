"""Frame fuzzing over one real socket per test (PROTOCOL.md §2).

Hypothesis generates frames: arbitrary Unicode text, random JSON values, structured frames
with the right ``type`` and wrong, extra or missing fields, huge numbers, nested junk,
prompts at and over the length limit, odd ``client_message_id``s and ``after_seq``s. An
oracle written from §2 alone (not from ``websocket.protocol``) says what each frame must
get, and the server's answer is checked against it:

- malformed → one ``error`` ``invalid_request`` (connection-level: no turn, no seq);
- ``ping`` → ``pong``; ``cancel`` with nothing running → ``error`` ``invalid_request``;
- ``resume`` → exactly the persisted events after ``after_seq``, as first received;
- a valid ``prompt`` → a whole turn, ``user_prompt`` … ``end_of_stream``, seqs gap-free;
  a repeated ``client_message_id`` → that turn's ``user_prompt`` again and nothing else
  (with another text: an ``error`` ``invalid_request``).

After every frame a ``ping`` must get the very next frame, a ``pong`` (nothing stray, the
socket usable), and the server must have logged no ERROR. The prompt limit is lowered to
``MAX_PROMPT`` chars so that "at and over the limit" is cheap to generate; the default
limit, oversize frames (1009) and values that only PostgreSQL refuses are tested below on
both engines. ``FUZZ_CASES`` counts the frames sent (printed at the end of the module).
"""

from __future__ import annotations

import json
import logging
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.exceptions import ConnectionClosed

from app.settings import Settings
from tests.support.clients import Client, open_client
from tests.support.logs import CapturedLogs, capture_logs
from tests.support.servers import LiveServer, serve
from websocket.protocol import validate_server_event

MAX_PROMPT = 120
MAX_CLIENT_MESSAGE_ID = 64
MAX_SEQ = 2**31 - 1  # seqs are 32-bit in the database
FUZZ_SETTINGS: dict[str, Any] = {
    "max_prompt_chars": MAX_PROMPT,
    # Above the limit derived from MAX_PROMPT (7.8 KB), so the deep and long edge frames
    # reach the parser; oversize frames have their own test below.
    "max_frame_bytes": 64 * 1024,
    # Valid prompts start turns: the fuzz must never trip the per-user limits.
    "prompts_per_minute": 1_000_000,
}
FUZZ_CASES: Counter[str] = Counter()

sqlite_only = pytest.mark.parametrize("_migrated_database", ["sqlite"], indirect=True)
fuzz_settings = settings(
    deadline=None,
    database=None,  # nothing written under the source tree; failures print their blob
    print_blob=True,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)


# ----------------------------------------------------------------------------- the oracle


@dataclass(frozen=True)
class Invalid:
    """A malformed frame: one ``error`` ``invalid_request``."""


@dataclass(frozen=True)
class Ping:
    pass


@dataclass(frozen=True)
class CancelNothing:
    """A well-formed cancel while nothing runs: ``error`` ``invalid_request``."""


@dataclass(frozen=True)
class Resume:
    after_seq: int


@dataclass(frozen=True)
class Prompt:
    text: str
    client_message_id: str | None


Reaction = Invalid | Ping | CancelNothing | Resume | Prompt
_SURROGATES = range(0xD800, 0xE000)


class _HugeInt:
    """An integer literal too long for ``int()``: JSON, but never a valid field value."""


def _parse_int(literal: str) -> int | _HugeInt:
    return _HugeInt() if len(literal.lstrip("-")) > 4000 else int(literal)


def _has_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return any(ord(char) in _SURROGATES for char in value)
    if isinstance(value, dict):
        return any(_has_surrogate(k) or _has_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_surrogate(item) for item in value)
    return False


def _is_valid_string(value: Any, low: int, high: int) -> bool:
    # PostgreSQL cannot store U+0000, so no engine accepts it.
    return isinstance(value, str) and low <= len(value) <= high and "\x00" not in value


def expected_reaction(frame: str, max_prompt: int) -> Reaction:
    """What PROTOCOL.md §2 says a frame must get (nothing running in the chat)."""
    try:
        data = json.loads(frame, parse_int=_parse_int)
    except (json.JSONDecodeError, RecursionError):
        data = {"type": "prompt", "text": frame}  # not JSON: a plain-text prompt
    if not isinstance(data, dict) or _has_surrogate(data):
        return Invalid()  # unpaired surrogates are not Unicode text
    kind, fields = data.get("type"), {k: v for k, v in data.items() if k != "type"}
    if kind == "ping":
        return Ping() if not fields else Invalid()
    if kind == "cancel":
        turn_id = fields.get("turn_id")
        if set(fields) - {"turn_id"} or not (turn_id is None or isinstance(turn_id, str)):
            return Invalid()
        return CancelNothing()
    if kind == "resume":
        after_seq = fields.get("after_seq")
        # JSON true is not a number; bool is a subclass of int in Python.
        if set(fields) != {"after_seq"} or type(after_seq) is not int:
            return Invalid()
        return Resume(after_seq) if 0 <= after_seq <= MAX_SEQ else Invalid()
    if kind == "prompt":
        text, message_id = fields.get("text"), fields.get("client_message_id")
        if set(fields) - {"text", "client_message_id"}:
            return Invalid()
        if not _is_valid_string(text, 1, max_prompt) or not text.strip():
            return Invalid()
        if message_id is not None and not _is_valid_string(message_id, 1, MAX_CLIENT_MESSAGE_ID):
            return Invalid()
        return Prompt(text, message_id)
    return Invalid()


# ----------------------------------------------------------------------------- the socket


@dataclass
class FuzzSocket:
    """One socket on one chat, and what the chat holds according to what it received."""

    live: LiveServer
    logs: CapturedLogs
    client: Client
    chat_id: str
    persisted: list[dict[str, Any]] = field(default_factory=list)  # index = seq - 1
    prompts: dict[str, dict[str, Any]] = field(default_factory=dict)  # by client_message_id
    turns: int = 0

    async def recv(self) -> dict[str, Any]:
        try:
            event = await self.client.recv(within=20)
        except ConnectionClosed as closed:
            code = closed.rcvd.code if closed.rcvd else None
            raise AssertionError(
                f"the server closed the socket (code {code})\n"
                f"{self.logs.describe(self.logs.errors())}"
            ) from None
        except TimeoutError:
            raise AssertionError(
                "no answer within 20 s\n" + self.logs.describe(self.logs.at_least(logging.WARNING))
            ) from None
        validate_server_event(event)
        assert event["chat_id"] == self.chat_id
        return event

    async def exchange(self, frame: str, kind: str) -> Reaction:
        """Send one frame, check its answer against the oracle, then ping."""
        FUZZ_CASES[kind] += 1
        expected = expected_reaction(frame, MAX_PROMPT)
        await self.client.send(frame)
        if isinstance(expected, Invalid | CancelNothing):
            error = await self.recv()
            assert error["type"] == "error", (frame, error)
            assert error["code"] == "invalid_request", (frame, error)
            assert error["turn_id"] is None and error["seq"] is None
            assert error["retryable"] is False
            assert 0 < len(error["message"]) <= 300, error
            assert "Traceback" not in error["message"] and 'File "' not in error["message"]
        elif isinstance(expected, Ping):
            assert (await self.recv())["type"] == "pong"
        elif isinstance(expected, Resume):
            await self._check_resume(expected.after_seq)
        else:
            await self._check_prompt(expected)
        await self.client.send('{"type": "ping"}')
        pong = await self.recv()
        assert pong["type"] == "pong", ("a stray frame after", frame, pong)
        errors = self.logs.errors()
        assert not errors, f"server errors after {frame!r}:\n{self.logs.describe(errors)}"
        return expected

    async def _check_resume(self, after_seq: int) -> None:
        await self.client.send('{"type": "ping"}')
        replayed = []
        while (event := await self.recv())["type"] != "pong":
            replayed.append(event)
        assert replayed == self.persisted[after_seq:]

    async def _check_prompt(self, prompt: Prompt) -> None:
        repeated = self.prompts.get(prompt.client_message_id or "")
        if repeated is not None and repeated["text"] == prompt.text:
            # An idempotent retry: that turn's user_prompt again, and nothing else.
            assert await self.recv() == repeated
            return
        if repeated is not None:
            # The id of another message: a client bug, refused, never the old answer.
            error = await self.recv()
            assert error["type"] == "error" and error["code"] == "invalid_request", error
            assert error["seq"] is None and error["turn_id"] is None
            return
        events = [await self.recv()]
        while events[-1]["type"] != "end_of_stream":
            events.append(await self.recv())
            if events[-1]["type"] == "approval_required":
                # Words may ask for a write ("reply-to" is one Hypothesis finds): the person
                # declines it, as a person would, and the turn goes on to its end.
                decision = {"decision": "reject", "approval_id": events[-1]["approval_id"]}
                await self.client.send(json.dumps({"type": "approval", **decision}))
        assert events[-1]["status"] == "completed", events  # whatever the words
        events.append(await self.recv())
        assert events[-1]["type"] == "suggested_prompts"
        first = events[0]
        assert first["type"] == "user_prompt", events
        assert first["text"] == prompt.text
        assert first["client_message_id"] == prompt.client_message_id
        assert {e["turn_id"] for e in events} == {first["turn_id"]}
        stored = [e for e in events if e["seq"] is not None]
        assert [e["seq"] for e in stored] == list(
            range(len(self.persisted) + 1, len(self.persisted) + len(stored) + 1)
        )
        self.persisted += stored
        self.turns += 1
        if prompt.client_message_id is not None:
            self.prompts[prompt.client_message_id] = first


@pytest.fixture
async def fuzz_socket(make_settings: Callable[..., Settings]) -> AsyncIterator[FuzzSocket]:
    async with serve(make_settings(**FUZZ_SETTINGS)) as live:
        with capture_logs(logging.WARNING) as logs:
            chat_id = uuid.uuid4().hex
            async with open_client(live.ws_url(chat_id)) as client:
                yield FuzzSocket(live, logs, client, chat_id)
                assert client.connection.close_code is None, "the socket was closed"


@pytest.fixture(scope="module", autouse=True)
def _report_cases() -> Iterator[None]:
    yield
    total = sum(FUZZ_CASES.values())
    print(f"\nfuzz cases tried: {total} ({dict(FUZZ_CASES)})")


# ----------------------------------------------------------------------------- strategies

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=16,
)
huge_numbers = st.sampled_from(
    [
        MAX_SEQ,
        MAX_SEQ + 1,
        2**53 + 1,
        2**63 - 1,
        2**63,
        2**64,
        -(2**63) - 1,
        10**30,
        10**400,
        1e308,
        -1e308,
        5e-324,
        -0.0,
        1.0,
        0.5,
    ]
)
surrogate_text = st.text(st.characters(categories=["Cs"]), min_size=1, max_size=3)
nul_text = st.text(max_size=10).map(lambda text: f"{text}\x00{text}")
prompt_texts = st.one_of(
    st.text(min_size=1, max_size=MAX_PROMPT),
    st.sampled_from(
        [
            "a" * MAX_PROMPT,
            "a" * (MAX_PROMPT + 1),
            "😀" * MAX_PROMPT,
            "😀" * (MAX_PROMPT + 1),
            "é" * MAX_PROMPT,
            " " * MAX_PROMPT,
            " " * (MAX_PROMPT - 1) + "x",
            "\u3000\u2028\t",
            "\ufeff",
            "x",
        ]
    ),
    st.text(min_size=MAX_PROMPT + 1, max_size=MAX_PROMPT + 40),
    st.text(" \t\r\n\u00a0\u2003", min_size=1, max_size=8),  # blank
    nul_text,
    surrogate_text,
)
# A small pool, so that repeated ids (idempotent retries) come up often.
message_ids = st.one_of(
    st.sampled_from(["retry-1", "retry-2", "x" * MAX_CLIENT_MESSAGE_ID, "😀" * 64, "é" * 64]),
    st.sampled_from(["", "x" * (MAX_CLIENT_MESSAGE_ID + 1), "😀" * 65, " ", "\x00"]),
    st.text(max_size=70),
    surrogate_text,
)
after_seqs = st.one_of(
    st.integers(-3, 40), huge_numbers, st.sampled_from(["1", "0", True, False, None, [], {}, [1]])
)
turn_ids = st.one_of(st.none(), st.text(max_size=40), st.integers(), st.booleans(), surrogate_text)
FIELD_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "text": prompt_texts,
    "client_message_id": message_ids,
    "after_seq": after_seqs,
    "turn_id": turn_ids,
}
FIELDS_OF = {
    "prompt": ["text", "client_message_id"],
    "cancel": ["turn_id"],
    "resume": ["after_seq"],
    "ping": [],
}
frame_types = st.one_of(
    st.sampled_from(list(FIELDS_OF)),
    st.sampled_from(["Prompt", "PING", "prompt ", "", "pong"]),
    json_values,
    surrogate_text,
)


def field_value(name: str) -> st.SearchStrategy[Any]:
    return FIELD_VALUES.get(name, st.nothing()) | json_values | huge_numbers


@st.composite
def structured_frames(draw: st.DrawFn) -> str:
    """Right ``type`` (mostly) with fields that are right, wrong, extra or missing."""
    kind = draw(frame_types)
    own = FIELDS_OF.get(kind, []) if isinstance(kind, str) else []
    names = [name for name in own if draw(st.integers(0, 9)) > 0]  # rarely missing
    names += draw(st.lists(st.sampled_from(list(FIELD_VALUES)) | st.text(max_size=8), max_size=2))
    frame: dict[str, Any] = {name: draw(field_value(name)) for name in names}
    if draw(st.integers(0, 19)) > 0:
        frame["type"] = kind
    frame = dict(draw(st.permutations(list(frame.items()))))
    return _dumps(frame, ascii_only=draw(st.booleans()))


def _dumps(value: Any, ascii_only: bool) -> str:
    text = json.dumps(value, ensure_ascii=ascii_only)
    try:
        text.encode()
    except UnicodeEncodeError:  # a lone surrogate: only its \u escape can be sent
        text = json.dumps(value)
    return text


edge_frames = st.one_of(
    st.builds(
        lambda text, mid: _dumps({"type": "prompt", "text": text, "client_message_id": mid}, True),
        prompt_texts,
        message_ids,
    ),
    st.builds(lambda text: _dumps({"type": "prompt", "text": text}, False), prompt_texts),
    st.builds(lambda seq: _dumps({"type": "resume", "after_seq": seq}, True), after_seqs),
    st.builds(lambda tid: _dumps({"type": "cancel", "turn_id": tid}, True), turn_ids),
    st.sampled_from(
        [
            '{"type":"resume","after_seq":' + "9" * 5000 + "}",  # JSON, too long for int()
            '{"type":"ping","x":' + "1" * 4500 + "}",
            '{"type":"resume","after_seq":1e400}',
            '{"type":"resume","after_seq":NaN}',
            '{"type":"resume","after_seq":-Infinity}',
            '{"type":"ping"}{"type":"ping"}',
            '{"type":"ping","type":"dance"}',
            '{"type":"dance","type":"ping"}',
            '{"type":"prompt","text":"hi","text":""}',
            '{"type":"prompt","text":"\\ud800"}',
            '{"type":"\\udfff"}',
            '{"type":"ping","\\ud83d":1}',
            '{"type":"ping","\\ud83d\\ude00":1}',
            '{"type":"prompt","text":"\\ud83d\\ude00"}',
            '{"type":"prompt","text":"a\\u0000"}',
            "[" * 5000 + "]" * 5000,
            '{"a":' * 3000 + "1" + "}" * 3000,
            "[" * 50_000,
            "null",
            "true",
            "0",
            '""',
            "[]",
            "{}",
            '{"type":null}',
            '{"type":{}}',
            "\x00",
            '\ufeff{"type":"ping"}',
            ' {"type":"ping"} ',
            "{'type': 'ping'}",
        ]
    ),
)


# ----------------------------------------------------------------------------- the fuzz


@sqlite_only
@settings(fuzz_settings, max_examples=150)
@given(frame=st.text(max_size=MAX_PROMPT * 2))
async def test_arbitrary_text_frames(fuzz_socket: FuzzSocket, frame: str) -> None:
    # Mostly not JSON, so mostly plain-text prompts: each runs a whole turn.
    await fuzz_socket.exchange(frame, "text")


@sqlite_only
@settings(fuzz_settings, max_examples=700)
@given(value=json_values, ascii_only=st.booleans())
async def test_random_json_values(fuzz_socket: FuzzSocket, value: Any, ascii_only: bool) -> None:
    await fuzz_socket.exchange(_dumps(value, ascii_only), "json")


@sqlite_only
@settings(fuzz_settings, max_examples=900)
@given(frame=structured_frames())
async def test_structured_but_wrong_frames(fuzz_socket: FuzzSocket, frame: str) -> None:
    await fuzz_socket.exchange(frame, "structured")


@sqlite_only
@settings(fuzz_settings, max_examples=400)
@given(frame=edge_frames)
async def test_limits_ids_and_resume_edges(fuzz_socket: FuzzSocket, frame: str) -> None:
    await fuzz_socket.exchange(frame, "edges")


@sqlite_only
async def test_the_valid_branches_are_reached(fuzz_socket: FuzzSocket) -> None:
    """A prompt, its retry and a resume go through the same checks as the fuzz."""
    prompt = json.dumps({"type": "prompt", "text": "hello there", "client_message_id": "m-1"})
    assert isinstance(await fuzz_socket.exchange(prompt, "checks"), Prompt)
    assert fuzz_socket.turns == 1 and len(fuzz_socket.persisted) >= 3
    assert isinstance(await fuzz_socket.exchange(prompt, "checks"), Prompt)  # the retry
    assert fuzz_socket.turns == 1
    assert await fuzz_socket.exchange('{"type":"resume","after_seq":1}', "checks") == Resume(1)


@pytest.mark.parametrize(
    "frame, reaction",
    [
        ("hello", Prompt("hello", None)),
        ("x" * (MAX_PROMPT + 1), Invalid()),
        ("   ", Invalid()),
        (
            '{"type":"prompt","text":"hi","client_message_id":"' + "m" * 64 + '"}',
            Prompt("hi", "m" * 64),
        ),
        ('{"type":"prompt","text":"hi","client_message_id":"' + "m" * 65 + '"}', Invalid()),
        ('{"type":"prompt","text":"hi","client_message_id":null}', Prompt("hi", None)),
        ('{"type":"prompt","text":"hi","extra":1}', Invalid()),
        ('{"type":"resume","after_seq":3}', Resume(3)),
        ('{"type":"resume","after_seq":true}', Invalid()),
        ('{"type":"resume","after_seq":3.0}', Invalid()),
        ('{"type":"resume","after_seq":2147483648}', Invalid()),
        ('{"type":"resume","after_seq":' + "9" * 5000 + "}", Invalid()),
        ('{"type":"cancel"}', CancelNothing()),
        ('{"type":"cancel","turn_id":5}', Invalid()),
        ('{"type":"ping"}', Ping()),
        ('{"type":"ping","x":null}', Invalid()),
        ("[1]", Invalid()),
        ('{"type":"prompt","text":"\\ud800"}', Invalid()),
        ('{"type":"prompt","text":"\\ud83d\\ude00"}', Prompt("\U0001f600", None)),
        ("[" * 5000, Invalid()),  # not JSON, so a prompt, and over the limit
        ("[" * 50, Prompt("[" * 50, None)),
    ],
)
def test_the_oracle(frame: str, reaction: Reaction) -> None:
    assert expected_reaction(frame, MAX_PROMPT) == reaction


# ----------------------------------------------------------------------------- both engines


def new_chat() -> str:
    return uuid.uuid4().hex


EDGE_VALUES = [
    ('{"type":"prompt","text":"a\\u0000b"}', "NUL"),
    ('{"type":"prompt","text":"hi","client_message_id":"a\\u0000"}', "NUL"),
    ("plain text with a NUL \x00 inside", "NUL"),
    ('{"type":"prompt","text":"\\ud800"}', "surrogate"),
    ('{"type":"\\ud800"}', "surrogate"),
    ('{"type":"ping","\\udc00":1}', "surrogate"),
    ('{"type":"resume","after_seq":2147483648}', "after_seq"),
    ('{"type":"resume","after_seq":100000000000000000000000}', "after_seq"),
    ('{"type":"resume","after_seq":' + "9" * 5000 + "}", "digits"),
]


@pytest.mark.parametrize("frame, fragment", EDGE_VALUES)
async def test_values_one_engine_cannot_store_are_refused_on_both(
    make_settings: Callable[..., Settings], frame: str, fragment: str
) -> None:
    async with serve(make_settings()) as live:
        with capture_logs(logging.WARNING) as logs:
            async with open_client(live.ws_url(new_chat())) as client:
                await client.send(frame)
                error = await client.recv()
                assert error["type"] == "error" and error["code"] == "invalid_request", error
                assert fragment in error["message"]
                await client.send({"type": "ping"})
                assert (await client.recv())["type"] == "pong"
                events = await client.turn("hello")  # and the chat still works
                assert events[0]["seq"] == 1 and events[-2]["status"] == "completed"
        assert not logs.errors(), logs.describe(logs.errors())


async def test_resume_past_the_end_of_the_chat_still_gets_new_events(
    make_settings: Callable[..., Settings],
) -> None:
    # E.g. a chat deleted and created again under its id: the client's old seq must not
    # hide the new chat's events.
    async with serve(make_settings()) as live:
        chat_id = new_chat()
        async with open_client(live.ws_url(chat_id, after_seq=40)) as client:
            first = await client.turn("hello")
            await client.send({"type": "resume", "after_seq": 500})
            second = await client.turn("what's the weather")
    seqs = [e["seq"] for e in first + second if e["seq"] is not None]
    assert seqs == list(range(1, len(seqs) + 1))
    assert first[0]["type"] == second[0]["type"] == "user_prompt"


async def test_cancel_after_end_of_stream_is_answered(
    make_settings: Callable[..., Settings],
) -> None:
    # The turn has ended for the client, even while it still writes its suggestions.
    async with serve(make_settings()) as live:
        async with open_client(live.ws_url(new_chat())) as client:
            await client.send({"type": "prompt", "text": "hello"})
            await client.until("end_of_stream")
            await client.send({"type": "cancel"})
            await client.send({"type": "ping"})
            rest = await client.until("pong")
    errors = [e for e in rest if e["type"] == "error"]
    assert len(errors) == 1 and errors[0]["code"] == "invalid_request", rest


@pytest.mark.parametrize("after_seq", ["2147483648", "99999999999999999", "１"])
async def test_out_of_range_after_seq_on_connect_is_4400(
    make_settings: Callable[..., Settings], after_seq: str
) -> None:
    async with serve(make_settings()) as live:
        async with open_client(live.ws_url(new_chat(), after_seq=after_seq)) as client:
            with pytest.raises(ConnectionClosed) as closed:
                await client.recv()
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 4400


async def test_default_prompt_limit_and_oversize_frames(
    make_settings: Callable[..., Settings],
) -> None:
    settings_ = make_settings()
    limit, max_bytes = settings_.max_prompt_chars, settings_.max_frame_bytes
    async with serve(settings_) as live:
        with capture_logs(logging.WARNING) as logs:
            async with open_client(live.ws_url(new_chat())) as client:
                events = await client.turn("a" * limit)  # exactly at the limit
                assert events[0]["text"] == "a" * limit
                await client.send({"type": "prompt", "text": "a" * (limit + 1)})
                error = await client.recv()
                assert error["code"] == "invalid_request" and str(limit) in error["message"]
            # Over the frame limit in bytes (the frame limit fits every legal prompt).
            wide = "😀" * (max_bytes // 4 + 1)
            for frame in (wide, b"\x00" * (max_bytes + 1), "x" * (max_bytes + 1)):
                async with open_client(live.ws_url(new_chat())) as client:
                    await client.connection.send(frame)
                    with pytest.raises(ConnectionClosed) as closed:
                        await client.recv()
                assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
            # A small binary frame is answered, not closed.
            async with open_client(live.ws_url(new_chat())) as client:
                await client.connection.send(b'{"type":"ping"}')
                error = await client.recv()
                assert error["code"] == "invalid_request" and "text" in error["message"]
        assert not logs.errors(), logs.describe(logs.errors())
