"""Approvals on ``/v1/responses`` (PROTOCOL.md §3a): a tool with side effects never runs
unapproved. The response that reaches it ends ``completed`` with a
``switchboard:approval_request`` item; the client answers with ``previous_response_id`` and
``switchboard:approval_response`` items, and the turn resumes into the new response.

What ran is checked where it happens: the demo mailbox's own record of sent mail.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from agents import Agent, OpenAIResponsesModel, RunConfig, Runner
from sqlalchemy import update

from storage.approvals import NOT_RUN
from storage.models import approvals
from tests.fakes.model_server import Call, FakeModelServer, Say, reply
from tests.openresponses.spec import check_resource, check_stream, parse_sse
from tests.openresponses.test_open_responses_client import stream_raw
from tests.support.clients import client_for
from tests.support.servers import LiveServer

MULTI = "find sushi in Boston and email the list to bob@example.com"
LOCAL_USER = "local"
RESPONSE = "switchboard:approval_response"
REQUEST = "switchboard:approval_request"
TOOL_CALL = "switchboard:tool_call"


def sent_mail(live: LiveServer, user_id: str = LOCAL_USER) -> list[Any]:
    """What the demo Gmail backend sent for the user (its own record)."""
    return list(live.services.demo.for_user(user_id).namespace("gmail").get("sent", []))


async def post(live: LiveServer, body: dict[str, Any]) -> httpx.Response:
    async with httpx.AsyncClient(base_url=live.http, timeout=30) as http:
        return await http.post("/v1/responses", json=body)


async def create(live: LiveServer, **body: Any) -> dict[str, Any]:
    answer = await post(live, {"model": "switchboard", **body})
    assert answer.status_code == 200, answer.text
    check_resource(answer.json())
    return dict(answer.json())


def answer(approval_id: str, approve: bool = True, **fields: Any) -> dict[str, Any]:
    return {"type": RESPONSE, "approval_id": approval_id, "approve": approve, **fields}


def requests_of(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [item for item in body["output"] if item["type"] == REQUEST]


def kinds(body: dict[str, Any]) -> list[tuple[str, str | None]]:
    return [(item["type"], item.get("name")) for item in body["output"]]


def text_of(body: dict[str, Any]) -> str:
    return str(body["output"][-1]["content"][0]["text"])


async def chats(live: LiveServer) -> list[dict[str, Any]]:
    """Every chat with its turns, approvals and events, oldest first."""
    out = []
    async with live.client() as http:
        for chat in reversed((await http.get("/api/chats")).json()["chats"]):
            detail = (await http.get(f"/api/chats/{chat['id']}")).json()
            events = (await http.get(f"/api/chats/{chat['id']}/events")).json()["events"]
            out.append({**detail, "id": chat["id"], "events": events})
    return out


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


EMAIL = {"to": ["ada@example.com"], "subject": "Hi", "body": "Hello Ada", "cc": None, "bcc": None}


def email(to: str) -> dict[str, Any]:
    return {**EMAIL, "to": [to]}


# ----------------------------------------------------------------------------- the pause


async def test_a_send_ends_the_response_with_an_approval_request_and_sends_nothing(
    offline: LiveServer,
) -> None:
    paused = await create(offline, input=MULTI)
    assert paused["status"] == "completed" and paused["error"] is None
    # The paused call is no function_call (which would ask the client to run it) and has
    # no output: only the request for approval stands for it.
    assert kinds(paused) == [
        (TOOL_CALL, "search_businesses_at_yelp"),
        (REQUEST, "send_google_email"),
        ("message", None),
    ]
    [asked] = requests_of(paused)
    # Then a message, for clients that read only messages: what waits, and how to answer.
    said = text_of(paused)
    assert said.startswith(
        "This needs your approval before it runs: send an email to bob@example.com "
        f"(approval_id {asked['approval_id']}). Nothing has run yet."
    )
    assert f'previous_response_id "{paused["id"]}"' in said and RESPONSE in said
    [chat] = await chats(offline)
    [event] = [e for e in chat["events"] if e["type"] == "approval_required"]
    assert asked["status"] == "completed" and asked["id"].startswith("apr_")
    assert (asked["approval_id"], asked["call_id"], asked["name"], asked["expires_at"]) == (
        event["approval_id"],
        event["call_id"],
        "send_google_email",
        event["expires_at"],
    )
    # arguments: a JSON string (as mcp_approval_request's), exactly what would run.
    assert json.loads(asked["arguments"]) == event["arguments"]
    assert event["arguments"]["to"] == ["bob@example.com"]
    # What it will do, resolved before asking: the same on every front end.
    assert asked["effect"] == event["effect"]
    assert asked["effect"]["summary"] == "send an email to bob@example.com"
    assert {"label": "To", "value": "bob@example.com"} in asked["effect"]["fields"]
    assert sent_mail(offline) == []
    assert [a["approval_id"] for a in await pending(offline)] == [asked["approval_id"]]
    assert chat["events"][-1]["type"] == "approval_required"  # no end_of_stream: paused
    # Stored as it was sent, and chainable.
    stored = (
        await client_for(offline).responses.with_raw_response.retrieve(paused["id"])
    ).http_response.json()
    assert stored == paused


async def test_approving_sends_the_email_once_and_the_new_response_answers(
    offline: LiveServer,
) -> None:
    paused = await create(offline, input=MULTI)
    [asked] = requests_of(paused)
    resumed = await create(
        offline, previous_response_id=paused["id"], input=[answer(asked["approval_id"])]
    )
    assert resumed["status"] == "completed"
    assert resumed["previous_response_id"] == paused["id"]
    call, message = resumed["output"]
    assert (call["type"], call["name"], call["call_id"], call["status"]) == (
        TOOL_CALL,
        "send_google_email",
        asked["call_id"],
        "completed",
    )
    assert json.loads(call["arguments"]) == json.loads(asked["arguments"])
    assert "bob@example.com" in call["output"]
    assert message["type"] == "message" and "sent" in text_of(resumed)
    [mail] = sent_mail(offline)
    assert "bob@example.com" in mail["to"]

    [chat] = await chats(offline)  # the same chat, the same turn, now completed
    [turn] = chat["turns"]
    assert turn["status"] == "completed" and turn["final_text"] == text_of(resumed)
    [resolved] = [e for e in chat["events"] if e["type"] == "approval_resolved"]
    assert (resolved["decision"], resolved["decided_via"], resolved["decided_by"]) == (
        "approved",
        "responses",
        LOCAL_USER,
    )
    assert chat["events"][-1]["type"] == "end_of_stream"
    assert await pending(offline) == []
    assert (await client_for(offline).responses.retrieve(resumed["id"])).output_text == text_of(
        resumed
    )

    # The conversation goes on from the resumed response, in the same chat.
    after = await create(offline, previous_response_id=resumed["id"], input="thanks!")
    assert after["status"] == "completed"
    [chat] = await chats(offline)
    assert [t["status"] for t in chat["turns"]] == ["completed", "completed"]
    assert len(sent_mail(offline)) == 1


async def test_rejecting_with_a_reason_runs_nothing_and_the_answer_says_so(
    offline: LiveServer,
) -> None:
    paused = await create(offline, input=MULTI)
    [asked] = requests_of(paused)
    resumed = await create(
        offline,
        previous_response_id=paused["id"],
        input=[answer(asked["approval_id"], False, reason="  not Bob, Alice  ")],
    )
    assert resumed["status"] == "completed"
    # Nothing ran: no call, no output; the model read why and answers.
    assert kinds(resumed) == [("message", None)]
    assert "didn't send" in text_of(resumed) and "not Bob, Alice" in text_of(resumed)
    assert sent_mail(offline) == []
    [chat] = await chats(offline)
    [record] = chat["approvals"]
    assert (record["status"], record["reason"], record["decided_via"]) == (
        "rejected",
        "not Bob, Alice",
        "responses",
    )
    assert [t["status"] for t in chat["turns"]] == ["completed"]


async def test_streamed_pause_and_approval_follow_the_spec(offline: LiveServer) -> None:
    paused = parse_sse(await stream_raw(offline, {"model": "switchboard", "input": MULTI}))
    check_stream(paused)
    # The approval request, whole, then the message saying what waits, streamed as any
    # message is, before response.completed.
    assert paused.types[-9:] == [
        "response.output_item.added",
        "response.output_item.done",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    added, done = paused.events[-9]["item"], paused.events[-8]["item"]
    assert (added["type"], added["status"], done["status"]) == (REQUEST, "in_progress", "completed")
    final = paused.final
    assert final["status"] == "completed" and final["output"][-2] == done
    assert final["output"][-1]["content"][0]["text"] == paused.events[-4]["text"]
    assert "send an email to bob@example.com" in final["output"][-1]["content"][0]["text"]
    assert sent_mail(offline) == []

    resumed = parse_sse(
        await stream_raw(
            offline,
            {
                "model": "switchboard",
                "previous_response_id": final["id"],
                "input": [answer(done["approval_id"])],
            },
        )
    )
    check_stream(resumed)
    assert kinds(resumed.final) == [(TOOL_CALL, "send_google_email"), ("message", None)]
    types = resumed.types
    # The call with its output comes once it ran, then the streamed answer.
    assert types[2:5] == [
        "response.output_item.added",
        "response.output_item.done",
        "response.output_item.added",
    ]
    assert "response.output_text.delta" in types and types[-1] == "response.completed"
    assert resumed.final["previous_response_id"] == final["id"]
    assert len(sent_mail(offline)) == 1
    async with offline.client() as http:
        stored = (await http.get(f"/v1/responses/{resumed.final['id']}")).json()
    assert stored == resumed.final


# Its stream helper warns about the unknown item it keeps (see the client tests).
@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")
async def test_the_openai_client_sees_the_request_and_answers_it(offline: LiveServer) -> None:
    client = client_for(offline)
    async with client.responses.stream(model="switchboard", input=MULTI) as stream:
        paused = await stream.get_final_response()
    # An unknown item type is kept as it came (the spec: clients ignore what they do not
    # know), with every field readable.
    asked = paused.output[-2]
    # The answer's text says what waits and how to answer (it was "" before).
    assert asked.type == REQUEST
    assert paused.output_text.startswith("This needs your approval before it runs: send an")
    request = asked.model_extra or {}  # the fields its stand-in type does not have
    assert set(request) == {"approval_id", "call_id", "name", "arguments", "effect", "expires_at"}
    resumed = await client.responses.create(
        model="switchboard", previous_response_id=paused.id, input=[answer(request["approval_id"])]
    )  # type: ignore[list-item]
    assert [item.type for item in resumed.output] == [TOOL_CALL, "message"]
    assert "sent" in resumed.output_text and len(sent_mail(offline)) == 1


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "streamed"])
async def test_the_agents_sdk_reads_what_waits_as_its_final_output(
    offline: LiveServer, streamed: bool
) -> None:
    model = OpenAIResponsesModel("switchboard", client_for(offline))
    agent = Agent(name="Assistant", instructions="Help.", model=model)
    config = RunConfig(tracing_disabled=True)
    if streamed:
        result: Any = Runner.run_streamed(agent, MULTI, run_config=config)
        async for _ in result.stream_events():
            pass
    else:
        result = await Runner.run(agent, MULTI, run_config=config)
    # It was "" before the paused response carried a message.
    assert result.final_output.startswith(
        "This needs your approval before it runs: send an email to bob@example.com"
    )
    assert sent_mail(offline) == []


# ----------------------------------------------------------------------------- bad answers


async def test_bad_approval_responses_are_refused_and_change_nothing(offline: LiveServer) -> None:
    paused = await create(offline, input=MULTI)
    [asked] = requests_of(paused)
    approval_id, prev = asked["approval_id"], paused["id"]
    other = await create(offline, input="what are my account balances")
    ok = answer(approval_id)
    cases: list[tuple[dict[str, Any], int, str, str | None, str]] = [
        (
            {"input": [{**ok, "when": "now"}]},
            400,
            "unknown_parameter",
            "input[0].when",
            "unknown field 'when' in a switchboard:approval_response item; its fields are "
            "type, approval_id, approve and reason",
        ),
        (
            {"input": [{**ok, "approve": "yes"}]},
            400,
            "invalid_value",
            "input[0].approve",
            "input[0].approve: Input should be a valid boolean",
        ),
        (
            {"input": [{"type": RESPONSE, "approval_id": approval_id}]},
            400,
            "invalid_value",
            "input[0].approve",
            "input[0].approve: Field required",
        ),
        (
            {"input": [{**ok, "reason": 5}]},
            400,
            "invalid_value",
            "input[0].reason",
            "input[0].reason: Input should be a valid string",
        ),
        (
            {"input": [{**ok, "approve": False, "reason": "r" * 501}]},
            400,
            "invalid_value",
            "input[0].reason",
            "input[0].reason: String should have at most 500 characters",
        ),
        (
            {"input": [{**ok, "approval_id": ""}]},
            400,
            "invalid_value",
            "input[0].approval_id",
            "input[0].approval_id: String should have at least 1",
        ),
        (
            {"input": [{**ok, "reason": "a\x00b", "approve": False}]},
            400,
            "invalid_value",
            "input[0].reason",
            "reason must not contain NUL",
        ),
        (
            {"input": [answer("ap_nope")]},
            400,
            "unknown_approval",
            "input[0].approval_id",
            f"response '{prev}' has no approval request 'ap_nope': its approval requests "
            f"are '{approval_id}'",
        ),
        (
            {"input": [ok], "previous_response_id": other["id"]},
            400,
            "unknown_approval",
            "input[0].approval_id",
            f"response '{other['id']}' has no approval request "
            f"'{approval_id}': it asked for no approval",
        ),
        (
            {"input": [ok, answer(approval_id, False)]},
            400,
            "duplicate_approval_response",
            "input[1].approval_id",
            f"approval '{approval_id}' is answered twice",
        ),
        (
            {"input": [ok, {"role": "user", "content": "and then?"}]},
            400,
            "invalid_value",
            "input[1]",
            "switchboard:approval_response items must be the whole input",
        ),
        (
            {"input": [{"role": "user", "content": "hi"}, ok]},
            400,
            "invalid_value",
            "input[0]",
            "switchboard:approval_response items must be the whole input",
        ),
        (
            {"input": [ok], "previous_response_id": None},
            400,
            "missing_required_parameter",
            "previous_response_id",
            "switchboard:approval_response items answer the approval "
            "requests of a response: set previous_response_id",
        ),
        (
            {"input": [ok], "tool_choice": "none"},
            400,
            "invalid_value",
            "tool_choice",
            "tool_choice cannot be given while answering approvals",
        ),
        (
            {"input": [ok], "tools": [{"type": "function", "name": "search_google"}]},
            400,
            "invalid_value",
            "tools",
            "tools cannot be given while answering approvals",
        ),
        (
            {"input": [ok], "previous_response_id": "resp_nope"},
            404,
            "previous_response_not_found",
            "previous_response_id",
            "no response 'resp_nope'",
        ),
    ]
    for fields, status, code, param, message in cases:
        body = {"model": "switchboard", "previous_response_id": prev, **fields}
        refused = await post(offline, {k: v for k, v in body.items() if v is not None})
        error = refused.json()["error"]
        assert (refused.status_code, error["code"], error["param"]) == (status, code, param), (
            fields,
            error,
        )
        assert error["message"].startswith(message), (fields, error["message"])
        assert error["type"] == ("not_found" if status == 404 else "invalid_request")
    # Still pending, nothing ran, nothing was decided: the good answer still works.
    assert [a["approval_id"] for a in await pending(offline)] == [approval_id]
    assert sent_mail(offline) == []
    resumed = await create(offline, previous_response_id=prev, input=[ok])
    assert resumed["output"][-1]["type"] == "message" and len(sent_mail(offline)) == 1


async def test_a_second_answer_is_refused_and_nothing_runs_again(offline: LiveServer) -> None:
    paused = await create(offline, input=MULTI)
    [asked] = requests_of(paused)
    await create(offline, previous_response_id=paused["id"], input=[answer(asked["approval_id"])])
    for approve in (True, False):
        again = await post(
            offline,
            {
                "model": "switchboard",
                "previous_response_id": paused["id"],
                "input": [answer(asked["approval_id"], approve)],
            },
        )
        error = again.json()["error"]
        assert again.status_code == 409 and error["type"] == "invalid_request"
        assert (error["code"], error["param"]) == ("approval_decided", "input[0].approval_id")
        assert error["message"] == (
            f"approval '{asked['approval_id']}' is already approved; "
            "the first decision stands (continue from the response "
            "that followed it)"
        )
    assert len(sent_mail(offline)) == 1
    [chat] = await chats(offline)
    assert len([e for e in chat["events"] if e["type"] == "approval_resolved"]) == 1
    assert len(chat["turns"]) == 1


async def test_an_expired_approval_is_an_error_and_nothing_runs(offline: LiveServer) -> None:
    paused = await create(offline, input=MULTI)
    [asked] = requests_of(paused)
    body = {
        "model": "switchboard",
        "previous_response_id": paused["id"],
        "input": [answer(asked["approval_id"])],
    }
    await expire_all(offline)
    due = await post(offline, body)  # due, not swept yet: refused before deciding
    assert due.status_code == 409
    assert due.json()["error"] == {
        "type": "invalid_request",
        "code": "approval_expired",
        "param": "input[0].approval_id",
        "message": f"approval '{asked['approval_id']}' expired before it was answered, so "
        "nothing was run; ask again in a new message",
    }
    assert await offline.services.turns.expire_approvals() == 1
    swept = await post(offline, body)
    assert swept.status_code == 409 and swept.json()["error"]["code"] == "approval_expired"
    assert sent_mail(offline) == []
    [chat] = await chats(offline)
    [record] = chat["approvals"]
    assert record["status"] == "expired" and record["decided_via"] == "expiry"


# ----------------------------------------------------------------------------- moving on


async def test_a_message_after_a_paused_response_supersedes_it_in_the_same_chat(
    offline: LiveServer,
) -> None:
    paused = await create(offline, input=MULTI)
    [asked] = requests_of(paused)
    after = await create(
        offline, previous_response_id=paused["id"], input="what are my account balances"
    )
    assert after["status"] == "completed" and after["previous_response_id"] == paused["id"]
    assert "get_accounts_at_plaid" in [name for _, name in kinds(after)]
    [chat] = await chats(offline)  # the same chat: it had not moved on
    assert [t["status"] for t in chat["turns"]] == ["cancelled", "completed"]
    types = [e["type"] for e in chat["events"]]
    at = types.index("approval_resolved")
    assert types[at : at + 3] == ["approval_resolved", "end_of_stream", "user_prompt"]
    resolved, ended = chat["events"][at : at + 2]
    assert (resolved["decision"], resolved["decided_via"]) == ("superseded", "prompt")
    assert ended["status"] == "cancelled"
    assert sent_mail(offline) == []
    late = await post(
        offline,
        {
            "model": "switchboard",
            "previous_response_id": paused["id"],
            "input": [answer(asked["approval_id"])],
        },
    )
    assert late.status_code == 409 and "superseded" in late.json()["error"]["message"]
    assert sent_mail(offline) == []


# ----------------------------------------------------------------------------- the model's view


async def test_a_resumed_turn_can_pause_again_and_each_send_waits_for_its_answer(
    scripted: Callable[..., Any], fake_model: FakeModelServer
) -> None:
    fake_model.script(
        Call("transfer_to_gmail", {}),
        Call("send_google_email", email("ada@example.com"), call_id="c_ada"),
        Call("send_google_email", email("bob@example.com"), call_id="c_bob"),
        Say("Sent to Ada; Bob declined."),
    )
    async with scripted() as live:
        first = await create(live, input="email Ada, then Bob")
        [ada] = requests_of(first)
        second = await create(
            live, previous_response_id=first["id"], input=[answer(ada["approval_id"])]
        )
        # Ada's email ran; the model then asked for Bob's, which waits again.
        assert kinds(second) == [
            (TOOL_CALL, "send_google_email"),
            (REQUEST, "send_google_email"),
            ("message", None),
        ]
        [bob] = requests_of(second)
        assert json.loads(bob["arguments"])["to"] == ["bob@example.com"]
        assert [m["to"] for m in sent_mail(live)] == ["ada@example.com"]
        # The first response's approval is answered: answering it again is refused.
        stale = await post(
            live,
            {
                "model": "switchboard",
                "previous_response_id": first["id"],
                "input": [answer(bob["approval_id"])],
            },
        )
        assert stale.status_code == 400 and stale.json()["error"]["code"] == "unknown_approval"
        third = await create(
            live,
            previous_response_id=second["id"],
            input=[answer(bob["approval_id"], False, reason="not today")],
        )
        assert kinds(third) == [("message", None)]
        assert [m["to"] for m in sent_mail(live)] == ["ada@example.com"]
        [chat] = await chats(live)
    assert [t["status"] for t in chat["turns"]] == ["completed"]
    refusal = next(
        i
        for i in fake_model.turn_requests()[-1].body["input"]
        if i.get("type") == "function_call_output" and i["call_id"] == "c_bob"
    )
    assert refusal["output"].startswith("Not run:") and "not today" in refusal["output"]


async def test_parallel_sends_ask_together_and_need_every_answer(
    scripted: Callable[..., Any], fake_model: FakeModelServer
) -> None:
    fake_model.script(
        Call("transfer_to_gmail", {}),
        reply(
            Call("send_google_email", email("ada@example.com"), call_id="c_a"),
            Call("send_google_email", email("bob@example.com"), call_id="c_b"),
        ),
        Say("Done: Ada yes, Bob no."),
    )
    async with scripted() as live:
        paused = await create(live, input="email Ada and Bob")
        first, second = requests_of(paused)
        assert [r["call_id"] for r in (first, second)] == ["c_a", "c_b"]
        partial = await post(
            live,
            {
                "model": "switchboard",
                "previous_response_id": paused["id"],
                "input": [answer(first["approval_id"])],
            },
        )
        assert partial.status_code == 400
        assert partial.json()["error"] == {
            "type": "invalid_request",
            "code": "missing_approval_response",
            "param": "input",
            "message": f"answer every approval request of '{paused['id']}' in one request: "
            f"no switchboard:approval_response for '{second['approval_id']}'",
        }
        assert sent_mail(live) == [] and len(await pending(live)) == 2
        resumed = await create(
            live,
            previous_response_id=paused["id"],
            input=[answer(second["approval_id"], False), answer(first["approval_id"])],
        )
    assert kinds(resumed) == [(TOOL_CALL, "send_google_email"), ("message", None)]
    assert resumed["output"][0]["call_id"] == "c_a"
    assert [m["to"] for m in sent_mail(live)] == ["ada@example.com"]


async def test_a_branch_from_a_paused_response_sees_the_call_as_not_run(
    scripted: Callable[..., Any], fake_model: FakeModelServer
) -> None:
    fake_model.script(
        Call("transfer_to_gmail", {}),
        Call("send_google_email", EMAIL, call_id="c_ada"),
        Say("Sent."),
        Say("It was not sent."),
    )
    async with scripted() as live:
        paused = await create(live, input="email Ada hello")
        [asked] = requests_of(paused)
        await create(live, previous_response_id=paused["id"], input=[answer(asked["approval_id"])])
        # The chat went on, so a message chained on the paused response forks it as it was
        # at the pause: the call there was never approved.
        branch = await create(live, previous_response_id=paused["id"], input="was it sent?")
        listed = await chats(live)
    assert text_of(branch) == "It was not sent."
    assert [[t["prompt"] for t in chat["turns"]] for chat in listed] == [
        ["email Ada hello"],
        ["was it sent?"],
    ]
    sent = fake_model.turn_requests()[-1].body["input"]
    assert (
        sent[0] == {"type": "message", "role": "user", "content": "email Ada hello"}
        or sent[0].get("content") == "email Ada hello"
    )
    outputs = [
        i for i in sent if i.get("type") == "function_call_output" and i["call_id"] == "c_ada"
    ]
    assert [o["output"] for o in outputs] == [NOT_RUN]
    assert "Sent." not in json.dumps(sent)
    assert len(sent_mail(live)) == 1  # only the approved send, once


async def test_a_stateless_client_replays_an_approval_request_as_a_call_not_run(
    scripted: Callable[..., Any], fake_model: FakeModelServer
) -> None:
    fake_model.script(
        Call("transfer_to_gmail", {}),
        Call("send_google_email", EMAIL, call_id="c_ada"),
        Say("Nothing was sent."),
    )
    async with scripted() as live:
        paused = await create(live, input="email Ada hello")
        replay = [
            {"role": "user", "content": "email Ada hello"},
            *paused["output"],
            {"role": "user", "content": "never mind; was anything sent?"},
        ]
        again = await create(live, input=replay)
    assert text_of(again) == "Nothing was sent."
    sent = fake_model.turn_requests()[-1].body["input"]
    [call] = [i for i in sent if i.get("type") == "function_call" and i["call_id"] == "c_ada"]
    assert json.loads(call["arguments"]) == EMAIL
    [output] = [
        i for i in sent if i.get("type") == "function_call_output" and i["call_id"] == "c_ada"
    ]
    assert output["output"] == NOT_RUN
    assert sent_mail(live) == []
