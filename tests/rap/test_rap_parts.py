"""The pure parts of RAP: configuration, signatures, the pending-call registry, results,
and the ``tool_timeout`` mapping of the stream translator."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from agents import Agent
from agents.items import ToolCallItem, ToolCallOutputItem
from agents.stream_events import RunItemStreamEvent
from openai.types.responses import ResponseFunctionToolCall

from app.settings import SettingsError, load_settings
from connectors.adapters import to_plain_text
from connectors.rap.config import OAuthMessage, RapToolset, ToolResultMessage
from connectors.rap.pending import CallState, Delivery, DuplicateCall, PendingCalls
from connectors.rap.results import RapToolResult, result_from_message, timeout_result
from connectors.rap.runtime import schema_problem
from connectors.rap.signing import sign, token_digest, verify
from connectors.tooling import ToolResult
from connectors.untrusted import fence
from tests.fakes.rap_tool import TOOLS
from tests.fakes.rap_tool import signature as third_party_signature
from websocket.stream import StreamTranslator
from wire.events import Event

NOTES = Agent(name="Notes")


# ----------------------------------------------------------------------------- settings


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("notes=http://127.0.0.1:9", "http://127.0.0.1:9"),
        ('[{"name": "notes", "url": "https://notes.example.com/"}]', "https://notes.example.com"),
    ],
)
def test_rap_tools_setting_forms(value: str, expected: str) -> None:
    [server] = load_settings(rap_tools=value).rap_tools
    assert server.name == "notes" and server.url == expected


@pytest.mark.parametrize(
    ("overrides", "says"),
    [
        ({"rap_tools": "notes"}, "name=URL pairs"),
        ({"rap_tools": "[{"}, "SWITCHBOARD_RAP_TOOLS"),
        ({"rap_tools": "Notes=https://a.example"}, "server 0 (Notes): name"),
        ({"rap_tools": "a=https://a.example,a=https://b.example"}, "unique; repeated: a"),
        ({"rap_tools": '[{"name": "a", "url": "ftp://a.example"}]'}, "server 0 (a): url"),
        (
            {"rap_tools": '[{"name": "a", "url": "https://a.example", "secret": "short"}]'},
            "at least 16 characters",
        ),
        (
            {
                "rap_tools": '[{"name": "a", "url": "https://a.example", "tools": [{"name": "t", '
                '"inputSchema": {"type": "object", "properties": 3}}]}]'
            },
            "tools.0.inputSchema",
        ),
        ({"rap_tools": '[{"name": "a", "url": "https://a.example", "tmeout": 3}]'}, "tmeout"),
        (
            {"rap_tools": "a=https://a.example", "host": "0.0.0.0", "auth_mode": "token"},
            "SWITCHBOARD_RAP_CALLBACK_URL must be set",
        ),
        ({"rap_callback_url": "switchboard.example.com"}, "SWITCHBOARD_RAP_CALLBACK_URL"),
        ({"rap_timeout": "0"}, "SWITCHBOARD_RAP_TIMEOUT"),
    ],
)
def test_bad_rap_settings_stop_the_start_naming_the_variable(
    overrides: dict[str, Any], says: str
) -> None:
    with pytest.raises(SettingsError, match="SWITCHBOARD_RAP") as raised:
        load_settings(**overrides)
    assert says in str(raised.value)


def test_callback_url_defaults_to_this_loopback_server() -> None:
    assert load_settings(port=8123).resolved_rap_callback_url == "http://127.0.0.1:8123"
    chosen = load_settings(rap_callback_url="https://sb.example.com/")
    assert chosen.resolved_rap_callback_url == "https://sb.example.com"


def test_the_fake_servers_toolset_is_valid_and_bad_ones_are_not() -> None:
    toolset = {"name": "notes", "endpoint": "http://127.0.0.1:1/invoke", "tools": TOOLS}
    assert [t.name for t in RapToolset.model_validate(toolset).tools] == [
        "edit_file",
        "lookup",
        "watch_repo",
    ]
    for broken in (
        {**toolset, "tools": []},
        {**toolset, "endpoint": "mailto:x@y"},
        {**toolset, "tools": [TOOLS[0], TOOLS[0]]},
    ):
        with pytest.raises(ValueError):
            RapToolset.model_validate(broken)


# ----------------------------------------------------------------------------- signatures


def test_signatures_verify_and_match_a_third_party_implementation() -> None:
    body = b'{"type":"tool_result"}'
    secret = "0123456789abcdef-secret"
    now = 1_700_000_000
    ours = sign(secret, body, now)
    assert ours == third_party_signature(secret, body, now)
    assert verify(secret, body, ours, now=now + 10)
    assert not verify(secret, body + b" ", ours, now=now)  # another body
    assert not verify("another-secret-entirely", body, ours, now=now)
    assert not verify(secret, body, ours, now=now + 301)  # stale: a replay
    assert not verify(secret, body, None, now=now)
    assert not verify(secret, body, "t=abc,v1=00", now=now)
    # A server rotating its secret may send both signatures.
    rotated = f"{ours},v1={sign('the-old-secret-value', body, now).split('v1=')[1]}"
    assert verify(secret, body, rotated, now=now)
    assert verify("the-old-secret-value", body, rotated, now=now)


# ----------------------------------------------------------------------------- registry


def open_call(calls: PendingCalls, id: str = "call_1") -> Any:
    return calls.open(
        server="notes",
        operation="lookup",
        group_id="chat",
        id=id,
        call_id=None,
        user_id="u",
        turn_id="t",
    )


async def test_a_call_is_answered_once_then_remembered() -> None:
    calls = PendingCalls()
    call, token = open_call(calls)
    assert calls.find(token) is call and calls.find(token + "x") is None
    assert call.digest == token_digest(token) and token not in repr(call)
    with pytest.raises(DuplicateCall):
        open_call(calls)
    waiter = asyncio.create_task(calls.wait(call, within=5))
    # One turn of the loop, not a wait for time: the new task runs to its first await (on
    # the call's future), so the result below reaches a waiting tool.
    await asyncio.sleep(0)
    assert calls.deliver(call, "first", "f1") is Delivery.ACCEPTED
    assert await waiter == "first"
    assert calls.deliver(call, "first", "f1") is Delivery.DUPLICATE
    assert calls.deliver(call, "other", "f2") is Delivery.CONFLICT
    assert call.state is CallState.ANSWERED and calls.waiting == 0
    open_call(calls)  # the id is free again once answered


async def test_a_result_before_the_wait_is_kept_and_a_late_one_is_gone() -> None:
    calls = PendingCalls()
    early, _ = open_call(calls, "early")
    assert calls.deliver(early, "fast", "f") is Delivery.ACCEPTED
    assert await calls.wait(early, within=1) == "fast"
    late, token = open_call(calls, "late")
    with pytest.raises(TimeoutError):
        await calls.wait(late, within=0.01)
    assert late.state is CallState.EXPIRED
    assert calls.find(token) is late
    assert calls.deliver(late, "too late", "f") is Delivery.GONE


async def test_a_cancelled_wait_closes_the_call_and_old_calls_are_forgotten() -> None:
    now = [1000.0]
    calls = PendingCalls(retain=60, clock=lambda: now[0])
    call, token = open_call(calls)
    waiter = asyncio.create_task(calls.wait(call, within=5))
    # One turn of the loop (see above): a task cancelled before it ever ran would never
    # reach the wait whose cancellation closes the call.
    await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert call.state is CallState.CLOSED
    assert calls.deliver(call, "x", "f") is Delivery.GONE
    # Remembered for ``retain`` seconds after it closed, forgotten from then on (checked
    # when a callback looks the call up); the registry's clock is the test's.
    now[0] += 59.9
    assert calls.find(token) is call
    now[0] += 0.1
    assert calls.find(token) is None


# ----------------------------------------------------------------------------- results


def message(**fields: Any) -> ToolResultMessage:
    return ToolResultMessage.model_validate(
        {"type": "tool_result", "group_id": "g", "id": "i", "text": "done", **fields}
    )


def test_the_model_reads_the_full_text_whatever_the_display() -> None:
    text = "x" * 50_000
    result = result_from_message(
        message(text=text, display_as=[{"type": "text", "content": "short"}]),
        agent_name="Notes",
        friendly_name="Notes: lookup",
        debug_info={"rap_server": "notes"},
    )
    assert isinstance(result, RapToolResult) and isinstance(result, ToolResult)
    # What the SDK sends as the function_call_output: all of it, fenced as outside data.
    assert str(result) == fence(text, "remote tool")
    assert len(to_plain_text(dict(result))) < len(text)  # the generic adapter would cut it
    assert result["response_type"] == "rap_result"
    assert result["display_as"] == [{"type": "text", "content": "short"}]
    assert result["debug_info"] == {"rap_server": "notes"}


def test_error_texts_and_oauth_messages() -> None:
    error = result_from_message(
        message(text="Error: quota exceeded; retry in 60 s"),
        agent_name="Notes",
        friendly_name="Notes: x",
        debug_info={},
    )
    assert error["response_type"] == "error"
    assert str(error) == (
        "Error: the remote tool reported this failure:\n"
        + fence("Error: quota exceeded; retry in 60 s", "remote tool")
    )
    not_error = result_from_message(
        message(text="Errors found: none"),
        agent_name="Notes",
        friendly_name="Notes: x",
        debug_info={},
    )
    assert not_error["response_type"] == "rap_result"
    oauth = result_from_message(
        OAuthMessage.model_validate(
            {"type": "oauth", "group_id": "g", "id": "i", "auth_url": "https://a.example/auth"}
        ),
        agent_name="Notes",
        friendly_name="Notes: x",
        debug_info={},
    )
    assert oauth["response_type"] == "open_window"
    assert oauth["response"] == {"url": "https://a.example/auth"}
    assert "authorization" in str(oauth)


@pytest.mark.parametrize(
    "segments",
    [
        [{"type": "diff", "content": "a patch as a string"}],
        [{"type": "diff", "content": {"path": "a.py"}}],
        [{"type": "text", "content": {"not": "a string"}}],
        [{"type": "", "content": "x"}],
        [{"content": "x"}],
        [{"type": "link", "content": "javascript:alert(1)"}],
        [{"type": "link", "content": {"url": "javascript:alert(1)", "title": "Open"}}],
        [{"type": "x" * 65, "content": "x"}],
    ],
)
def test_bad_display_segments_are_refused(segments: list[Any]) -> None:
    with pytest.raises(ValueError):
        message(display_as=segments)


def test_unknown_segment_types_pass_through_for_the_ui_to_skip() -> None:
    segments = [
        {"type": "chart", "content": {"series": [1, 2]}},
        {"type": "rating", "content": 4.5},
        {"type": "count", "content": 3},
        {"type": "flags", "content": [True, None]},
        {"type": "link", "content": {"url": "https://notes.example.com/r", "title": "Report"}},
        {"type": "text", "content": "fallback"},
    ]
    result = result_from_message(
        message(display_as=segments), agent_name="Notes", friendly_name="Notes: x", debug_info={}
    )
    assert result["display_as"] == segments


def test_schema_problems_name_the_field() -> None:
    schema = TOOLS[0]["inputSchema"]
    assert schema_problem(schema, {"path": "a", "content": "b"}) is None
    assert "'content' is a required property" in str(schema_problem(schema, {"path": "a"}))
    assert schema_problem(schema, {"path": 3, "content": "b"}).startswith("path: ")


# ----------------------------------------------------------------------------- translator


def _translate(value: Any) -> list[Event]:
    translator = StreamTranslator("Switchboard", {}, {})
    call = ResponseFunctionToolCall(
        type="function_call", name="lookup", arguments="{}", call_id="c1", id="fc_1"
    )
    translator.translate(
        RunItemStreamEvent(name="tool_called", item=ToolCallItem(agent=NOTES, raw_item=call))
    )
    raw = {"type": "function_call_output", "call_id": "c1", "output": str(value)}
    return translator.translate(
        RunItemStreamEvent(
            name="tool_output", item=ToolCallOutputItem(agent=NOTES, raw_item=raw, output=value)
        )
    )


def test_a_timeout_result_is_reported_as_tool_timeout() -> None:
    result = timeout_result(
        agent_name="Notes", operation="lookup", seconds=2, debug_info={"rap_server": "notes"}
    )
    out = _translate(result)
    assert [e.type for e in out] == ["tool_output", "error"]
    assert out[1].payload()["code"] == "tool_timeout" and out[1].payload()["retryable"] is True
    assert "debug_info" in out[0].payload()["output"]  # persisted; stripped on the wire
    assert json.loads(json.dumps(out[0].payload()))  # plain JSON


@pytest.mark.parametrize(
    "debug_info",
    [
        None,
        {},
        {"error_code": "tool_error"},
        {"error_code": "something_else"},
        {"error_code": ["tool_timeout"]},
    ],
)
def test_other_errors_stay_tool_error(debug_info: dict[str, Any] | None) -> None:
    from connectors.tooling import error_result

    out = _translate(error_result("Notes", "it broke", debug_info))
    assert out[1].payload()["code"] == "tool_error" and out[1].payload()["retryable"] is False


def test_a_text_over_the_cap_is_cut_before_it_is_fenced() -> None:
    # The longest text a message may carry (ToolResultMessage), about 4 times the cap.
    text = "remote line\n" * (1_000_000 // 12)
    result = result_from_message(
        message(text=text, display_as=[{"type": "markdown", "content": text}]),
        agent_name="Notes",
        friendly_name="Notes: lookup",
        debug_info={"rap_server": "notes"},
    )
    assert result["truncated"] is True and text.startswith(result["response"])
    assert len(result["response"]) + len(result["display_as"][0]["content"]) <= 262_144
    said = str(result)
    assert said.startswith(fence(result["response"], "remote tool"))
    assert said.endswith("Say so if it matters, or ask the tool for less.]")
    assert "262,144-character limit" in said


def test_a_schema_problem_does_not_carry_a_pasted_value_on() -> None:
    schema = {"type": "object", "properties": {"query": {"type": "string", "maxLength": 100}}}
    problem = schema_problem(schema, {"query": "pasted " * 10_000})
    assert problem is not None and problem.startswith("query: ")
    assert len(problem) <= 320
