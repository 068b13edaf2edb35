"""A new connector from ``switchboard connectors new`` works in a real server with no server
edit: in the offline demo, a prompt that does not name the connector is routed to it, its
hidden lookup feeds its write tool, the write waits for the person's approval over the real
WebSocket, and the created item shows up in a later list.

The package is made importable the way ``pip install -e`` would, without touching the
shared environment: its directory on ``PYTHONPATH`` and a ``.dist-info`` holding its entry
point beside it, for the server process only.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from connectors.names import ENTRY_POINT_GROUP
from connectors.scaffold import write_package
from storage.migrate import upgrade
from tests.support.clients import open_client
from tests.support.processes import ServerProcess

PROMPT = "add an item 'renew passport' to the Home project"


def installed_for_a_process(root: Path, site: Path, name: str) -> str:
    """``PYTHONPATH`` that makes the generated package at ``root`` an installed plug-in:
    ``site`` gets the distribution's metadata with the package's entry point."""
    info = site / f"switchboard_{name}-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: switchboard-{name}\nVersion: 0.1.0\n"
    )
    (info / "entry_points.txt").write_text(
        f"[{ENTRY_POINT_GROUP}]\n{name} = switchboard_{name}:connector\n"
    )
    return f"{root}:{site}"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """``switchboard serve`` with the new ``tasks`` connector, on a migrated SQLite file,
    in the offline demo. One server for the module: each test adds to its own project
    (the demo state is the local user's)."""
    tmp_path = tmp_path_factory.mktemp("walkthrough")
    root = write_package("tasks", tmp_path / "src")
    database = tmp_path / "switchboard.db"
    upgrade(f"sqlite+aiosqlite:///{database}")
    process = ServerProcess(
        {
            "SWITCHBOARD_DATABASE_URL": f"sqlite+aiosqlite:///{database}",
            "SWITCHBOARD_DATA_DIR": str(tmp_path / "data"),
            "PYTHONPATH": installed_for_a_process(root, tmp_path / "site", "tasks"),
            "SWITCHBOARD_MODEL": "offline",
        },
        tmp_path / "server.log",
    )
    process.start()
    try:
        yield process
    finally:
        process.stop()


def of_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [event for event in events if event["type"] == kind]


async def test_a_new_connector_adds_an_item_after_approval_in_the_offline_demo(
    server: ServerProcess,
) -> None:
    async with httpx.AsyncClient(base_url=server.http, timeout=10) as http:
        listed = (await http.get("/api/connectors")).json()
    assert [c["name"] for c in listed["connectors"]][-1] == "tasks", listed
    assert listed["failed"] == []

    async with open_client(server.ws_url(uuid.uuid4().hex)) as client:
        await client.send({"type": "prompt", "text": PROMPT})
        before = await client.until("approval_required", within=30)
        asked = before[-1]
        await client.decide(asked["approval_id"], approve=True)
        after = await client.until("end_of_stream", within=30)
        await client.until("suggested_prompts")
        listing = await client.turn("What's in my Home project?")
    events = before + after

    assert [e["new_agent"] for e in of_type(events, "agent_updated")] == ["Tasks"]
    calls = of_type(events, "tool_call")
    assert [call["name"] for call in calls] == ["find_tasks_project", "create_tasks_item"]
    assert calls[0]["arguments"] == {"project_name": "Home"}
    # The lookup's result reached the model only; its id fed the write.
    project_id = asked["arguments"]["project_id"]
    assert asked["name"] == "create_tasks_item"
    assert asked["arguments"] == {"project_id": project_id, "title": "renew passport"}
    outputs = [e["output"] for e in of_type(events, "tool_output")]
    assert [output["response_type"] for output in outputs] == ["tasks_item"]
    assert outputs[0]["response"]["project"] == "Home"
    assert of_type(events, "approval_resolved")[0]["decision"] == "approved"
    assert events[-1]["status"] == "completed"
    answer = of_type(events, "llm_response")[-1]["text"]
    assert "renew passport" in answer and "Home" in answer, answer

    shown = [e["output"] for e in of_type(listing, "tool_output")]
    assert [output["response_type"] for output in shown] == ["tasks_items"]
    assert shown[0]["response"][-1]["title"] == "renew passport"
    assert of_type(listing, "approval_required") == []  # reads never ask


async def test_a_declined_item_is_not_added(server: ServerProcess) -> None:
    async with open_client(server.ws_url(uuid.uuid4().hex)) as client:
        declined = await client.turn("add 'sell the old bike' to my Garden project", approve=False)
        listing = await client.turn("show the items in the Garden project")
    asked = of_type(declined, "approval_required")
    assert [(e["name"], e["arguments"]["title"]) for e in asked] == [
        ("create_tasks_item", "sell the old bike")
    ]
    assert of_type(declined, "approval_resolved")[0]["decision"] == "rejected"
    assert of_type(declined, "tool_output") == []  # the write never ran
    answer = of_type(declined, "llm_response")[-1]["text"]
    assert "declined" in answer and "nothing was done" in answer, answer
    shown = of_type(listing, "tool_output")[0]["output"]
    assert shown["friendly_name"] == "Items in Garden"
    assert "sell the old bike" not in [item["title"] for item in shown["response"]]
