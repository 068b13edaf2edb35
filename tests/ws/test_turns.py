"""A prompt on a real socket runs a real Agents SDK turn: every event, in order, persisted."""

from __future__ import annotations

import uuid
from typing import Any

from tests.support.clients import open_client
from tests.support.servers import LiveServer
from tests.support.waiting import wait_until
from websocket.protocol import validate_server_event

MULTI_AGENT = "find sushi in Boston and email the list to bob@example.com"
HIDDEN = "find coffee near me"
EPHEMERAL = {"llm_response_delta", "pong"}


def new_chat() -> str:
    return uuid.uuid4().hex


def persisted(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [event for event in events if event["type"] not in EPHEMERAL]


async def stored_after(live: LiveServer, chat_id: str, seq: int) -> list[dict[str, Any]]:
    """The chat's stored events after ``seq`` (none yet: an empty list)."""
    async with live.client() as http:
        events = (await http.get(f"/api/chats/{chat_id}/events")).json()["events"]
    return [event for event in events if event["seq"] > seq]


def assert_turn_order(events: list[dict[str, Any]]) -> None:
    """The order rules of PROTOCOL.md §3 for one turn."""
    types = [event["type"] for event in events]
    assert types[0] == "user_prompt"
    end = types.index("end_of_stream")
    assert all(t not in ("user_prompt", "end_of_stream") for t in types[1:end])
    assert types[end + 1 :] in ([], ["suggested_prompts"])
    seqs = [event["seq"] for event in persisted(events)]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), seqs
    calls: set[str] = set()
    for event in events[1:end]:
        if event["type"] == "tool_call":
            calls.add(event["call_id"])
        if event["type"] == "tool_output":
            assert event["call_id"] in calls, "tool_output without its tool_call"
        if event["type"] == "handoff":
            index = events.index(event)
            assert events[index + 1]["type"] == "agent_updated"
            assert events[index + 1]["new_agent"] == event["to_agent"]
    # The deltas of each message concatenate to its llm_response.
    text = ""
    for event in events:
        if event["type"] == "llm_response_delta":
            text += event["delta"]
        elif event["type"] == "llm_response":
            assert event["text"] == text
            text = ""
    for event in events:
        validate_server_event(event)


async def test_multi_agent_turn_emits_every_event_in_order(server: LiveServer) -> None:
    chat_id = new_chat()
    async with open_client(server.ws_url(chat_id), auto_approve=True) as client:
        events = await client.turn(MULTI_AGENT, client_message_id="m1")

    assert_turn_order(events)
    types = [event["type"] for event in events]
    for expected in (
        "user_prompt",
        "handoff",
        "agent_updated",
        "tool_call",
        "tool_output",
        "llm_response_delta",
        "llm_response",
        "end_of_stream",
        "suggested_prompts",
    ):
        assert expected in types, f"{expected} missing from {types}"
    assert events[0]["text"] == MULTI_AGENT and events[0]["client_message_id"] == "m1"
    assert events[0]["seq"] == 1
    agents = [event["new_agent"] for event in events if event["type"] == "agent_updated"]
    assert agents == ["Yelp", "GMail"]
    outputs = [
        event["output"]["response_type"] for event in events if event["type"] == "tool_output"
    ]
    assert outputs == ["yelp_search_results", "send_google_email"]
    sent = next(
        e
        for e in events
        if e["type"] == "tool_output" and e["output"]["response_type"] == "send_google_email"
    )
    assert sent["output"]["response"]["to"] == ["bob@example.com"]
    assert sent["current_agent"] == "GMail"
    end = next(event for event in events if event["type"] == "end_of_stream")
    assert end["status"] == "completed"
    assert end["usage"]["requests"] >= 3 and end["usage"]["total_tokens"] > 0
    assert all(event["chat_id"] == chat_id for event in events)
    assert len({event["turn_id"] for event in events}) == 1


async def test_persisted_events_equal_what_the_socket_sent(server: LiveServer) -> None:
    chat_id = new_chat()
    async with open_client(server.ws_url(chat_id), auto_approve=True) as client:
        events = await client.turn(MULTI_AGENT)
        events += await client.turn("what are my account balances")
    async with server.client() as http:
        stored = (await http.get(f"/api/chats/{chat_id}/events")).json()["events"]
        detail = (await http.get(f"/api/chats/{chat_id}")).json()
    assert stored == persisted(events)
    assert [turn["status"] for turn in detail["turns"]] == ["completed", "completed"]
    finals = [e["text"] for e in events if e["type"] == "llm_response"]
    assert detail["turns"][0]["final_text"] == finals[0]


async def test_hidden_tool_output_is_never_sent_nor_persisted(server: LiveServer) -> None:
    chat_id = new_chat()
    async with open_client(server.ws_url(chat_id), auto_approve=True) as client:
        events = await client.turn(HIDDEN)
    assert_turn_order(events)
    calls = {e["call_id"]: e["name"] for e in events if e["type"] == "tool_call"}
    outputs = {e["call_id"] for e in events if e["type"] == "tool_output"}
    hidden = [call_id for call_id, name in calls.items() if name == "resolve_user_location"]
    assert hidden, f"the location helper was not called: {calls}"
    assert not set(hidden) & outputs
    assert all(
        e["output"]["response_type"] != "user_location"
        for e in events
        if e["type"] == "tool_output"
    )
    async with server.client() as http:
        stored = (await http.get(f"/api/chats/{chat_id}/events")).json()["events"]
    stored_outputs = [e for e in stored if e["type"] == "tool_output"]
    assert stored_outputs and all(
        e["output"]["response_type"] != "user_location" for e in stored_outputs
    )
    assert not {e["call_id"] for e in stored_outputs} & set(hidden)


async def test_two_sockets_on_one_chat_receive_identical_events(server: LiveServer) -> None:
    chat_id = new_chat()
    async with (
        open_client(server.ws_url(chat_id), auto_approve=True) as first,
        open_client(server.ws_url(chat_id), auto_approve=True) as second,
    ):
        await first.send({"type": "ping"})
        await second.send({"type": "ping"})
        await first.until("pong")
        await second.until("pong")  # both subscribed before the turn starts
        sent = await first.turn(MULTI_AGENT)
        watched = await second.until("end_of_stream")
        watched += await second.until("suggested_prompts")
    assert [e for e in sent if e["type"] != "pong"] == [e for e in watched if e["type"] != "pong"]


async def test_repeated_client_message_id_starts_nothing(server: LiveServer) -> None:
    chat_id = new_chat()
    async with open_client(server.ws_url(chat_id), auto_approve=True) as client:
        first = await client.turn("what's in my inbox", client_message_id="same")
        await client.send(
            {"type": "prompt", "text": "what's in my inbox", "client_message_id": "same"}
        )
        again = await client.until("user_prompt")
    assert again[-1]["seq"] == first[0]["seq"] and again[-1]["turn_id"] == first[0]["turn_id"]
    async with server.client() as http:
        detail = (await http.get(f"/api/chats/{chat_id}")).json()
    assert len(detail["turns"]) == 1


async def test_prompt_while_a_turn_runs_is_refused(server: LiveServer) -> None:
    chat_id = new_chat()
    async with open_client(server.ws_url(chat_id), auto_approve=True) as client:
        await client.send({"type": "prompt", "text": MULTI_AGENT})
        await client.until("user_prompt")
        await client.send({"type": "prompt", "text": "and another"})
        events = await client.until("error")
        refusal = events[-1]
        assert refusal["code"] == "turn_in_progress" and refusal["retryable"] is True
        # A reply to this socket's frame, not an event of the running turn (PROTOCOL §3).
        assert refusal["seq"] is None and refusal["turn_id"] is None
        validate_server_event(refusal)
        rest = await client.until("end_of_stream")
    assert rest[-1]["status"] == "completed"
    assert not any(e["type"] == "user_prompt" for e in rest)


async def test_cancel_ends_the_turn_as_cancelled(make_settings: Any) -> None:
    from tests.support.servers import serve

    async with serve(make_settings(offline_delta_delay=0.02)) as live:
        chat_id = new_chat()
        async with open_client(live.ws_url(chat_id), auto_approve=True) as client:
            await client.send({"type": "prompt", "text": "search the web for python asyncio"})
            await client.until("llm_response_delta")
            await client.send({"type": "cancel"})
            events = await client.until("end_of_stream")
            assert events[-1]["status"] == "cancelled"
            # The chat is usable again right away.
            after = await client.turn("what are my account balances")
            end = next(e for e in after if e["type"] == "end_of_stream")
            assert end["status"] == "completed"
        async with live.client() as http:
            detail = (await http.get(f"/api/chats/{chat_id}")).json()
        assert [t["status"] for t in detail["turns"]] == ["cancelled", "completed"]


async def test_turn_survives_the_socket_and_resume_yields_exactly_the_rest(
    make_settings: Any,
) -> None:
    from tests.support.servers import serve

    async with serve(make_settings(offline_delta_delay=0.01)) as live:
        chat_id = new_chat()
        async with open_client(live.ws_url(chat_id), auto_approve=True) as client:
            await client.send({"type": "prompt", "text": MULTI_AGENT})
            before = await client.until("tool_output")
        last_seq = max(e["seq"] for e in before if e["seq"] is not None)
        # The turn goes on with no socket: wait until it has stored more than the client
        # saw, so the resume below must replay from storage, not only follow live.
        await wait_until(
            lambda: stored_after(live, chat_id, last_seq),
            what="the turn to store events after the socket dropped",
        )
        async with open_client(
            live.ws_url(chat_id, after_seq=last_seq), auto_approve=True
        ) as client:
            after = await client.until("end_of_stream")
            after += await client.until("suggested_prompts")
        async with live.client() as http:
            stored = (await http.get(f"/api/chats/{chat_id}/events")).json()["events"]

    seen = persisted(before) + persisted(after)
    assert [e["seq"] for e in seen] == list(range(1, len(seen) + 1))
    assert seen == stored
    # A drop mid-message: at most one catch-up delta, and the text still adds up.
    final = next(e for e in after if e["type"] == "llm_response")["text"]
    deltas = "".join(e["delta"] for e in after if e["type"] == "llm_response_delta")
    assert final.endswith(deltas) or deltas == final


async def test_resume_frame_replays_once(server: LiveServer) -> None:
    chat_id = new_chat()
    async with open_client(server.ws_url(chat_id), auto_approve=True) as client:
        events = await client.turn("what's in my inbox")
        await client.send({"type": "resume", "after_seq": 1})
        replay = [await client.recv() for _ in range(len(persisted(events)) - 1)]
        await client.send({"type": "ping"})
        tail = await client.until("pong")
    assert replay == persisted(events)[1:]
    assert [e["type"] for e in tail] == ["pong"]


async def test_a_first_turn_that_was_stopped_still_titles_the_chat(server: LiveServer) -> None:
    chat_id = new_chat()
    async with open_client(server.ws_url(chat_id), auto_approve=True) as client:
        await client.send({"type": "prompt", "text": MULTI_AGENT})
        await client.until("llm_response_delta")
        await client.send({"type": "cancel"})
        assert (await client.until("end_of_stream"))[-1]["status"] == "cancelled"
    async with server.client() as http:

        async def title() -> str | None:
            return (await http.get(f"/api/chats/{chat_id}")).json()["title"]

        # Titled just after the end_of_stream, by the turn's task.
        await wait_until(title, what="the stopped chat's title")
