"""RAP remote tools in real turns: a real tool server process on loopback answers the
invocations Switchboard sends, and POSTs its results to ``/rap/callback``."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import httpx

from connectors.untrusted import fence
from tests.fakes.fake_service import Answer
from tests.fakes.model_server import Call, FakeModelServer, Say
from tests.fakes.rap_tool import DIFF, Result, Silence, signature
from tests.support.clients import open_client
from tests.support.rap import RapStack
from tests.support.waiting import wait_until
from tests.ws.test_turns import assert_turn_order

EDIT = {"path": "app/greet.py", "content": "def greet():\n    return 'hello'\n"}


def script_call(
    model: FakeModelServer, name: str, arguments: dict[str, Any], answer: str = "Done."
) -> None:
    model.script(
        Call("transfer_to_notes", {}), Call(name, arguments, call_id=f"call_{name}"), Say(answer)
    )


def outputs_sent_to_model(model: FakeModelServer) -> list[dict[str, Any]]:
    """The function_call_output items of the model's last request (what it read)."""
    items = model.turn_requests()[-1].body["input"]
    tools = {
        item["call_id"]
        for item in items
        if item.get("type") == "function_call" and not item["name"].startswith("transfer_to_")
    }  # hand-offs are not tools
    return [
        item
        for item in items
        if item.get("type") == "function_call_output" and item["call_id"] in tools
    ]


def of_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [event for event in events if event["type"] == kind]


async def run_turn(
    stack: RapStack, prompt: str = "ask Notes to do it"
) -> tuple[str, list[dict[str, Any]]]:
    chat_id = uuid.uuid4().hex
    async with open_client(stack.live.ws_url(chat_id)) as client:
        events = await client.turn(prompt)
    assert_turn_order(events)
    return chat_id, events


async def test_a_diff_result_shows_its_diff_and_the_model_reads_the_full_text(
    rap_stack: Callable[..., Any],
) -> None:
    long_text = "Replaced text in app/greet.py.\n" + "".join(
        f"line {n}: " + "x" * 60 + "\n" for n in range(400)
    )  # ~28 kB: over any summary cap
    display = [
        {"type": "diff", "content": {"path": "app/greet.py", "patch": DIFF}},
        {"type": "text", "content": "edit_file app/greet.py: 1 line changed"},
    ]
    async with rap_stack() as stack:
        stack.tool.on("edit_file", Result(long_text, display_as=display))
        script_call(stack.model, "edit_file", EDIT, "I changed greet() to say hello.")
        chat_id, events = await run_turn(stack)
        async with stack.live.client() as http:
            listed = (await http.get("/api/connectors")).json()["connectors"]

    [invocation] = stack.tool.invocations
    assert invocation["operation"] == "edit_file"
    assert invocation["arguments"] == EDIT
    assert invocation["id"] == "call_edit_file"
    assert invocation["group_id"] == chat_id
    assert invocation["user_id"] == "local"
    assert invocation["call_id"].startswith("fc_")  # the model's item id, echoed back
    assert invocation["callback_url"].startswith(
        f"http://127.0.0.1:{stack.live.port}/rap/callback?token="
    )

    [call] = of_type(events, "tool_call")
    assert call["name"] == "edit_file" and call["current_agent"] == "Notes"
    assert call["description"] == "Running edit file on Notes"
    assert call["arguments"] == EDIT
    [shown] = of_type(events, "tool_output")
    output = shown["output"]
    assert output["response_type"] == "rap_result"
    assert output["agent_name"] == "Notes"
    assert output["response"] == long_text
    assert output["display_as"] == display  # the UI renders the diff, text as fallback
    assert "debug_info" not in output
    assert of_type(events, "error") == []
    assert of_type(events, "llm_response")[-1]["text"] == "I changed greet() to say hello."

    # Seed 001: the model reads the whole text, not a display hint or a summary of it.
    [sent] = outputs_sent_to_model(stack.model)
    assert sent["call_id"] == "call_edit_file"
    assert sent["output"] == fence(long_text, "remote tool")  # all of it, as outside data
    assert [d.status for d in stack.tool.deliveries] == [200]
    assert stack.tool.deliveries[0].body == {"status": "accepted"}

    notes = next(c for c in listed if c["name"] == "notes")
    assert notes["mode"] == "live" and notes["connected"] is True
    assert [t["name"] for t in notes["tools"]] == ["edit_file", "lookup", "watch_repo"]


async def test_an_error_text_is_an_error_card_and_the_turn_goes_on(
    rap_stack: Callable[..., Any],
) -> None:
    text = "Error: app/greet.py is locked by another edit. Retry in 30 seconds."
    async with rap_stack() as stack:
        stack.tool.on("edit_file", Result(text))
        script_call(stack.model, "edit_file", EDIT, "The file is locked; try again soon.")
        _, events = await run_turn(stack)

    [shown] = of_type(events, "tool_output")
    assert shown["output"]["response_type"] == "error"
    assert shown["output"]["error_message"] == text
    [error] = of_type(events, "error")
    assert error["code"] == "tool_error" and error["retryable"] is False
    assert error["message"] == text
    assert events[-2]["type"] == "end_of_stream" and events[-2]["status"] == "completed"
    assert outputs_sent_to_model(stack.model)[0]["output"] == (
        f"Error: the remote tool reported this failure:\n{fence(text, 'remote tool')}"
    )


async def test_duplicate_deliveries_are_accepted_once(rap_stack: Callable[..., Any]) -> None:
    async with rap_stack() as stack:
        stack.tool.on("lookup", Result("Deploys happen on Tuesdays.", copies=3))
        script_call(stack.model, "lookup", {"query": "deploy day"}, "Tuesdays.")
        _, events = await run_turn(stack)
        deliveries = await stack.tool.wait_deliveries(3)

    assert [(d.status, d.body) for d in deliveries] == [
        (200, {"status": "accepted"}),
        (200, {"status": "duplicate"}),
        (200, {"status": "duplicate"}),
    ]
    assert len(of_type(events, "tool_output")) == 1
    assert [o["output"] for o in outputs_sent_to_model(stack.model)] == [
        fence("Deploys happen on Tuesdays.", "remote tool")
    ]


async def test_results_for_other_calls_are_discarded_and_never_injected(
    rap_stack: Callable[..., Any],
) -> None:
    async with rap_stack(rap_timeout=1.0) as stack:
        # A tool that answers with an id (then a group_id) it was not invoked with.
        stack.tool.on("lookup", Result("INJECTED 1", id="call_someone_else"))
        script_call(stack.model, "lookup", {"query": "x"}, "It did not answer.")
        _, events = await run_turn(stack)
        stack.tool.on("lookup", Result("INJECTED 2", group_id="another-chat"))
        script_call(stack.model, "lookup", {"query": "y"}, "It did not answer.")
        _, second = await run_turn(stack)
        # And a token nobody was given.
        async with httpx.AsyncClient() as http:
            forged = await http.post(
                f"{stack.live.http}/rap/callback?token=not-a-token",
                json={"type": "tool_result", "group_id": "g", "id": "i", "text": "INJECTED 3"},
            )
        # The tool posts its results from tasks of its own, which closing it would cancel.
        await stack.tool.wait_deliveries(2, within=60)

    assert [(d.status, d.body["error"]["code"]) for d in stack.tool.deliveries] == [
        (404, "not_found"),
        (404, "not_found"),
    ]
    assert forged.status_code == 401 and forged.json()["error"]["code"] == "unauthorized"
    for turn in (events, second):
        [error] = of_type(turn, "error")
        assert error["code"] == "tool_timeout"
    for request in stack.model.requests:
        assert "INJECTED" not in json.dumps(request.body)


async def test_a_forged_signature_is_refused_and_the_genuine_result_still_lands(
    rap_stack: Callable[..., Any],
) -> None:
    secret = "s3cret-shared-with-the-tool-server"
    async with rap_stack(secret=secret) as stack:
        stack.tool.on("lookup", Result("FORGED", signature="forged"))
        script_call(stack.model, "lookup", {"query": "on-call"}, "Dana is on call.")
        chat_id = uuid.uuid4().hex
        async with open_client(stack.live.ws_url(chat_id)) as client:
            await client.send({"type": "prompt", "text": "ask Notes who is on call"})
            [refused] = await stack.tool.wait_deliveries(1)
            invocation = stack.tool.invocations[0]
            genuine = json.dumps(
                {
                    "type": "tool_result",
                    "group_id": invocation["group_id"],
                    "id": invocation["id"],
                    "call_id": invocation["call_id"],
                    "text": "Dana is on call this week.",
                }
            ).encode()
            async with httpx.AsyncClient() as http:
                unsigned = await http.post(
                    invocation["callback_url"],
                    content=genuine,
                    headers={"Content-Type": "application/json"},
                )
                stale = await http.post(
                    invocation["callback_url"],
                    content=genuine,
                    headers={
                        "Content-Type": "application/json",
                        "X-Switchboard-Signature": signature(secret, genuine, stamp=1_000_000),
                    },
                )
                accepted = await http.post(
                    invocation["callback_url"],
                    content=genuine,
                    headers={
                        "Content-Type": "application/json",
                        "X-Switchboard-Signature": signature(secret, genuine),
                    },
                )
            events = await client.until("end_of_stream")

    assert stack.tool.invocation_signed == [True]  # and our invocation was signed for it
    assert refused.status == 401 and refused.body["error"]["code"] == "unauthorized"
    assert unsigned.status_code == 401 and stale.status_code == 401
    assert accepted.status_code == 200 and accepted.json() == {"status": "accepted"}
    [shown] = of_type(events, "tool_output")
    assert shown["output"]["response"] == "Dana is on call this week."
    assert [o["output"] for o in outputs_sent_to_model(stack.model)] == [
        fence("Dana is on call this week.", "remote tool")
    ]


async def test_a_tool_that_never_answers_times_out(rap_stack: Callable[..., Any]) -> None:
    async with rap_stack(rap_timeout=0.5, expose_debug_info=True) as stack:
        stack.tool.on("lookup", Silence())
        script_call(stack.model, "lookup", {"query": "release"}, "The notes tool did not answer.")
        chat_id, events = await run_turn(stack)
        invocation = stack.tool.invocations[0]
        async with httpx.AsyncClient() as http:
            late = await http.post(
                invocation["callback_url"],
                json={
                    "type": "tool_result",
                    "group_id": invocation["group_id"],
                    "id": invocation["id"],
                    "call_id": invocation["call_id"],
                    "text": "too late",
                },
            )
        async with stack.live.client() as http:
            plain = (await http.get(f"/api/chats/{chat_id}/events")).json()["events"]
            debug = (await http.get(f"/api/chats/{chat_id}/events?debug=true")).json()["events"]

    [shown] = of_type(events, "tool_output")
    assert shown["output"]["response_type"] == "error"
    [error] = of_type(events, "error")
    assert error["code"] == "tool_timeout" and error["retryable"] is True
    assert "0.5 seconds" in error["message"]
    assert events[-2]["status"] == "completed"  # the turn went on without the tool
    [sent] = outputs_sent_to_model(stack.model)
    assert sent["output"].startswith("Error: lookup did not send its result within 0.5 s")
    assert late.status_code == 410
    assert "too late" not in json.dumps(stack.model.requests[-1].body)
    # Why it failed stays server-side: only the debug-enabled history API shows it.
    assert "debug_info" not in of_type(plain, "tool_output")[0]["output"]
    assert of_type(debug, "tool_output")[0]["output"]["debug_info"] == {
        "rap_server": "notes",
        "operation": "lookup",
        "error_code": "tool_timeout",
        "timeout_seconds": 0.5,
    }


async def test_a_subscription_is_recorded_on_the_chat(rap_stack: Callable[..., Any]) -> None:
    async with rap_stack() as stack:
        stack.tool.on("watch_repo", Result("Watching acme/api for pushes.", subscription=True))
        script_call(stack.model, "watch_repo", {"repo": "acme/api"}, "I'm watching it.")
        chat_id, _ = await run_turn(stack)
        async with stack.live.client() as http:
            found = (await http.get(f"/api/chats/{chat_id}/rap-subscriptions")).json()
            other = await http.get(f"/api/chats/{uuid.uuid4().hex}/rap-subscriptions")

    [subscription] = found["subscriptions"]
    assert subscription["call_id"] == "call_watch_repo"
    assert subscription["connector"] == "notes" and subscription["operation"] == "watch_repo"
    assert other.status_code == 404


async def test_bad_callbacks_are_refused_and_lose_nothing(rap_stack: Callable[..., Any]) -> None:
    async with rap_stack() as stack:
        stack.tool.on("lookup", Silence())
        script_call(stack.model, "lookup", {"query": "q"}, "Found it.")
        chat_id = uuid.uuid4().hex
        async with open_client(stack.live.ws_url(chat_id)) as client:
            await client.send({"type": "prompt", "text": "ask Notes"})
            await client.until("tool_call")
            # The tool_call event is sent before the call reaches the tool server.
            [invocation] = await wait_until(
                lambda: stack.tool.invocations, what="the tool server to be called"
            )
            url = invocation["callback_url"]
            good = {
                "type": "tool_result",
                "group_id": invocation["group_id"],
                "id": invocation["id"],
                "call_id": invocation["call_id"],
                "text": "found",
            }
            async with httpx.AsyncClient() as http:
                answers = [
                    await http.post(
                        url, content=b"{not json", headers={"Content-Type": "application/json"}
                    ),
                    await http.post(url, json={**good, "text": None}),
                    await http.post(url, json={**good, "type": "tool_progress"}),
                    await http.post(
                        url,
                        json={**good, "display_as": [{"type": "diff", "content": "not an object"}]},
                    ),
                    await http.post(
                        url,
                        json={
                            **good,
                            "display_as": [{"type": "link", "content": "javascript:alert(1)"}],
                        },
                    ),
                    await http.post(url, json={**good, "call_id": "fc_wrong"}),
                    await http.post(
                        url, content=json.dumps(good), headers={"Content-Type": "text/plain"}
                    ),
                    await http.post(url.split("?")[0], json=good),
                    await http.post(
                        url,
                        content=b"x" * (4 * 1024 * 1024 + 1),
                        headers={"Content-Type": "application/json"},
                    ),
                ]
                accepted = await http.post(url, json=good)
            events = await client.until("end_of_stream")

    assert [a.status_code for a in answers] == [400, 400, 400, 400, 400, 400, 415, 401, 413]
    for answer in answers:
        assert answer.json()["error"]["message"]
    assert "text" in answers[1].json()["error"]["message"]
    assert (
        "tool_result.display_as.0.link.content.url: Value error, a link must be an http:// "
        "or https:// URL, not javascript:"
    ) in answers[4].json()["error"]["message"]
    assert accepted.status_code == 200
    assert of_type(events, "tool_output")[0]["output"]["response"] == "found"


async def test_a_segment_of_a_type_nobody_knows_is_kept_for_clients_to_skip(
    rap_stack: Callable[..., Any],
) -> None:
    display = [
        {"type": "rating", "content": 4},
        {"type": "text", "content": "4 stars"},
        {"type": "link", "content": {"url": "https://notes.example.com/r", "title": "Report"}},
    ]
    async with rap_stack() as stack:
        stack.tool.on("lookup", Result("Rated 4 stars.", display_as=display))
        script_call(stack.model, "lookup", {"query": "q"}, "It is rated 4 stars.")
        _, events = await run_turn(stack)

    assert [d.status for d in stack.tool.deliveries] == [200]
    [shown] = of_type(events, "tool_output")
    assert shown["output"]["display_as"] == display
    assert of_type(events, "error") == []


async def test_an_oauth_message_shows_an_authorize_link(rap_stack: Callable[..., Any]) -> None:
    async with rap_stack() as stack:
        stack.tool.on("lookup", Result(kind="oauth"))
        script_call(stack.model, "lookup", {"query": "q"}, "Please authorize Notes first.")
        _, events = await run_turn(stack)

    [shown] = of_type(events, "tool_output")
    assert shown["output"]["response_type"] == "open_window"
    assert (
        shown["output"]["response"]["url"] == "https://auth.example.com/authorize?client_id=notes"
    )
    assert "authorization" in outputs_sent_to_model(stack.model)[0]["output"]


async def test_invalid_arguments_never_reach_the_tool(rap_stack: Callable[..., Any]) -> None:
    async with rap_stack() as stack:
        script_call(stack.model, "edit_file", {"path": "app/greet.py"}, "I need the content.")
        _, events = await run_turn(stack)

    assert stack.tool.invocations == []
    [sent] = outputs_sent_to_model(stack.model)
    assert sent["output"].startswith("Error: invalid arguments for edit_file:")
    assert "content" in sent["output"]
    assert of_type(events, "error")[0]["code"] == "tool_error"


async def test_invocations_are_retried_on_5xx_but_not_on_4xx(rap_stack: Callable[..., Any]) -> None:
    async with rap_stack(http_retries=2, http_retry_max_wait=0.1) as stack:
        stack.tool.script("/invoke", Answer(503, then_handle=False), Answer(502))
        stack.tool.on("lookup", Result("third time lucky"))
        script_call(stack.model, "lookup", {"query": "q"}, "Got it.")
        _, events = await run_turn(stack)
        stack.tool.script("/invoke", Answer(400))
        script_call(stack.model, "lookup", {"query": "q"}, "It refused.")
        _, refused = await run_turn(stack)

    assert len(stack.tool.hits("/invoke")) == 4  # 503, 502, 200, then one 400
    assert of_type(events, "tool_output")[0]["output"]["response"] == "third time lucky"
    [card] = of_type(refused, "tool_output")
    assert card["output"]["response_type"] == "error"
    assert "HTTP 400" in card["output"]["error_message"]


async def test_open_responses_clients_see_remote_tool_calls_and_their_full_text(
    rap_stack: Callable[..., Any],
) -> None:
    from tests.support.clients import client_for

    text = "Found 3 notes.\n" + "note body " * 2000  # longer than any summary
    async with rap_stack() as stack:
        stack.tool.on("lookup", Result(text, display_as=[{"type": "text", "content": "3 notes"}]))
        script_call(stack.model, "lookup", {"query": "deploys"}, "There are three notes.")
        raw = await client_for(stack.live).responses.with_raw_response.create(
            model="switchboard", input="ask Notes about deploys"
        )
        async with stack.live.client() as http:
            [chat] = (await http.get("/api/chats")).json()["chats"]

    call, answer = raw.http_response.json()["output"]
    # A remote tool runs on Switchboard's side: one of its own items, not a function_call.
    assert call["type"] == "switchboard:tool_call" and call["name"] == "lookup"
    assert json.loads(call["arguments"]) == {"query": "deploys"}
    assert call["output"] == fence(text, "remote tool")
    assert answer["content"][0]["text"] == "There are three notes."
    assert stack.tool.invocations[0]["group_id"] == chat["id"]  # the response's own chat
