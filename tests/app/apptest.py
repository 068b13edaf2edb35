"""Helpers for the app tests (imported by conftest.py and the test modules): settings on the test database, an in-process client with the
lifespan run by hand (httpx's ASGITransport does not run it), users and seeded chats
written through the real repositories."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from cryptography.fernet import Fernet
from starlette.applications import Starlette
from starlette.routing import BaseRoute
from starlette.types import Receive, Scope, Send

from app.api_json import rfc3339
from app.main import create_app
from app.services import Services
from app.settings import Settings
from storage.chats import ChatRepository
from storage.engine import Database
from storage.events import EventStore
from storage.records import NewEvent, TurnRecord, TurnUpdate
from storage.users import UserRepository


def now_ts() -> str:
    return rfc3339(datetime.now(UTC)) or ""


def make_settings(database_url: str, data_dir: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "database_url": database_url,
        "data_dir": data_dir,
        "secret_key": Fernet.generate_key().decode(),
        "auth_mode": "token",
    }
    return Settings(**(values | overrides))


@dataclass
class Running:
    app: Starlette
    client: httpx.AsyncClient
    # The app's lifespan state; each request gets a copy, as from a server.
    state: dict[str, Any]

    @property
    def services(self) -> Services:
        services: Services = self.state["services"]
        return services


@asynccontextmanager
async def running(
    settings: Settings,
    *,
    extra_routes: Sequence[BaseRoute] = (),
    raise_app_exceptions: bool = True,
) -> AsyncIterator[Running]:
    app = create_app(settings, extra_routes=extra_routes)
    async with app.router.lifespan_context(app) as lifespan_state:
        state = dict(lifespan_state or {})

        async def with_state(scope: Scope, receive: Receive, send: Send) -> None:
            # httpx's ASGITransport does not pass the lifespan state, as servers do.
            scope["state"] = dict(state)
            await app(scope, receive, send)

        transport = httpx.ASGITransport(app=with_state, raise_app_exceptions=raise_app_exceptions)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
            yield Running(app, client, state)


@dataclass(frozen=True)
class User:
    id: str
    name: str
    token: str

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


async def create_user(db: Database, name: str) -> User:
    record, token = await UserRepository(db).create_user(name)
    return User(record.id, record.name, token)


@dataclass(frozen=True)
class SeedTurn:
    prompt: str
    answer: str | None = "done"
    usage: dict[str, int] | None = None
    status: str = "completed"  # "running" leaves the turn open, as a crash would
    client_message_id: str | None = None


DEFAULT_USAGE = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15, "requests": 1}


async def seed_chat(
    db: Database, user_id: str, chat_id: str, turns: Sequence[SeedTurn] = ()
) -> list[TurnRecord]:
    """A chat with finished turns, each: user_prompt, tool_call, tool_output (with
    debug_info), llm_response, end_of_stream."""
    await ChatRepository(db, user_id).get_or_create(chat_id)
    store = EventStore(db)
    records = []
    for spec in turns:
        turn, _, _ = await store.start_turn(chat_id, spec.prompt, spec.client_message_id, now_ts())
        records.append(turn)
        if spec.status == "running":
            continue
        usage = spec.usage or DEFAULT_USAGE
        ts = now_ts()
        output = {
            "response_type": "google_search_results",
            "agent_name": "Search",
            "friendly_name": "Searching the web",
            "display_response": True,
            "response": [{"title": "t", "url": "https://example.com"}],
            "debug_info": {"raw_query": "internal details"},
        }
        events = [
            NewEvent(
                "tool_call",
                turn.id,
                {
                    "call_id": "c1",
                    "name": "search",
                    "description": "Searching",
                    "arguments": {"q": spec.prompt},
                    "current_agent": "Search",
                },
                ts,
            ),
            NewEvent(
                "tool_output",
                turn.id,
                {"call_id": "c1", "output": output, "current_agent": "Search"},
                ts,
            ),
            NewEvent("llm_response", turn.id, {"text": spec.answer, "current_agent": "Search"}, ts),
            NewEvent("end_of_stream", turn.id, {"status": spec.status, "usage": usage}, ts),
        ]
        update = TurnUpdate(
            turn.id,
            status=spec.status,
            final_text=spec.answer,  # type: ignore[arg-type]
            usage=usage,
        )
        await store.append(chat_id, events, update)
    return records
