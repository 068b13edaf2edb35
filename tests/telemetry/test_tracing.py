"""OpenTelemetry tracing through real turns over a real uvicorn socket, into the SDK's
in-memory exporter: the turn's span, its tool calls, the Agents SDK's spans (each model
call, each tool) and the database's, with their parents and attributes, and no prompt text.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from app.settings import Settings
from app.telemetry import exporting_to
from storage.users import LOCAL_USER_ID
from tests.fakes.model_server import Call, FakeModelServer, Say, reply, running_model_server
from tests.support.clients import open_client
from tests.support.models import API_KEY
from tests.support.servers import serve
from tests.telemetry.spans import ancestors, attribute_text, metric, named, parent_of

# Two agents and two tools with the offline model, nothing that waits for an approval.
MULTI_AGENT = "find sushi in Boston and show my account balances"


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


def assert_no_content(spans: list[Any], events: list[dict[str, Any]]) -> None:
    text = attribute_text(spans)
    prompt = next(e["text"] for e in events if e["type"] == "user_prompt")
    answer = next(e["text"] for e in events if e["type"] == "llm_response")
    assert prompt not in text and answer not in text
    for call in (e for e in events if e["type"] == "tool_call" and e["arguments"]):
        for separators in ((", ", ": "), (",", ":")):
            assert json.dumps(call["arguments"], separators=separators) not in text


def turn_span_of(spans: list[Any], turn_id: str) -> Any:
    turns = [
        s
        for s in named(spans, "switchboard.turn")
        if s.attributes["switchboard.turn_id"] == turn_id
    ]
    assert len(turns) == 1, [s.attributes for s in named(spans, "switchboard.turn")]
    return turns[0]


async def test_a_turn_is_one_trace_with_its_tools_agents_and_database_work(
    make_settings: Callable[..., Settings], exporter: InMemorySpanExporter
) -> None:
    chat_id = uuid.uuid4().hex
    with exporting_to(exporter):
        async with serve(make_settings()) as live:
            async with open_client(live.ws_url(chat_id), auto_approve=True) as client:
                events = await client.turn(MULTI_AGENT)
    end = next(e for e in events if e["type"] == "end_of_stream")
    calls = [e for e in events if e["type"] == "tool_call"]
    assert len(calls) == 2
    spans = list(exporter.get_finished_spans())

    turn = turn_span_of(spans, end["turn_id"])
    attrs = turn.attributes
    assert attrs["switchboard.chat_id"] == chat_id
    assert attrs["switchboard.user_hash"] == hashlib.sha256(LOCAL_USER_ID.encode()).hexdigest()[:16]
    assert LOCAL_USER_ID not in {str(v) for v in attrs.values()}  # hashed, never as is
    assert attrs["switchboard.turn.status"] == "completed"
    assert attrs["switchboard.turn.resumed"] is False
    assert attrs["switchboard.front_end"] == "socket"
    assert attrs["gen_ai.usage.input_tokens"] == end["usage"]["input_tokens"] > 0
    assert attrs["gen_ai.usage.output_tokens"] == end["usage"]["output_tokens"] > 0
    assert attrs["switchboard.turn.model_requests"] == end["usage"]["requests"]
    assert turn.parent is None  # a trace of its own

    # Our view of each tool call: child of the turn, with its name and outcome.
    tools = named(spans, "switchboard.tool_call")
    assert sorted(s.attributes["gen_ai.tool.call.id"] for s in tools) == sorted(
        c["call_id"] for c in calls
    )
    for span in tools:
        call = next(c for c in calls if c["call_id"] == span.attributes["gen_ai.tool.call.id"])
        assert span.attributes["gen_ai.tool.name"] == call["name"]
        assert span.attributes["switchboard.agent"] == call["current_agent"]
        assert span.attributes["switchboard.tool.outcome"] == "ok"
        assert parent_of(span, spans) is turn

    # The Agents SDK's spans (OpenInference): its run nests under the turn; each tool it
    # ran is a span of its own under an agent's.
    in_trace = [s for s in spans if s.context.trace_id == turn.context.trace_id]
    sdk = [s for s in in_trace if "openinference.span.kind" in (s.attributes or {})]
    root = [s for s in sdk if parent_of(s, spans) is turn]
    assert len(root) == 1 and root[0].attributes["openinference.span.kind"] == "AGENT"
    agents = {s.name for s in sdk if s.attributes["openinference.span.kind"] == "AGENT"}
    assert {"Switchboard", "Yelp"} <= agents
    sdk_tools = [s for s in sdk if s.attributes["openinference.span.kind"] == "TOOL"]
    assert {c["name"] for c in calls} <= {s.name for s in sdk_tools}
    for span in sdk_tools:
        assert turn in ancestors(span, spans)

    # The database's statements, in the same trace (the turn's writes and reads).
    db_spans = [s for s in in_trace if any(k.startswith("db.") for k in (s.attributes or {}))]
    assert db_spans, sorted({s.name for s in in_trace})
    assert all(turn in ancestors(s, spans) for s in db_spans)
    # The turn's own plain-SQL transactions (storage/plain_sql.py) among them: its events.
    queries = [str(s.attributes["db.query.text"]) for s in db_spans]
    assert any("INSERT INTO chat_events" in q for q in queries), queries

    # No prompt, answer or tool arguments anywhere by default.
    assert_no_content(in_trace, events)


@pytest.fixture
async def fake_model() -> AsyncIterator[FakeModelServer]:
    async with running_model_server(FakeModelServer(api_key=API_KEY)) as server:
        yield server


async def test_each_model_call_is_a_span_with_its_model_and_tokens(
    make_settings: Callable[..., Settings],
    exporter: InMemorySpanExporter,
    fake_model: FakeModelServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    fake_model.script(
        Call("transfer_to_yelp", {}),
        Call("search_businesses_at_yelp", {"term": "sushi", "location": "Boston, MA"}),
        reply(Say("Five sushi places in Boston."), input_tokens=300, output_tokens=40),
    )
    settings = make_settings(
        model=f"responses:fake-large@{fake_model.base_url()}",
        model_api_key=API_KEY,
        model_timeout=5,
        model_call_timeout=20,
        # Suggestions and the title by the offline model: every token counted is the turn's.
        suggest_model="offline",
    )
    chat_id = uuid.uuid4().hex
    with exporting_to(exporter):
        async with serve(settings) as live:
            async with open_client(live.ws_url(chat_id), auto_approve=True) as client:
                events = await client.turn("find sushi in Boston")
            async with live.client() as http:
                metrics = (await http.get("/metrics")).text
    end = next(e for e in events if e["type"] == "end_of_stream")
    assert end["status"] == "completed"
    spans = list(exporter.get_finished_spans())
    turn = turn_span_of(spans, end["turn_id"])
    llm = [
        s
        for s in spans
        if (s.attributes or {}).get("openinference.span.kind") == "LLM"
        and s.context.trace_id == turn.context.trace_id
    ]
    # The three calls of the turn (suggestions and titles are traces of their own).
    assert len(llm) == 3, [s.name for s in llm]
    for span in llm:
        assert span.attributes["llm.model_name"] == "fake-large"
        assert turn in ancestors(span, spans)
    assert sum(s.attributes["llm.token_count.prompt"] for s in llm) == end["usage"]["input_tokens"]
    assert (
        sum(s.attributes["llm.token_count.completion"] for s in llm)
        == end["usage"]["output_tokens"]
    )
    assert_no_content(spans, events)  # nor in the suggestions' and title's traces
    # The same tokens in /metrics, by model.
    assert metric(metrics, "switchboard_model_requests_total", "fake-large") == 3
    for name, key in (("input", "input_tokens"), ("output", "output_tokens")):
        counted = metric(metrics, f"switchboard_model_{name}_tokens_total", "fake-large")
        assert counted == end["usage"][key]
    assert (
        metric(metrics, "switchboard_model_tokens_total", "fake-large")
        == end["usage"]["total_tokens"]
    )


async def test_a_failed_tool_call_has_the_error_outcome(
    make_settings: Callable[..., Settings],
    exporter: InMemorySpanExporter,
    fake_model: FakeModelServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Arguments that are not JSON fail the call (the model sees the error and answers);
    the call's span says so, and the turn still completes."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    fake_model.script(
        Call("transfer_to_yelp", {}),
        Call("search_businesses_at_yelp", "{not json", call_id="call_bad"),
        reply(Say("That search failed.")),
    )
    fake_model.structured["FollowUps"] = {"prompts": []}
    fake_model.structured["ChatTitle"] = {"title": "Sushi"}
    settings = make_settings(
        model=f"responses:fake-large@{fake_model.base_url()}",
        model_api_key=API_KEY,
        model_timeout=5,
        model_call_timeout=20,
        suggest_timeout=5,
    )
    with exporting_to(exporter):
        async with serve(settings) as live:
            async with open_client(live.ws_url(uuid.uuid4().hex)) as client:
                events = await client.turn("find sushi in Boston")
    output = next(e for e in events if e["type"] == "tool_output")
    assert output["output"]["response_type"] == "error"
    assert events[-2]["type"] == "end_of_stream" and events[-2]["status"] == "completed"
    spans = list(exporter.get_finished_spans())
    (tool,) = named(spans, "switchboard.tool_call")
    assert tool.attributes["gen_ai.tool.call.id"] == "call_bad"
    assert tool.attributes["switchboard.tool.outcome"] == "error"
    assert tool.status.status_code.name == "ERROR"
    turn = turn_span_of(spans, output["turn_id"])
    assert turn.status.status_code.name != "ERROR"
