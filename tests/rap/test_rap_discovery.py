"""Start-up: toolsets discovered from each server, declared in config, or skipped when a
server cannot be used (the app starts anyway)."""

from __future__ import annotations

import json
from collections.abc import Callable

from app.settings import Settings
from tests.fakes.fake_service import Answer, closed_port_url, serve_fake
from tests.fakes.rap_tool import RapToolServer
from tests.support.servers import serve


async def names(settings: Settings) -> dict[str, list[str]]:
    async with serve(settings) as live, live.client() as http:
        listed = (await http.get("/api/connectors")).json()["connectors"]
        agents = [a.name for a in live.services.turns.engine.orchestrator.handoffs]
    return {
        "connectors": [c["name"] for c in listed],
        "agents": agents,
        **{c["name"]: [t["name"] for t in c["tools"]] for c in listed},
    }


async def test_tools_are_discovered_from_the_well_known_toolset(
    make_settings: Callable[..., Settings],
) -> None:
    tool = RapToolServer()
    async with serve_fake(tool):
        found = await names(make_settings(rap_tools=f"notes={tool.base_url}"))
    await tool.aclose()
    assert found["connectors"][-1] == "notes"
    assert found["notes"] == ["edit_file", "lookup", "watch_repo"]
    assert "notes-tools" in found["agents"]  # the toolset's name, without a display_name
    assert len(tool.calls("/.well-known/rap-toolset")) == 1


async def test_declared_tools_need_no_discovery(make_settings: Callable[..., Settings]) -> None:
    declared = [
        {
            "name": "deploy",
            "url": closed_port_url(),
            "display_name": "Deployer",
            "tools": [
                {
                    "name": "deploy_service",
                    "description": "Deploy a service",
                    "inputSchema": {
                        "type": "object",
                        "properties": {"service": {"type": "string"}},
                    },
                }
            ],
        }
    ]
    found = await names(make_settings(rap_tools=json.dumps(declared)))
    assert found["deploy"] == ["deploy_service"]
    assert "Deployer" in found["agents"]


async def test_unusable_servers_are_skipped_and_the_app_still_starts(
    make_settings: Callable[..., Settings],
) -> None:
    broken = RapToolServer()
    broken.script("/.well-known/rap-toolset", Answer(200, {"name": "x", "tools": []}))
    failing = RapToolServer()
    failing.script("/.well-known/rap-toolset", Answer(404, {"error": "no toolset here"}))
    named_like_search = RapToolServer(name="Search")  # the built-in agent's name
    async with serve_fake(broken), serve_fake(failing), serve_fake(named_like_search):
        found = await names(
            make_settings(
                rap_tools=(
                    f"down={closed_port_url()},broken={broken.base_url},"
                    f"failing={failing.base_url},clash={named_like_search.base_url}"
                ),
                http_retries=0,
            )
        )
    for tool in (broken, failing, named_like_search):
        await tool.aclose()
    assert found["connectors"] == ["gmail", "plaid", "yelp", "search"]
    assert found["agents"] == ["GMail", "Plaid", "Yelp", "Search"]
