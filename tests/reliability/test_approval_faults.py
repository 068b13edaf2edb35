"""Approvals across real server processes: a pending approval survives TERM and kill -9
and stays decidable; a crash after "approved" never runs the tool again; with several
instances, any instance decides and a tool still runs at most once."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import httpx
import pytest

from tests.fakes.fake_service import serve_fake
from tests.fakes.model_server import Call, FakeModelServer, Say, running_model_server
from tests.fakes.rap_tool import TOOLS, RapToolServer, Silence
from tests.reliability.orphans import LEASE, until_last_turn_ends
from tests.reliability.test_faults import assert_clean_exit, events_of
from tests.support.clients import open_client

EMAIL = "find sushi in Boston and email the list to bob@example.com"


async def pause(server: Any, chat_id: str) -> dict[str, Any]:
    async with open_client(server.ws_url(chat_id)) as client:
        await client.send({"type": "prompt", "text": EMAIL})
        return (await client.until("approval_required"))[-1]


async def decide(
    server: Any, chat_id: str, approval_id: str, decision: str = "approve"
) -> httpx.Response:
    async with httpx.AsyncClient(base_url=server.http, timeout=10) as http:
        return await http.post(
            f"/api/chats/{chat_id}/approvals/{approval_id}", json={"decision": decision}
        )


async def until_turn_ends(server: Any, chat_id: str, after_seq: int) -> list[dict[str, Any]]:
    async with open_client(server.ws_url(chat_id, after_seq=after_seq)) as client:
        return await client.until("end_of_stream")


@pytest.mark.parametrize("stop", ["term", "kill"])
async def test_a_pending_approval_survives_a_restart_and_is_decided_after_it(
    servers: Any, database_url: str, stop: str
) -> None:
    server = servers(database_url)
    await asyncio.to_thread(server.start)
    chat_id = uuid.uuid4().hex
    asked = await pause(server, chat_id)
    if stop == "term":
        server.terminate()
        await assert_clean_exit(server)  # a paused turn does not hold the shutdown up
    else:
        server.kill()
    await asyncio.to_thread(server.start)

    # Not closed as an orphan: still pending, listed, and replayed to a new socket.
    async with httpx.AsyncClient(base_url=server.http) as http:
        listed = (await http.get("/api/approvals")).json()["approvals"]
    assert [a["approval_id"] for a in listed] == [asked["approval_id"]]
    stored = await events_of(server, chat_id)
    assert stored[-1] == asked and "end_of_stream" not in [e["type"] for e in stored]

    assert (await decide(server, chat_id, asked["approval_id"])).status_code == 200
    after = await until_turn_ends(server, chat_id, asked["seq"])
    assert after[0]["type"] == "approval_resolved" and after[-1]["status"] == "completed"
    outputs = [e for e in after if e["type"] == "tool_output"]
    assert [o["output"]["response_type"] for o in outputs] == ["send_google_email"]
    assert outputs[0]["output"]["response"]["to"] == ["bob@example.com"]


async def test_a_crash_after_approval_never_runs_the_tool_again(
    servers: Any, database_url: str
) -> None:
    # A real RAP tool server that takes the call and never answers: the approved call is
    # in flight when the server process is killed.
    tool = RapToolServer()
    tool.on("edit_file", Silence())
    edit = {"path": "app/greet.py", "content": "hello"}
    async with running_model_server(FakeModelServer()) as model, serve_fake(tool):
        model.script(
            Call("transfer_to_notes", {}), Call("edit_file", edit, call_id="call_e"), Say("Done.")
        )
        server = servers(
            database_url,
            model=f"responses:fake@{model.base_url()}",
            suggest_model="offline",
            model_timeout=5,
            turn_lease_seconds=LEASE,
            rap_tools=json.dumps(
                [
                    {
                        "name": "notes",
                        "url": tool.base_url,
                        "endpoint": f"{tool.base_url}/invoke",
                        "display_name": "Notes",
                        "tools": TOOLS,
                    }
                ]
            ),
        )
        server.env["SWITCHBOARD_RAP_CALLBACK_URL"] = f"http://127.0.0.1:{server.port}"
        await asyncio.to_thread(server.start)
        chat_id = uuid.uuid4().hex
        async with open_client(server.ws_url(chat_id)) as client:
            await client.send({"type": "prompt", "text": "ask Notes to edit greet"})
            asked = (await client.until("approval_required"))[-1]
            await client.decide(asked["approval_id"])
            await client.until("approval_resolved")
            await asyncio.wait_for(tool.invoked.wait(), 10)  # the tool server has the call
            server.kill()
        await asyncio.to_thread(server.start)
        # The dead process's lease expires; the new one's sweep closes its turn.
        stored = await until_last_turn_ends(server, chat_id)
        async with httpx.AsyncClient(base_url=server.http) as http:
            detail = (await http.get(f"/api/chats/{chat_id}")).json()
        await tool.aclose()

    assert len(tool.invocations) == 1
    error, end = stored[-2:]
    assert error["type"] == "error" and error["code"] == "tool_error"
    assert "edit_file" in error["message"] and "not run again" in error["message"]
    assert end["type"] == "end_of_stream" and end["status"] == "failed"
    assert detail["approvals"][0]["status"] == "approved"
    assert [t["status"] for t in detail["turns"]] == ["failed"]


# --------------------------------------------------------------------------- two instances

two_instances = pytest.mark.parametrize("_migrated_database", ["postgresql"], indirect=True)


@pytest.fixture
async def pair(servers: Any, database_url: str, redis_url: str) -> tuple[Any, Any]:
    first = servers(database_url, redis_url=redis_url)
    second = servers(database_url, redis_url=redis_url)
    await asyncio.to_thread(first.start)
    await asyncio.to_thread(second.start)
    return first, second


@two_instances
async def test_an_approval_paused_on_one_instance_is_decided_on_the_other(pair: Any) -> None:
    first, second = pair
    chat_id = uuid.uuid4().hex
    async with (
        open_client(first.ws_url(chat_id)) as here,
        open_client(second.ws_url(chat_id)) as there,
    ):
        await here.send({"type": "prompt", "text": EMAIL})
        asked = (await here.until("approval_required"))[-1]
        assert (await there.until("approval_required"))[-1] == asked
        # The instance that paused it dies: the paused turn is a row, not its task.
        first.kill()
        assert (await decide(second, chat_id, asked["approval_id"])).status_code == 200
        seen = await there.until("end_of_stream")
    assert seen[0]["type"] == "approval_resolved" and seen[-1]["status"] == "completed"
    assert [e["output"]["response_type"] for e in seen if e["type"] == "tool_output"] == [
        "send_google_email"
    ]


@two_instances
async def test_decisions_on_both_instances_at_once_run_the_tool_once(pair: Any) -> None:
    first, second = pair
    chat_id = uuid.uuid4().hex
    asked = await pause(first, chat_id)
    answers = await asyncio.gather(
        *(
            decide(server, chat_id, asked["approval_id"])
            for server in (first, second, first, second)
        )
    )
    assert sorted(a.status_code for a in answers) == [200, 409, 409, 409]
    await until_turn_ends(second, chat_id, asked["seq"])
    stored = await events_of(first, chat_id)
    assert len([e for e in stored if e["type"] == "approval_resolved"]) == 1
    assert (
        len(
            [
                e
                for e in stored
                if e["type"] == "tool_output"
                and e["output"]["response_type"] == "send_google_email"
            ]
        )
        == 1
    )
    assert [e["status"] for e in stored if e["type"] == "end_of_stream"] == ["completed"]
