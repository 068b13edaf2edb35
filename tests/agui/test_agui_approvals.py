"""Approvals over AG-UI (PROTOCOL.md §3a as AG-UI interrupts): a tool with side effects
never runs until the person approves that exact call, and runs at most once.

The run that reaches such a call ends ``RUN_FINISHED`` with outcome ``interrupt``; the next
run's ``resume`` answers it. What ran is checked where it happens: the demo mailbox's own
record of sent mail.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import update

from storage.models import approvals
from tests.fakes.model_server import Call, FakeModelServer, Say, reply
from tests.support.agui import (
    MULTI,
    approve,
    chat_detail,
    new_thread,
    post,
    prompt_input,
    resume_input,
    sent_mail,
)
from tests.support.clients import open_client
from tests.support.servers import LiveServer

EMAIL = {"to": ["ada@example.com"], "subject": "Hi", "body": "Hello Ada", "cc": None, "bcc": None}


async def pending(live: LiveServer) -> list[dict[str, Any]]:
    async with live.client() as http:
        return list((await http.get("/api/approvals")).json()["approvals"])


async def expire_all(live: LiveServer) -> None:
    """The approval timeout passes (moved, not waited for)."""
    async with live.services.db.session(write=True) as session:
        await session.execute(
            update(approvals).values(expires_at=datetime.now(UTC) - timedelta(seconds=1))
        )
        await session.commit()


async def paused_run(live: LiveServer, thread: str) -> tuple[Any, dict[str, Any]]:
    run = await post(live, prompt_input(thread, MULTI))
    [asked] = run.interrupts
    return run, asked


async def test_the_run_stops_at_an_interrupt_for_the_exact_call(offline: LiveServer) -> None:
    thread = new_thread()
    run, asked = await paused_run(offline, thread)
    assert [e["toolCallName"] for e in run.of("TOOL_CALL_START")] == [
        "search_businesses_at_yelp",
        "send_google_email",
    ]
    # The search's card came; the email has its call and arguments, and no result.
    send = run.of("TOOL_CALL_START")[1]
    results = [e["toolCallId"] for e in run.of("TOOL_CALL_RESULT")]
    assert send["toolCallId"] not in results and len(results) == 1
    shown = json.loads(
        next(e for e in run.of("TOOL_CALL_ARGS") if e["toolCallId"] == send["toolCallId"])["delta"]
    )
    [record] = await pending(offline)
    assert asked["id"] == record["approval_id"] and asked["reason"] == "tool_call"
    assert asked["toolCallId"] == send["toolCallId"] == record["call_id"]
    assert asked["expiresAt"] == record["expires_at"]
    assert asked["metadata"]["switchboard"]["arguments"] == shown == record["arguments"]
    assert asked["metadata"]["switchboard"]["name"] == "send_google_email"
    # What the send will do, resolved before asking, as every front end shows it.
    effect = asked["metadata"]["switchboard"]["effect"]
    assert effect == record["effect"] and effect["summary"] == "send an email to bob@example.com"
    assert {"label": "From", "value": "me@example.com"} in effect["fields"]
    assert effect["summary"] in asked["message"]
    assert asked["responseSchema"]["required"] == ["approved"]
    assert "editedArgs" not in asked["responseSchema"]["properties"]
    assert "send_google_email" in asked["message"]
    assert sent_mail(offline) == []
    chat = await chat_detail(offline, thread)
    [turn] = chat["turns"]
    assert turn["status"] == "running"  # paused: still the thread's turn
    assert chat["events"][-1]["type"] == "approval_required"


async def test_approved_the_call_runs_once_with_the_arguments_shown(offline: LiveServer) -> None:
    thread = new_thread()
    run, asked = await paused_run(offline, thread)
    shown = asked["metadata"]["switchboard"]["arguments"]
    body = resume_input(thread, approve(asked["id"]))
    resumed = await post(offline, body)
    assert resumed.events[0]["type"] == "RUN_STARTED"
    assert resumed.events[0]["runId"] == body["runId"]
    # The call is not shown again: its result comes against the same tool call id.
    assert resumed.of("TOOL_CALL_START") == []
    [result] = resumed.of("TOOL_CALL_RESULT")
    assert result["toolCallId"] == asked["toolCallId"]
    card = json.loads(result["content"])
    assert card["response_type"] == "send_google_email"
    assert "bob@example.com" in resumed.text_of()
    assert resumed.last["outcome"] == {"type": "success"}
    paused_usage, own_usage = run.last["usage"][0], resumed.last["usage"][0]
    [mail] = sent_mail(offline)
    assert [mail["to"]] == shown["to"] and mail["subject"] == shown["subject"]

    # Replaying the same resume is safe: refused, nothing runs twice.
    again = await post(offline, resume_input(thread, approve(asked["id"])))
    assert again.types == ["RUN_ERROR"]
    assert again.last["code"] == "interrupt_resolved"
    assert "already approved" in again.last["message"]
    assert len(sent_mail(offline)) == 1

    chat = await chat_detail(offline, thread)
    [turn] = chat["turns"]
    assert turn["status"] == "completed"
    # Each run reports its own usage (AG-UI): together they are the turn's.
    for key, field in (("inputTokens", "input_tokens"), ("totalTokens", "total_tokens")):
        assert 0 < own_usage[key] and paused_usage[key] + own_usage[key] == turn["usage"][field]
    [decision] = chat["approvals"]
    assert decision["status"] == "approved" and decision["decided_via"] == "ag-ui"
    kinds = [e["type"] for e in chat["events"]]
    assert kinds.index("approval_resolved") < kinds.index("end_of_stream")
    outputs = [e for e in chat["events"] if e["type"] == "tool_output"]
    assert [e["output"]["response_type"] for e in outputs] == [
        "yelp_search_results",
        "send_google_email",
    ]


async def test_declined_nothing_runs_and_the_model_hears_why(
    scripted: Callable[..., Any], fake_model: FakeModelServer
) -> None:
    fake_model.script(
        Call("transfer_to_gmail", {}),
        Call("send_google_email", EMAIL, call_id="c_ada"),
        Say("Fine, I did not send it."),
    )
    thread = new_thread()
    async with scripted() as live:
        run = await post(live, prompt_input(thread, "email Ada"))
        [asked] = run.interrupts
        assert asked["toolCallId"] == "c_ada"
        resumed = await post(
            live, resume_input(thread, approve(asked["id"], False, reason="not today"))
        )
        assert resumed.of("TOOL_CALL_RESULT") == []  # a declined call has no result
        assert resumed.text_of() == "Fine, I did not send it."
        assert resumed.last["outcome"] == {"type": "success"}
        assert sent_mail(live) == []
        chat = await chat_detail(live, thread)
    [decision] = chat["approvals"]
    assert (decision["status"], decision["reason"]) == ("rejected", "not today")
    refusal = next(
        item
        for item in fake_model.turn_requests()[-1].body["input"]
        if item.get("type") == "function_call_output" and item["call_id"] == "c_ada"
    )
    assert refusal["output"].startswith("Not run:") and "not today" in refusal["output"]


async def test_a_cancelled_interrupt_is_a_rejection(offline: LiveServer) -> None:
    thread = new_thread()
    _, asked = await paused_run(offline, thread)
    resumed = await post(
        offline, resume_input(thread, {"interruptId": asked["id"], "status": "cancelled"})
    )
    assert resumed.of("TOOL_CALL_RESULT") == []
    assert resumed.last["outcome"] == {"type": "success"}
    assert sent_mail(offline) == []
    [decision] = (await chat_detail(offline, thread))["approvals"]
    assert decision["status"] == "rejected"


async def test_a_new_message_while_an_interrupt_is_open_is_refused(offline: LiveServer) -> None:
    thread = new_thread()
    _, asked = await paused_run(offline, thread)
    refused = await post(offline, prompt_input(thread, "never mind, find pizza"))
    assert refused.status == 200 and refused.types == ["RUN_ERROR"]
    assert refused.last["code"] == "interrupts_pending"
    assert asked["id"] in refused.last["message"]
    # A client that lost the interrupt finds it here, whole.
    [again] = refused.last["metadata"]["switchboard"]["interrupts"]
    assert again == asked
    # Nothing was lost: the interrupt still waits, and answering it still works.
    assert [a["approval_id"] for a in await pending(offline)] == [asked["id"]]
    resumed = await post(offline, resume_input(thread, approve(asked["id"])))
    assert resumed.last["outcome"] == {"type": "success"}
    assert len(sent_mail(offline)) == 1
    chat = await chat_detail(offline, thread)
    assert [t["prompt"] for t in chat["turns"]] == [MULTI]


async def test_answers_that_change_nothing(offline: LiveServer) -> None:
    thread = new_thread()
    _, asked = await paused_run(offline, thread)
    wrong = [
        (resume_input(thread, approve("ap_made_up")), "interrupt_unknown", "ap_made_up"),
        (
            resume_input(thread, approve(asked["id"], editedArgs={"to": ["eve@example.com"]})),
            "invalid_resume",
            "exactly as the person was shown it",
        ),
        (
            resume_input(
                thread, {"interruptId": asked["id"], "status": "resolved", "payload": "yes"}
            ),
            "invalid_resume",
            '{"approved": true}',
        ),
        (
            resume_input(
                thread,
                {"interruptId": asked["id"], "status": "resolved", "payload": {"approved": "y"}},
            ),
            "invalid_resume",
            "approved",
        ),
        (
            resume_input(thread, approve(asked["id"]), approve(asked["id"], False)),
            "invalid_resume",
            "answered twice",
        ),
    ]
    for body, code, words in wrong:
        answer = await post(offline, body)
        assert answer.types == ["RUN_ERROR"], body
        assert answer.last["code"] == code, answer.last
        assert words in answer.last["message"], answer.last
    assert [a["approval_id"] for a in await pending(offline)] == [asked["id"]]
    assert sent_mail(offline) == []
    # Another thread's interrupt is unknown here.
    other = new_thread()
    await post(offline, prompt_input(other, "find pizza in Boston"))
    elsewhere = await post(offline, resume_input(other, approve(asked["id"])))
    assert elsewhere.last["code"] == "interrupt_unknown"
    assert sent_mail(offline) == []


async def test_an_expired_interrupt_runs_nothing(offline: LiveServer) -> None:
    thread = new_thread()
    _, asked = await paused_run(offline, thread)
    await expire_all(offline)
    late = await post(offline, resume_input(thread, approve(asked["id"])))
    assert late.types == ["RUN_ERROR"] and late.last["code"] == "interrupt_expired"
    assert "nothing was run" in late.last["message"]
    assert sent_mail(offline) == []


async def test_every_open_interrupt_is_answered_at_once(
    scripted: Callable[..., Any], fake_model: FakeModelServer
) -> None:
    fake_model.script(
        Call("transfer_to_gmail", {}),
        reply(
            Call("send_google_email", EMAIL, call_id="c_a"),
            Call("send_google_email", {**EMAIL, "to": ["bob@example.com"]}, call_id="c_b"),
        ),
        Say("Done: Ada yes, Bob no."),
    )
    thread = new_thread()
    async with scripted() as live:
        run = await post(live, prompt_input(thread, "email Ada and Bob"))
        first, second = run.interrupts
        assert [first["toolCallId"], second["toolCallId"]] == ["c_a", "c_b"]
        partial = await post(live, resume_input(thread, approve(first["id"])))
        assert partial.types == ["RUN_ERROR"]
        assert partial.last["code"] == "interrupts_unanswered"
        assert second["id"] in partial.last["message"]
        assert len(await pending(live)) == 2 and sent_mail(live) == []
        resumed = await post(
            live,
            resume_input(
                thread,
                {"interruptId": second["id"], "status": "cancelled"},
                approve(first["id"]),
            ),
        )
        [result] = resumed.of("TOOL_CALL_RESULT")
        assert result["toolCallId"] == "c_a"
        assert resumed.text_of() == "Done: Ada yes, Bob no."
        assert [m["to"] for m in sent_mail(live)] == ["ada@example.com"]


async def test_an_interrupt_asked_in_the_chat_ui_is_answered_over_ag_ui(
    offline: LiveServer,
) -> None:
    """The thread is the chat: a pause the socket started is the AG-UI client's to answer."""
    thread = new_thread()
    async with open_client(offline.ws_url(thread)) as socket:
        await socket.send({"type": "prompt", "text": MULTI})
        asked = (await socket.until("approval_required"))[-1]
        refused = await post(offline, prompt_input(thread, "and pizza?"))
        [open_] = refused.last["metadata"]["switchboard"]["interrupts"]
        assert open_["id"] == asked["approval_id"]
        resumed = await post(offline, resume_input(thread, approve(open_["id"])))
        [result] = resumed.of("TOOL_CALL_RESULT")
        assert result["toolCallId"] == asked["call_id"]
        # The socket watching the chat sees the same turn go on.
        tail = await socket.until("end_of_stream")
    assert [e["type"] for e in tail if e["type"] == "tool_output"] == ["tool_output"]
    assert len(sent_mail(offline)) == 1
