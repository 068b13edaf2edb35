"""A plug-in connector with its own live account flow (an API key), installed as a real
distribution, and a local fake of its service; for the account-flow tests (REST and UI)."""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from tests.fakes.fake_service import Endpoint, FakeService

GOOD_KEY = "nk_live_7f3a9c2e51d04b88"
ENTRY_POINT_GROUP = "switchboard.connectors"

# The plug-in package: a connector whose account is an API key for the "Notes" service.
PLUGIN = '''
from typing import Any

import httpx
from agents import Agent, function_tool

from connectors.account_flow import ApiKeyFlow, Connected, FlowContext, FlowError
from connectors.registry import Connector


def base_url(settings: Any) -> str:
    return settings.connector_options["notes"]["base_url"]


class NotesKey(ApiKeyFlow):
    label = "Notes API key"
    help = "Create one under Settings, API keys, in Notes."

    async def check_key(self, ctx: FlowContext, key: str) -> Connected:
        answer = await ctx.http.get(
            f"{base_url(ctx.settings)}/v1/me",
            headers={"Authorization": f"Bearer {key}"},
            timeout=5,
        )
        if answer.status_code == 401:
            raise FlowError("Notes refused this key: check it and paste it again")
        answer.raise_for_status()
        return Connected({"api_key": key}, {"email": answer.json()["email"]})

    async def forget(self, ctx: FlowContext, credentials: dict[str, Any]) -> None:
        await ctx.http.post(
            f"{base_url(ctx.settings)}/v1/keys/revoke",
            headers={"Authorization": f"Bearer {credentials['api_key']}"},
            timeout=5,
        )


@function_tool
async def list_notes() -> str:
    """List the user's notes."""
    return "[]"


def build_agent(settings: Any) -> Agent:
    return Agent(name="Notes", handoff_description="The user's notes", tools=[list_notes])


connector = Connector(
    name="notes",
    agent_name="Notes",
    display_name="Notes",
    build_agent=build_agent,
    tool_descriptions={"list_notes": "Listing notes"},
    needs_account=True,
    account_flow=NotesKey(),
)
'''


class FakeNotes(FakeService):
    """The Notes service: ``GET /v1/me`` with a Bearer key → the account, 401 for any other
    key; ``POST /v1/keys/revoke`` forgets the key."""

    def __init__(self) -> None:
        super().__init__()
        self.keys = {GOOD_KEY: "ada@notes.example"}
        self.revoked: list[str] = []

    def routes(self) -> list[tuple[str, Endpoint, list[str]]]:
        return [("/v1/me", self.me, ["GET"]), ("/v1/keys/revoke", self.revoke, ["POST"])]

    def _key(self, request: Request) -> str:
        return request.headers.get("authorization", "").removeprefix("Bearer ")

    async def me(self, request: Request) -> Response:
        email = self.keys.get(self._key(request))
        if email is None:
            return JSONResponse({"error": "invalid_api_key"}, status_code=401)
        return JSONResponse({"email": email})

    async def revoke(self, request: Request) -> Response:
        key = self._key(request)
        if self.keys.pop(key, None) is None:
            return JSONResponse({"error": "invalid_api_key"}, status_code=401)
        self.revoked.append(key)
        return JSONResponse({"revoked": True})


def install_notes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The plug-in installed as a distribution on sys.path, as pip would leave it (a
    generator for a fixture: removed again after the test)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "switchboard_notes.py").write_text(textwrap.dedent(PLUGIN))
    info = site / "switchboard_notes-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: switchboard-notes\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        f"[{ENTRY_POINT_GROUP}]\nnotes = switchboard_notes:connector\n"
    )
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()  # the path finders cache directory listings
    yield
    sys.modules.pop("switchboard_notes", None)
