"""Approvals over a real socket on a real server (PROTOCOL.md §2, §3a, §7): nothing with
side effects runs before the person approves the exact call; every front end obeys it."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import update

from storage.models import approvals
from storage.session import ChatSession
from tests.support.clients import Client, open_client
from tests.support.servers import LiveServer, serve
from tests.ws.test_turns import assert_turn_order
from websocket.protocol import validate_server_event

EMAIL = "find sushi in Boston and email the list to bob@example.com"
LOCAL_USER = "local"


def new_chat() -> str:
    return uuid.uuid4().hex


def sent_mail(server: LiveServer, user_id: str = LOCAL_USER) -> list[Any]:
    """What the demo mailbox sent for the user (the demo Gmail backend's own record)."""
    return list(server.services.demo.for_user(user_id).namespace("gmail").get("sent", []))


async def ask(client: Client, text: str = EMAIL) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Send ``text`` and receive up to the turn's pause; returns the events and the request."""
    await client.send({"type": "prompt", "text": text})
    events = await client.until("approval_required")
    return events, events[-1]


async def pending(server: LiveServer, token: str | None = None) -> list[dict[str, Any]]:
    async with server.client(token) as http:
        response = await http.get("/api/approvals")
    assert response.status_code == 200
    return response.json()["approvals"]


async def test_a_send_pauses_and_runs_only_after_approve(server: LiveServer) -> None:
    chat_id = new_chat()
    async with open_client(server.ws_url(chat_id)) as client:
        before, asked = await ask(client)
        validate_server_event(asked)
        call = next(
            e for e in before if e["type"] == "tool_call" and e["name"] == "send_google_email"
        )
        assert asked["call_id"] == call["call_id"] and asked["arguments"] == call["arguments"]
        assert asked["arguments"]["to"] == ["bob@example.com"]
        assert (asked["name"], asked["description"], asked["current_agent"]) == (
            "send_google_email",
            "Sending an email",
            "GMail",
        )
        assert datetime.fromisoformat(asked["expires_at"]) > datetime.now(UTC) + timedelta(hours=23)
        # Paused: nothing sent, nothing more happens, and the pause is listed.
        await client.send({"type": "ping"})
        assert [e["type"] for e in await client.until("pong")] == ["pong"]
        assert sent_mail(server) == []
        listed = await pending(server)
        assert [(a["approval_id"], a["chat_id"], a["name"]) for a in listed] == [
            (asked["approval_id"], chat_id, "send_google_email")
        ]

        await client.decide(asked["approval_id"])
        after = await client.decide_until_end()
        after += await client.until("suggested_prompts")
    events = before + after
    assert_turn_order(events)
    types = [e["type"] for e in after]
    assert types[0] == "approval_resolved" and types.index("tool_output") > 0
    resolved = after[0]
    assert (resolved["decision"], resolved["reason"], resolved["approval_id"]) == (
        "approved",
        None,
        asked["approval_id"],
    )
    assert resolved["decided_by"] == LOCAL_USER and resolved["decided_via"].startswith("socket:")
    # The suggestions know the whole turn: the places shown before the pause too.
    suggested = next(e for e in after if e["type"] == "suggested_prompts")
    assert "Show reviews for the top result" in suggested["prompts"]
    output = next(e for e in after if e["type"] == "tool_output")
    assert output["call_id"] == asked["call_id"]
    assert output["output"]["response"]["to"] == asked["arguments"]["to"]
    assert output["output"]["response"]["body"] == asked["arguments"]["body"]
    assert next(e for e in after if e["type"] == "end_of_stream")["status"] == "completed"
    assert len(sent_mail(server)) == 1
    assert await pending(server) == []
    async with server.client() as http:
        detail = (await http.get(f"/api/chats/{chat_id}")).json()
        stored = (await http.get(f"/api/chats/{chat_id}/events")).json()["events"]
    assert [t["status"] for t in detail["turns"]] == ["completed"]
    record = detail["approvals"][0]
    assert (record["status"], record["decided_by"], record["arguments"]) == (
        "approved",
        LOCAL_USER,
        asked["arguments"],
    )
    assert record["decided_via"] == resolved["decided_via"] and record["decided_at"]
    assert stored == [e for e in events if e["seq"] is not None]


async def test_reject_sends_nothing_and_the_model_is_told_why(server: LiveServer) -> None:
    chat_id = new_chat()
    async with open_client(server.ws_url(chat_id)) as client:
        _before, asked = await ask(client)
        await client.decide(asked["approval_id"], approve=False, reason="not Bob, Alice")
        after = await client.decide_until_end()
    resolved = after[0]
    assert (resolved["type"], resolved["decision"], resolved["reason"]) == (
        "approval_resolved",
        "rejected",
        "not Bob, Alice",
    )
    assert not any(e["type"] == "tool_output" and e["call_id"] == asked["call_id"] for e in after)
    answer = next(e for e in after if e["type"] == "llm_response")["text"]
    assert "didn't send" in answer and "not Bob, Alice" in answer
    assert after[-1]["status"] == "completed"
    assert sent_mail(server) == []
    # The model read the refusal, reason included, and the next turn's history keeps it.
    items = await ChatSession(server.services.db, chat_id).get_items()
    refusal = next(
        i
        for i in items
        if i.get("type") == "function_call_output" and i.get("call_id") == asked["call_id"]
    )
    assert refusal["output"].startswith("Not run:") and "not Bob, Alice" in refusal["output"]


async def test_a_new_prompt_supersedes_the_pending_approval(server: LiveServer) -> None:
    chat_id = new_chat()
    async with open_client(server.ws_url(chat_id)) as client:
        _before, asked = await ask(client)
        await client.send({"type": "prompt", "text": "what are my account balances"})
        events = await client.until("user_prompt")
        events += await client.decide_until_end()
    types = [e["type"] for e in events]
    assert types[:3] == ["approval_resolved", "end_of_stream", "user_prompt"]
    assert "error" not in types  # no turn_in_progress
    assert (events[0]["decision"], events[0]["decided_by"], events[0]["decided_via"]) == (
        "superseded",
        None,
        "prompt",
    )
    assert events[1]["status"] == "cancelled" and events[1]["turn_id"] == asked["turn_id"]
    assert events[2]["turn_id"] != asked["turn_id"]
    assert [e["status"] for e in events if e["type"] == "end_of_stream"][-1] == "completed"
    assert sent_mail(server) == []
    async with server.client() as http:
        detail = (await http.get(f"/api/chats/{chat_id}")).json()
    assert [t["status"] for t in detail["turns"]] == ["cancelled", "completed"]
    assert detail["approvals"][0]["status"] == "superseded"


async def test_cancel_supersedes_the_pending_approval(server: LiveServer) -> None:
    chat_id = new_chat()
    async with open_client(server.ws_url(chat_id)) as client:
        _before, asked = await ask(client)
        await client.send({"type": "cancel", "turn_id": asked["turn_id"]})
        events = await client.until("end_of_stream")
        await client.decide(asked["approval_id"])
        refused = await client.until("error")
    assert [(e["type"], e.get("decision"), e.get("status")) for e in events] == [
        ("approval_resolved", "superseded", None),
        ("end_of_stream", None, "cancelled"),
    ]
    assert events[0]["decided_via"] == "cancel"
    assert refused[-1]["code"] == "invalid_request"
    assert "already superseded" in refused[-1]["message"]
    assert sent_mail(server) == []


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        ({"approval_id": "ap_nope", "decision": "approve"}, "no approval 'ap_nope' in this chat"),
        ({"decision": "approve"}, "approval.approval_id is required"),
        ({"approval_id": "ap_x", "decision": "yes"}, 'approval.decision must be "approve" or'),
        (
            {"approval_id": "ap_x", "decision": "reject", "reason": "x" * 501},
            "approval.reason must be a string of at most 500",
        ),
        ({"approval_id": "", "decision": "approve"}, "approval.approval_id must be a string"),
        (
            {"approval_id": "ap_x", "decision": "approve", "when": "now"},
            "unknown field 'when' in approval frame",
        ),
    ],
)
async def test_bad_approval_frames_change_nothing(
    server: LiveServer,
    frame: dict[str, Any],
    message: str,
) -> None:
    chat_id = new_chat()
    async with open_client(server.ws_url(chat_id)) as client:
        _before, asked = await ask(client)
        await client.send({"type": "approval", **frame})
        error = (await client.until("error"))[-1]
        validate_server_event(error)
        assert error["code"] == "invalid_request" and error["message"].startswith(message)
        assert error["seq"] is None and error["turn_id"] is None
        # Still pending, still decidable: the bad frame lost nothing.
        assert [a["approval_id"] for a in await pending(server)] == [asked["approval_id"]]
        await client.decide(asked["approval_id"])
        assert (await client.decide_until_end())[-1]["status"] == "completed"
    assert len(sent_mail(server)) == 1


async def test_another_chats_approval_cannot_be_decided_here(server: LiveServer) -> None:
    first, second = new_chat(), new_chat()
    async with open_client(server.ws_url(first)) as client:
        _before, asked = await ask(client)
    async with open_client(server.ws_url(second)) as client:
        await client.decide(asked["approval_id"])
        error = (await client.until("error"))[-1]
    assert error["message"] == f"no approval '{asked['approval_id']}' in this chat"
    assert [a["status"] for a in await pending(server)] == ["pending"]


async def test_a_second_decision_is_refused_and_the_first_stands(server: LiveServer) -> None:
    chat_id = new_chat()
    async with open_client(server.ws_url(chat_id)) as client:
        _before, asked = await ask(client)
        await client.decide(asked["approval_id"], approve=False)
        await client.decide(asked["approval_id"], approve=True)
        events = await client.until("end_of_stream")
        error = next(e for e in events if e["type"] == "error" and e["seq"] is None)
    assert error["message"] == (
        f"approval '{asked['approval_id']}' is already rejected; the first decision stands"
    )
    assert [e["decision"] for e in events if e["type"] == "approval_resolved"] == ["rejected"]
    assert sent_mail(server) == []


async def test_every_socket_sees_the_pause_and_any_can_decide(server: LiveServer) -> None:
    chat_id = new_chat()
    async with open_client(server.ws_url(chat_id)) as first:
        _before, asked = await ask(first)
        # A socket that joins later (a reload, another device) replays the pending request.
        async with open_client(server.ws_url(chat_id, after_seq=0)) as second:
            replayed = await second.until("approval_required")
            assert replayed[-1] == asked
            await second.decide(asked["approval_id"])
            theirs = await second.until("end_of_stream")
        ours = await first.until("end_of_stream")
    assert [e for e in ours if e["seq"] is not None] == [e for e in theirs if e["seq"] is not None]
    assert ours[0]["type"] == "approval_resolved"


async def test_rest_decides_from_another_client(server: LiveServer) -> None:
    chat_id = new_chat()
    async with open_client(server.ws_url(chat_id)) as client:
        _before, asked = await ask(client)
        url = f"/api/chats/{chat_id}/approvals/{asked['approval_id']}"
        async with server.client() as http:
            decided = await http.post(url, json={"decision": "approve", "reason": " ok "})
            again = await http.post(url, json={"decision": "reject"})
        events = await client.until("end_of_stream")
    assert decided.status_code == 200
    body = decided.json()["approval"]
    assert (body["status"], body["decided_via"], body["reason"]) == ("approved", "rest", "ok")
    assert again.status_code == 409
    assert again.json() == {
        "error": {
            "code": "invalid_request",
            "message": (
                f"approval '{asked['approval_id']}' is already approved; the first decision stands"
            ),
        }
    }
    assert events[0]["type"] == "approval_resolved" and events[0]["decided_via"] == "rest"
    assert events[-1]["status"] == "completed"
    assert len(sent_mail(server)) == 1


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"decision": "maybe"}, 400, "decision: Input should be 'approve' or 'reject'"),
        ({}, 400, "decision: Field required"),
        ({"decision": "approve", "extra": 1}, 400, "extra: Extra inputs are not permitted"),
        ({"decision": "reject", "reason": 5}, 400, "reason: Input should be a valid string"),
        ({"decision": "reject", "reason": "r" * 501}, 400, "reason: String should have at most"),
        (["approve"], 400, "the body must be a JSON object"),
        ("approve", 400, "the body must be a JSON object"),
    ],
)
async def test_rest_refuses_malformed_decisions(
    server: LiveServer,
    body: Any,
    status: int,
    message: str,
) -> None:
    chat_id = new_chat()
    async with open_client(server.ws_url(chat_id)) as client:
        _before, asked = await ask(client)
    async with server.client() as http:
        url = f"/api/chats/{chat_id}/approvals/{asked['approval_id']}"
        response = await http.post(
            url,
            content=body if isinstance(body, str) else None,
            json=None if isinstance(body, str) else body,
        )
    assert response.status_code == status
    assert response.json()["error"]["message"].startswith(message)
    assert [a["status"] for a in await pending(server)] == ["pending"]


async def test_rest_unknown_and_other_chats_approvals_are_404(server: LiveServer) -> None:
    chat_id, other = new_chat(), new_chat()
    async with open_client(server.ws_url(chat_id)) as client:
        _before, asked = await ask(client)
    async with open_client(server.ws_url(other)) as client:
        await client.send({"type": "ping"})
        await client.until("pong")
    async with server.client() as http:
        for url in (
            f"/api/chats/{chat_id}/approvals/ap_nope",
            f"/api/chats/{other}/approvals/{asked['approval_id']}",
            f"/api/chats/no-such-chat/approvals/{asked['approval_id']}",
            f"/api/chats/{chat_id}/approvals/{'x' * 65}",
        ):
            response = await http.post(url, json={"decision": "approve"})
            assert response.status_code == 404, url
            assert response.json()["error"]["code"] == "not_found"
    assert [a["status"] for a in await pending(server)] == ["pending"]


async def test_another_users_approval_is_invisible_and_undecidable(
    make_settings: Any,
) -> None:
    settings = make_settings(auth_mode="token", offline_delta_delay=0)
    async with serve(settings) as live:
        users = live.services
        from storage.users import UserRepository

        repo = UserRepository(users.db)
        alice, alice_token = await repo.create_user("alice")
        _bob, bob_token = await repo.create_user("bob")
        chat_id = new_chat()
        async with open_client(live.ws_url(chat_id, token=alice_token)) as client:
            _before, asked = await ask(client)
        assert await pending(live, bob_token) == []
        async with live.client(bob_token) as http:
            response = await http.post(
                f"/api/chats/{chat_id}/approvals/{asked['approval_id']}",
                json={"decision": "approve"},
            )
        assert response.status_code == 404
        # Bob's own chat cannot reach it either.
        async with open_client(live.ws_url(new_chat(), token=bob_token)) as client:
            await client.decide(asked["approval_id"])
            error = (await client.until("error"))[-1]
        assert error["message"] == f"no approval '{asked['approval_id']}' in this chat"
        assert [a["status"] for a in await pending(live, alice_token)] == ["pending"]
        assert sent_mail(live, alice.id) == []


async def pass_every_deadline(server: LiveServer) -> None:
    """The approval timeout passes: moved, not waited for."""
    async with server.services.db.session(write=True) as session:
        await session.execute(
            update(approvals).values(expires_at=datetime.now(UTC) - timedelta(seconds=1))
        )
        await session.commit()


async def test_an_expired_approval_is_treated_as_a_rejection(server: LiveServer) -> None:
    chat_id = new_chat()
    async with open_client(server.ws_url(chat_id)) as client:
        _before, asked = await ask(client)
        await pass_every_deadline(server)
        assert await server.services.turns.expire_approvals() == 1  # the sweep
        events = await client.until("end_of_stream")
        await client.decide(asked["approval_id"])
        late = (await client.until("error"))[-1]
    assert (events[0]["decision"], events[0]["decided_via"]) == ("expired", "expiry")
    assert events[-1]["status"] == "completed"
    answer = next(e for e in events if e["type"] == "llm_response")["text"]
    assert "expired" in answer
    assert late["message"].endswith("is already expired; the first decision stands")
    assert sent_mail(server) == []


async def test_a_decision_racing_the_expiry_sweep_is_refused_as_expired(
    server: LiveServer,
) -> None:
    chat_id = new_chat()
    async with open_client(server.ws_url(chat_id)) as client:
        _before, asked = await ask(client)
        await pass_every_deadline(server)
        # Due but not swept yet: the decision itself resolves it as expired.
        await client.decide(asked["approval_id"])
        events = await client.until("end_of_stream")
    error = next(e for e in events if e["type"] == "error" and e["seq"] is None)
    assert error["message"] == (
        f"approval '{asked['approval_id']}' had expired, so nothing was run"
    )
    assert error["approval_id"] == asked["approval_id"]
    assert [e["decision"] for e in events if e["type"] == "approval_resolved"] == ["expired"]
    assert sent_mail(server) == []


async def test_simultaneous_decisions_run_the_tool_once(server: LiveServer) -> None:
    chat_id = new_chat()
    async with (
        open_client(server.ws_url(chat_id)) as first,
        open_client(server.ws_url(chat_id)) as second,
    ):
        _before, asked = await ask(first)
        await second.until("approval_required")
        url = f"/api/chats/{chat_id}/approvals/{asked['approval_id']}"
        async with server.client() as http:
            results = await asyncio.gather(
                first.decide(asked["approval_id"]),
                second.decide(asked["approval_id"]),
                http.post(url, json={"decision": "approve"}),
                http.post(url, json={"decision": "approve"}),
            )
        events = await first.until("end_of_stream")
    rest_codes = sorted(r.status_code for r in results[2:])
    resolved = [e for e in events if e["type"] == "approval_resolved"]
    assert len(resolved) == 1
    assert len([e for e in events if e["type"] == "tool_output"]) == 1
    assert len(sent_mail(server)) == 1
    # Whoever won, the others were told the first decision stands.
    assert rest_codes in ([200, 409], [409, 409])


async def test_a_prompt_racing_a_decision_never_closes_the_turn_it_resumes(
    server: LiveServer,
) -> None:
    # The race, made certain with a hook: a prompt arrives in the instant after the
    # decision has claimed the paused turn and before it runs here again. The turn is then
    # neither paused nor registered as running: it must not be taken for an orphan.
    turns = server.services.turns
    store = turns.approvals
    decide = store.decide
    refused: list[BaseException] = []

    async def decide_then_prompt(*args: Any, **kwargs: Any) -> Any:
        decided = await decide(*args, **kwargs)
        try:
            await turns.submit(
                LOCAL_USER, decided.event.chat_id, "a prompt in between", None, decided.event.ts
            )
        except Exception as exc:  # noqa: BLE001 - what it raises is the assertion
            refused.append(exc)
        return decided

    store.decide = decide_then_prompt  # type: ignore[method-assign]
    chat_id = new_chat()
    try:
        async with open_client(server.ws_url(chat_id)) as client:
            _before, asked = await ask(client)
            await client.decide(asked["approval_id"])
            events = await client.until("end_of_stream")
    finally:
        del store.decide
    assert [type(exc).__name__ for exc in refused] == ["TurnInProgress"]
    assert events[-1]["status"] == "completed"
    assert [e["type"] for e in events].count("end_of_stream") == 1
    assert len(sent_mail(server)) == 1


async def test_a_pause_that_cannot_be_stored_ends_the_turn_and_runs_nothing(
    server: LiveServer,
) -> None:
    store = server.services.turns.approvals

    async def database_gone(*args: Any, **kwargs: Any) -> Any:
        raise OSError("connection refused")  # the database went away at that moment

    store.pause = database_gone  # type: ignore[method-assign]
    chat_id = new_chat()
    try:
        async with open_client(server.ws_url(chat_id)) as client:
            await client.send({"type": "prompt", "text": EMAIL})
            events = await client.until("end_of_stream")
    finally:
        del store.pause
    types = [e["type"] for e in events]
    assert "approval_required" not in types and "tool_output" in types  # Yelp's, only
    error = next(e for e in events if e["type"] == "error")
    assert error["code"] == "server_error" and "connection refused" not in error["message"]
    assert events[-1]["status"] == "failed"
    assert sent_mail(server) == []
    assert await server.services.store.running_turn(chat_id) is None
    assert await pending(server) == []
