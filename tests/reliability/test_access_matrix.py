"""The cross-user access matrix in token mode: Bob, with his own valid token, tries every
endpoint of the app on Alice's chats, events, turns and connector accounts.

Every route the app serves is either attacked here (``MATRIX``) or listed as public
(``PUBLIC``); a route in neither fails the test, so a new endpoint cannot be forgotten.

Expected: Alice's chats answer 404 over REST (as if they did not exist) and 4403 on the
socket, before any data frame; endpoints scoped to the caller (his chats, his accounts)
answer for Bob alone and leave Alice's state untouched; the OAuth callback refuses a state
Alice started (403). No response body, header, close reason or frame Bob receives holds
anything of Alice's (ids, name, token, prompts, bank, OAuth state). Without a token, or
with a wrong one: 401 / 4401. Each attempt is counted; all must be denied.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
import websockets
from cryptography.fernet import Fernet
from starlette.routing import Mount, Route, WebSocketRoute
from websockets.exceptions import ConnectionClosed

from app.main import create_app
from app.settings import Settings, load_settings
from connectors.gmail.oauth import live_credentials
from storage.accounts import AccountRepository
from storage.users import UserRepository
from tests.fakes.fake_service import serve_fake
from tests.fakes.plaid_api import FakePlaid
from tests.support.clients import open_client
from tests.support.connectors import builtin_options
from tests.support.servers import LiveServer, serve

# Two agents, two tools, a streamed answer, and nothing that waits for an approval
# (tests/ws/test_approvals.py and test_approval_faults.py cover those).
MULTI_AGENT = "find sushi in Boston and show my account balances"
CALLBACK = "/oauth/google/callback"
CALLBACK_ROUTE = "/oauth/{name}/callback"
RAP_CALLBACK = "/rap/callback"
FEEDBACK_ROUTE = "/api/chats/{chat_id}/turns/{turn_id}/feedback"

# Routes anyone may call: they hold no user data (checked below all the same).
PUBLIC = {
    ("GET", "/healthz"),
    ("GET", "/readyz"),
    # How a page signs in (the mode; in oidc mode the provider's public endpoints).
    ("GET", "/api/auth/config"),
    ("GET", "/"),
    ("MOUNT", "/static"),
    # Each connector's card module and stylesheet: code, like /static, never data
    # (tests/app/test_connector_assets.py checks that nothing else is served there).
    ("GET", "/connectors/{name}/{file}"),
    # The API's description and its Swagger UI page: the routes and schemas, no data
    # (tests/api/test_openapi_document.py).
    ("GET", "/openapi.json"),
    ("GET", "/docs"),
}
# Every other route, each attacked by ``attack_*`` below.
MATRIX = {
    # Not public outside local mode: any signed-in caller (a scraper's token) may read it.
    ("GET", "/metrics"),
    ("GET", "/api/me"),
    ("GET", "/api/chats"),
    ("GET", "/api/chats/{chat_id}"),
    ("DELETE", "/api/chats/{chat_id}"),
    ("PATCH", "/api/chats/{chat_id}"),
    ("GET", "/api/chats/{chat_id}/events"),
    ("GET", "/api/chats/{chat_id}/export"),
    ("WS", "/ws/chats/{chat_id}"),
    ("GET", "/api/connectors"),
    ("POST", "/api/connectors/{name}/exchange"),
    ("POST", "/api/connectors/{name}/finish"),
    ("POST", "/api/connectors/{name}/connect"),
    ("DELETE", "/api/connectors/{name}"),
    ("GET", CALLBACK_ROUTE),
    ("GET", "/api/chats/{chat_id}/rap-subscriptions"),
    ("POST", RAP_CALLBACK),
    ("POST", "/v1/responses"),
    ("GET", "/v1/responses/{response_id}"),
    ("POST", "/v1/responses/compact"),
    ("WS", "/v1/responses"),
    ("GET", "/api/approvals"),
    ("POST", "/api/chats/{chat_id}/approvals/{approval_id}"),
    ("PUT", FEEDBACK_ROUTE),
    ("DELETE", FEEDBACK_ROUTE),
    ("POST", "/ag-ui"),
    ("POST", "/api/chats/{chat_id}/attachments"),
    ("GET", "/api/attachments/{attachment_id}"),
    ("GET", "/api/attachments/{attachment_id}/content"),
}
# Authenticated by its own per-call token (a remote tool answering), never a user's.
CALL_TOKEN_ROUTES = {("POST", RAP_CALLBACK)}
# How Bob presents his (valid) token: every way the server accepts one.
CARRIERS = ("header", "query", "cookie")


@dataclass
class Person:
    id: str
    name: str
    token: str


@dataclass
class Alice(Person):
    chats: list[str] = field(default_factory=list)
    running_chat: str = ""
    running_turn: str = ""
    turn_ids: list[str] = field(default_factory=list)
    prompts: list[str] = field(default_factory=list)
    message_id: str = ""
    cursor: str = ""
    oauth_state: str = ""
    events_before: dict[str, int] = field(default_factory=dict)
    # A chat of hers whose turn waits for her approval of an email.
    approval_chat: str = ""
    approval_id: str = ""
    # An attachment uploaded into her first chat, and its name.
    attachment_id: str = ""
    attachment_name: str = ""

    def secrets(self) -> list[str]:
        """Everything of Alice's that must never reach anyone else."""
        # Not her message id: Bob sends it himself in one attack, and it is echoed to him.
        return [
            self.id,
            self.name,
            self.token,
            self.oauth_state,
            self.approval_chat,
            self.running_chat,
            # Not her attachment's id: Bob sends it himself in one attack, and the refusal
            # names it back to him (as it would any made-up id).
            self.attachment_name,
            *self.chats,
            *self.turn_ids,
            *self.prompts,
            "Tartan Bank",
        ]


@dataclass
class Ledger:
    """Every access attempt and whether it was denied cleanly."""

    secrets: list[str]
    attempts: list[tuple[str, bool, str]] = field(default_factory=list)

    def record(self, what: str, denied: bool, seen: str) -> None:
        leaked = [secret for secret in self.secrets if secret and secret in seen]
        self.attempts.append(
            (what, denied and not leaked, f"leaked {leaked}" if leaked else seen[:200])
        )

    def failures(self) -> list[tuple[str, bool, str]]:
        return [attempt for attempt in self.attempts if not attempt[1]]


def http_as(live: LiveServer, token: str | None, carrier: str = "header") -> httpx.AsyncClient:
    headers, params, cookies = {}, {}, {}
    if token is not None and carrier == "header":
        headers["Authorization"] = f"Bearer {token}"
    elif token is not None and carrier == "query":
        params["token"] = token
    elif token is not None:
        cookies["sb_session"] = token
    return httpx.AsyncClient(
        base_url=live.http, headers=headers, params=params, cookies=cookies, timeout=10
    )


def ws_as(
    live: LiveServer, chat_id: str, token: str | None, carrier: str = "header", **query: Any
) -> tuple[str, dict[str, str]]:
    headers: dict[str, str] = {}
    if token is not None and carrier == "header":
        headers["Authorization"] = f"Bearer {token}"
    elif token is not None and carrier == "query":
        query["token"] = token
    elif token is not None:
        headers["Cookie"] = f"sb_session={token}"
    return live.ws_url(chat_id, **query), headers


def ws_at(
    live: LiveServer, path: str, token: str | None, carrier: str = "header"
) -> tuple[str, dict[str, str]]:
    """A WebSocket URL of ``live`` other than a chat's, with ``token`` carried as asked."""
    headers: dict[str, str] = {}
    query = ""
    if token is not None and carrier == "header":
        headers["Authorization"] = f"Bearer {token}"
    elif token is not None and carrier == "query":
        query = f"?token={token}"
    elif token is not None:
        headers["Cookie"] = f"sb_session={token}"
    return live.http.replace("http://", "ws://") + path + query, headers


async def socket_exchange(
    url: str, headers: dict[str, str], message: dict[str, Any], until_close: bool = False
) -> str:
    """What an Open Responses WebSocket says to ``message`` (or to nothing, if it closes
    first): its messages up to an error or a terminal event (``until_close``: up to its
    close), and its close code."""
    received: list[str] = []
    async with websockets.connect(url, additional_headers=headers) as ws:
        with contextlib.suppress(ConnectionClosed):  # refused at once: read why all the same
            await ws.send(json.dumps(message))
        try:
            while True:
                text = str(await asyncio.wait_for(ws.recv(), 10))
                received.append(text)
                ended = ("error", "response.completed", "response.failed")
                if not until_close and json.loads(text)["type"] in ended:
                    break
        except ConnectionClosed as closed:
            received.append(f"closed {closed.rcvd.code if closed.rcvd else None}")
    return " ".join(received)


def shown(response: httpx.Response) -> str:
    return f"{response.status_code} {dict(response.headers)} {response.text}"


async def socket_refusal(url: str, headers: dict[str, str]) -> tuple[int | None, str]:
    """The close code and everything received before it (which should be nothing)."""
    received = []
    async with open_client(url, additional_headers=headers, auto_approve=True) as client:
        try:
            while True:
                received.append(json.dumps(await client.recv(within=5)))
        except ConnectionClosed as closed:
            code = closed.rcvd.code if closed.rcvd else None
            reason = closed.rcvd.reason if closed.rcvd else ""
    return code, reason + " ".join(received)


# ----------------------------------------------------------------------------- the world


@pytest.fixture
async def plaid() -> AsyncIterator[FakePlaid]:
    fake = FakePlaid()
    async with serve_fake(fake):
        yield fake


@pytest.fixture
async def world(
    make_settings: Callable[..., Settings], plaid: FakePlaid
) -> AsyncIterator[tuple[LiveServer, Alice, Person]]:
    """A token-mode server where Alice has chats, a running turn, a bank and an OAuth
    sign-in under way, and Bob has a chat of his own."""
    settings = make_settings(
        auth_mode="token",
        secret_key=Fernet.generate_key().decode(),
        offline_delta_delay=0.03,
        prompts_per_minute=1000,
        connector_modes={"plaid": "live", "gmail": "live"},
        connector_options=builtin_options(
            plaid_client_id=plaid.client_id,
            plaid_secret=plaid.secret,
            plaid_base_url=plaid.base_url,
            google_client_id="client-id.apps.example",
            google_client_secret="google-secret",
        ),
    )
    async with serve(settings) as live:
        users = UserRepository(live.services.db)
        tag = uuid.uuid4().hex[:8]
        record, token = await users.create_user(f"alice-{tag}")
        alice = Alice(record.id, record.name, token)
        record, token = await users.create_user(f"bob-{tag}")
        bob = Person(record.id, record.name, token)

        alice.message_id = f"alice-msg-{tag}"
        for n in range(2):
            chat_id = f"alice-chat-{tag}-{n}"
            prompt = f"find ramen in Boston for alice {tag} {n}"
            url, headers = ws_as(live, chat_id, alice.token)
            async with open_client(url, additional_headers=headers, auto_approve=True) as client:
                events = await client.turn(prompt, client_message_id=f"{alice.message_id}-{n}")
            assert events[-2]["status"] == "completed"
            alice.chats.append(chat_id)
            alice.prompts.append(prompt)
            alice.turn_ids.append(events[0]["turn_id"])
        async with http_as(live, alice.token) as http:
            page = (await http.get("/api/chats", params={"limit": 1})).json()
            alice.cursor = page["next_cursor"]
            started = (await http.post("/api/connectors/gmail/connect")).json()
            alice.oauth_state = parse_qs(urlsplit(started["url"]).query)["state"][0]
            assert (await http.post("/api/connectors/plaid/connect")).status_code == 200
            async with httpx.AsyncClient() as sandbox:
                public = (
                    await sandbox.post(
                        f"{plaid.base_url}/sandbox/public_token/create",
                        json={
                            "client_id": plaid.client_id,
                            "secret": plaid.secret,
                            "institution_id": "ins_109509",
                            "initial_products": ["transactions"],
                        },
                    )
                ).json()
            linked = await http.post(
                "/api/connectors/plaid/exchange",
                json={
                    "public_token": public["public_token"],
                    "institution": {"name": "Tartan Bank", "institution_id": "ins_109509"},
                },
            )
            assert linked.status_code == 200, linked.text
            for chat_id in alice.chats:
                stored = (await http.get(f"/api/chats/{chat_id}/events")).json()["events"]
                alice.events_before[chat_id] = len(stored)
            alice.attachment_name = f"alice-{tag}.txt"
            uploaded = await http.post(
                f"/api/chats/{alice.chats[0]}/attachments",
                files={"file": (alice.attachment_name, b"alice's private notes", "text/plain")},
            )
            assert uploaded.status_code == 201, uploaded.text
            alice.attachment_id = uploaded.json()["id"]

        # Her Gmail is connected (a send says who it is from before asking), while the
        # OAuth sign-in above is still under way for the attacks on it.
        await AccountRepository(live.services.db, alice.id, live.services.fernet).connect(
            "gmail",
            live_credentials({"access_token": f"ya29.alice-{tag}"}, "alice@example.com"),
            {"email": "alice@example.com"},
        )
        alice.approval_chat = f"alice-approval-{tag}"
        url, headers = ws_as(live, alice.approval_chat, alice.token)
        async with open_client(url, additional_headers=headers) as client:
            await client.send(
                {
                    "type": "prompt",
                    "text": f"find sushi in Boston for {tag} and email the list to me@example.com",
                }
            )
            alice.approval_id = (await client.until("approval_required"))[-1]["approval_id"]
        alice.prompts.append(f"find sushi in Boston for {tag}")

        url, headers = ws_as(live, f"bob-chat-{tag}", bob.token)
        async with open_client(url, additional_headers=headers, auto_approve=True) as client:
            await client.turn("hello")
        yield live, alice, bob


# ----------------------------------------------------------------------------- attacks

Attack = Callable[[LiveServer, Alice, Person, Ledger], Awaitable[None]]


async def attack_chats(live: LiveServer, alice: Alice, bob: Person, ledger: Ledger) -> None:
    """GET / DELETE / HEAD of Alice's chats and their events, every token carrier."""
    for carrier in CARRIERS:
        async with http_as(live, bob.token, carrier) as http:
            for chat_id in [*alice.chats, alice.running_chat]:
                requests = [
                    ("GET", f"/api/chats/{chat_id}", {}),
                    ("HEAD", f"/api/chats/{chat_id}", {}),
                    ("DELETE", f"/api/chats/{chat_id}", {}),
                    ("GET", f"/api/chats/{chat_id}/events", {}),
                    ("GET", f"/api/chats/{chat_id}/events", {"after_seq": 0, "limit": 1000}),
                    ("GET", f"/api/chats/{chat_id}/events", {"after_seq": 1}),
                    ("GET", f"/api/chats/{chat_id}/events", {"debug": "false"}),
                    ("HEAD", f"/api/chats/{chat_id}/events", {}),
                    ("GET", f"/api/chats/{chat_id}/rap-subscriptions", {}),
                    ("HEAD", f"/api/chats/{chat_id}/rap-subscriptions", {}),
                    ("GET", f"/api/chats/{chat_id}/export", {"format": "markdown"}),
                    ("GET", f"/api/chats/{chat_id}/export", {"format": "json"}),
                    ("PATCH", f"/api/chats/{chat_id}", {}),
                ]
                for method, path, params in requests:
                    body = {"title": "renamed by bob"} if method == "PATCH" else None
                    response = await http.request(method, path, params=params, json=body)
                    body_ok = method == "HEAD" or response.json()["error"]["code"] == "not_found"
                    ledger.record(
                        f"{carrier} {method} {path} {params}",
                        response.status_code == 404 and body_ok,
                        shown(response),
                    )


async def attack_listings(live: LiveServer, alice: Alice, bob: Person, ledger: Ledger) -> None:
    """Caller-scoped listings: Bob sees his own, nothing of Alice's, even with her cursor."""
    for carrier in CARRIERS:
        async with http_as(live, bob.token, carrier) as http:
            me = await http.get("/api/me")
            ledger.record(
                f"{carrier} GET /api/me",
                me.status_code == 200 and me.json()["id"] == bob.id,
                shown(me),
            )
            chats = await http.get("/api/chats")
            ids = [chat["id"] for chat in chats.json()["chats"]]
            ledger.record(
                f"{carrier} GET /api/chats",
                chats.status_code == 200 and ids and all(i.startswith("bob-chat-") for i in ids),
                shown(chats),
            )
            # Searching for the words of Alice's prompts finds none of her chats.
            found = await http.get("/api/chats", params={"q": "sushi Boston"})
            ledger.record(
                f"{carrier} GET /api/chats?q=<alice's words>",
                found.status_code == 200
                and all(chat["id"].startswith("bob-chat-") for chat in found.json()["chats"]),
                shown(found),
            )
            paged = await http.get("/api/chats", params={"cursor": alice.cursor, "limit": 100})
            ledger.record(
                f"{carrier} GET /api/chats?cursor=<alice's>",
                paged.status_code in (200, 400),
                shown(paged),
            )
            connectors = await http.get("/api/connectors")
            plaid = next(c for c in connectors.json()["connectors"] if c["name"] == "plaid")
            ledger.record(
                f"{carrier} GET /api/connectors",
                connectors.status_code == 200 and plaid["connected"] is False,
                shown(connectors),
            )


async def attack_connectors(live: LiveServer, alice: Alice, bob: Person, ledger: Ledger) -> None:
    """Bob's connect / disconnect / exchange touch his own accounts only."""
    async with http_as(live, bob.token) as http:
        gone = await http.delete("/api/connectors/plaid")
        ledger.record(
            "DELETE /api/connectors/plaid",
            gone.status_code == 200 and gone.json()["connector"]["connected"] is False,
            shown(gone),
        )
        gone = await http.delete("/api/connectors/gmail")
        ledger.record("DELETE /api/connectors/gmail", gone.status_code == 200, shown(gone))
        started = await http.post("/api/connectors/gmail/connect")
        state = parse_qs(urlsplit(started.json()["url"]).query)["state"][0]
        ledger.record(
            "POST /api/connectors/gmail/connect",
            started.status_code == 200 and state != alice.oauth_state,
            shown(started),
        )
        started = await http.post("/api/connectors/plaid/connect")
        ledger.record(
            "POST /api/connectors/plaid/connect", started.status_code == 200, shown(started)
        )
        exchange = await http.post(
            "/api/connectors/plaid/exchange", json={"public_token": "public-sandbox-not-bobs"}
        )
        ledger.record(
            "POST /api/connectors/plaid/exchange (a token that is not his)",
            exchange.status_code in (400, 502),
            shown(exchange),
        )
        finish = await http.post(
            "/api/connectors/plaid/finish", json={"public_token": "public-sandbox-not-bobs"}
        )
        ledger.record(
            "POST /api/connectors/plaid/finish (a token that is not his)",
            finish.status_code in (400, 502),
            shown(finish),
        )
    for carrier in CARRIERS:
        async with http_as(live, bob.token, carrier) as http:
            # Alice's Google sign-in landing in Bob's browser.
            callback = await http.get(
                CALLBACK, params={"state": alice.oauth_state, "code": "4/alices-code"}
            )
            ledger.record(
                f"{carrier} GET {CALLBACK} with Alice's state",
                callback.status_code == 403,
                shown(callback),
            )


async def attack_rap_callback(live: LiveServer, alice: Alice, bob: Person, ledger: Ledger) -> None:
    """A user's token is no callback token: nothing is delivered into anyone's turn."""
    result = {
        "type": "tool_result",
        "group_id": alice.running_chat,
        "id": "call-1",
        "result": "injected",
    }
    for token in (bob.token, alice.running_turn, None):
        async with http_as(live, None) as http:
            params = {"token": token} if token else {}
            answer = await http.post(RAP_CALLBACK, params=params, json=result)
            ledger.record(
                f"POST {RAP_CALLBACK} token={token and token[:6]}",
                answer.status_code in (401, 404),
                shown(answer),
            )


async def attack_open_responses(
    live: LiveServer, alice: Alice, bob: Person, ledger: Ledger
) -> None:
    """Alice's Open Responses response: Bob can neither read it nor continue from it."""
    async with http_as(live, alice.token) as http:
        created = await http.post(
            "/v1/responses", json={"model": "switchboard", "input": "what are my account balances"}
        )
        assert created.status_code == 200, created.text
        response_id = created.json()["id"]
        compact = await http.post(
            "/v1/responses/compact",
            json={"model": "switchboard", "previous_response_id": response_id},
        )
        assert compact.status_code == 200, compact.text
        window = compact.json()["output"]
    for carrier in CARRIERS:
        async with http_as(live, bob.token, carrier) as http:
            read = await http.get(f"/v1/responses/{response_id}")
            ledger.record(
                f"{carrier} GET /v1/responses/<alice's>", read.status_code == 404, shown(read)
            )
            chained = await http.post(
                "/v1/responses",
                json={
                    "model": "switchboard",
                    "input": "and what did I just ask?",
                    "previous_response_id": response_id,
                },
            )
            ledger.record(
                f"{carrier} POST /v1/responses previous_response_id=<alice's>",
                chained.status_code == 404 and "balances" not in chained.text,
                shown(chained),
            )
            compacted = await http.post(
                "/v1/responses/compact",
                json={"model": "switchboard", "previous_response_id": response_id},
            )
            ledger.record(
                f"{carrier} POST /v1/responses/compact previous_response_id=<alice's>",
                compacted.status_code == 404 and "balances" not in compacted.text,
                shown(compacted),
            )
            # Her compacted conversation, replayed by him: sealed for her alone.
            replayed = await http.post(
                "/v1/responses",
                json={
                    "model": "switchboard",
                    "input": [*window, {"role": "user", "content": "what did I ask?"}],
                },
            )
            ledger.record(
                f"{carrier} POST /v1/responses input=<alice's compaction>",
                replayed.status_code == 400
                and replayed.json()["error"]["code"] == "invalid_encrypted_content"
                and "balances" not in replayed.text,
                shown(replayed),
            )
            url, headers = ws_at(live, "/v1/responses", bob.token, carrier)
            answer = await socket_exchange(
                url,
                headers,
                {
                    "type": "response.create",
                    "model": "switchboard",
                    "input": "and what did I just ask?",
                    "previous_response_id": response_id,
                },
            )
            ledger.record(
                f"{carrier} WS /v1/responses previous_response_id=<alice's>",
                '"status":404' in answer
                and "previous_response_not_found" in answer
                and "balances" not in answer,
                answer,
            )


async def attack_agui(live: LiveServer, alice: Alice, bob: Person, ledger: Ledger) -> None:
    """AG-UI runs on Alice's threads: Bob can neither write to them nor answer her
    interrupt, there or from a thread of his own."""

    def run(thread: str, **fields: Any) -> dict[str, Any]:
        return {"threadId": thread, "runId": "bob-run", "messages": [], **fields}

    message = [{"id": f"bob-{uuid.uuid4().hex[:8]}", "role": "user", "content": "what's here?"}]
    answer = [
        {"interruptId": alice.approval_id, "status": "resolved", "payload": {"approved": True}}
    ]
    for carrier in CARRIERS:
        async with http_as(live, bob.token, carrier) as http:
            for thread in (*alice.chats, alice.running_chat, alice.approval_chat):
                for body in (run(thread, messages=message), run(thread, resume=answer)):
                    refused = await http.post("/ag-ui", json=body)
                    ledger.record(
                        f"{carrier} POST /ag-ui {thread} {sorted(body)}",
                        refused.status_code == 404
                        and refused.json()["error"]["code"] == "not_found",
                        shown(refused),
                    )
            # From his own thread, Alice's interrupt is one it never had.
            own = await http.post("/ag-ui", json=run(f"bob-chat-{bob.name[4:]}", resume=answer))
            events = [
                json.loads(line[5:]) for line in own.text.splitlines() if line.startswith("data:")
            ]
            ledger.record(
                f"{carrier} POST /ag-ui resume <alice's interrupt> on his own thread",
                own.status_code == 200
                and [(e["type"], e.get("code")) for e in events]
                == [("RUN_ERROR", "interrupt_unknown")],
                shown(own),
            )


async def attack_approvals(live: LiveServer, alice: Alice, bob: Person, ledger: Ledger) -> None:
    """Alice's pending approval: Bob can neither list it nor decide it, from anywhere."""
    approval = alice.approval_id
    for carrier in CARRIERS:
        async with http_as(live, bob.token, carrier) as http:
            listed = await http.get("/api/approvals")
            ledger.record(
                f"{carrier} GET /api/approvals",
                listed.status_code == 200 and listed.json()["approvals"] == [],
                shown(listed),
            )
            for chat_id in (alice.approval_chat, *alice.chats, f"bob-chat-{bob.name[4:]}"):
                for decision in ("approve", "reject"):
                    path = f"/api/chats/{chat_id}/approvals/{approval}"
                    answer = await http.post(path, json={"decision": decision})
                    ledger.record(
                        f"{carrier} POST {path} {decision}",
                        answer.status_code == 404,
                        shown(answer),
                    )
    url, headers = ws_as(live, f"bob-decides-{uuid.uuid4().hex[:6]}", bob.token)
    async with open_client(url, additional_headers=headers) as client:
        await client.send({"type": "approval", "approval_id": approval, "decision": "approve"})
        answer = await client.recv()
        ledger.record(
            "approval frame for Alice's approval",
            answer["type"] == "error" and answer["code"] == "invalid_request",
            json.dumps(answer),
        )


async def attack_feedback(live: LiveServer, alice: Alice, bob: Person, ledger: Ledger) -> None:
    """Rating Alice's answers, or clearing her ratings: through her chats or his own."""
    own_chat = f"bob-chat-{bob.name[4:]}"
    # A rating of hers for Bob to try to take back (checked at the end of the test).
    async with http_as(live, alice.token) as http:
        path = f"/api/chats/{alice.chats[0]}/turns/{alice.turn_ids[0]}/feedback"
        rated = await http.put(path, json={"rating": "up"})
        assert rated.status_code == 200, rated.text
    for carrier in CARRIERS:
        async with http_as(live, bob.token, carrier) as http:
            for chat_id in (*alice.chats, alice.running_chat, own_chat):
                for turn_id in alice.turn_ids:
                    path = f"/api/chats/{chat_id}/turns/{turn_id}/feedback"
                    for method in ("PUT", "DELETE"):
                        body = {"rating": "down", "comment": "bob was here"}
                        answer = await http.request(
                            method, path, json=body if method == "PUT" else None
                        )
                        ledger.record(
                            f"{carrier} {method} {path}",
                            answer.status_code == 404
                            and answer.json()["error"]["code"] == "not_found",
                            shown(answer),
                        )


async def attack_socket(live: LiveServer, alice: Alice, bob: Person, ledger: Ledger) -> None:
    """Bob's sockets on Alice's chats: refused with 4403 before any data frame."""
    for carrier in CARRIERS:
        for chat_id in [*alice.chats, alice.running_chat]:
            for query in ({}, {"after_seq": 0}, {"after_seq": 2}):
                url, headers = ws_as(live, chat_id, bob.token, carrier, **query)
                code, seen = await socket_refusal(url, headers)
                ledger.record(f"{carrier} WS {chat_id} {query}", code == 4403, seen)


async def attack_frames(live: LiveServer, alice: Alice, bob: Person, ledger: Ledger) -> None:
    """From Bob's own chat: cancel Alice's running turn, replay, reuse her message id."""
    url, headers = ws_as(live, f"bob-frames-{uuid.uuid4().hex[:6]}", bob.token)
    async with open_client(url, additional_headers=headers, auto_approve=True) as client:
        for turn_id in (alice.running_turn, *alice.turn_ids):
            await client.send({"type": "cancel", "turn_id": turn_id})
            answer = await client.recv()
            ledger.record(
                f"cancel {turn_id}",
                answer["type"] == "error" and answer["code"] == "invalid_request",
                json.dumps(answer),
            )
        await client.send({"type": "resume", "after_seq": 0})
        await client.send({"type": "ping"})
        replay = await client.until("pong")
        ledger.record("resume after_seq=0 on his own chat", len(replay) == 1, json.dumps(replay))
        # Alice's idempotency key starts a turn of Bob's, never replays hers.
        events = await client.turn("hello again", client_message_id=f"{alice.message_id}-0")
        ledger.record(
            "prompt with Alice's client_message_id",
            events[0]["text"] == "hello again" and events[0]["seq"] == 1,
            json.dumps(events),
        )


async def attack_attachments(live: LiveServer, alice: Alice, bob: Person, ledger: Ledger) -> None:
    """Alice's attachment: not readable, not attachable; her chats take no upload of his."""
    for carrier in CARRIERS:
        async with http_as(live, bob.token, carrier) as http:
            for path in (
                f"/api/attachments/{alice.attachment_id}",
                f"/api/attachments/{alice.attachment_id}/content",
            ):
                answer = await http.get(path)
                ledger.record(
                    f"{carrier} GET {path}",
                    answer.status_code == 404 and answer.json()["error"]["code"] == "not_found",
                    shown(answer),
                )
            for chat_id in alice.chats:
                path = f"/api/chats/{chat_id}/attachments"
                answer = await http.post(path, files={"file": ("b.txt", b"bob's", "text/plain")})
                ledger.record(f"{carrier} POST {path}", answer.status_code == 404, shown(answer))
    url, headers = ws_as(live, f"bob-attaches-{uuid.uuid4().hex[:6]}", bob.token)
    async with open_client(url, additional_headers=headers) as client:
        await client.send(
            {"type": "prompt", "text": "look at this", "attachments": [alice.attachment_id]}
        )
        answer = await client.recv()
        ledger.record(
            "prompt frame with Alice's attachment id",
            answer["type"] == "error" and answer["code"] == "invalid_request",
            json.dumps(answer),
        )


async def attack_public(live: LiveServer, alice: Alice, bob: Person, ledger: Ledger) -> None:
    """The public routes answer anyone, with nothing of Alice's in them."""
    for token in (bob.token, None):
        async with http_as(live, token) as http:
            for path in ("/healthz", "/readyz", "/api/auth/config", "/", "/static/app.css"):
                response = await http.get(path)
                ledger.record(f"public GET {path}", response.status_code == 200, shown(response))
            # Counters of everyone's activity, for a signed-in scraper only.
            metrics = await http.get("/metrics")
            expected = 200 if token else 401
            ledger.record(
                f"{'Bob' if token else 'nobody'} GET /metrics",
                metrics.status_code == expected,
                shown(metrics),
            )


ATTACKS: list[Attack] = [
    attack_chats,
    attack_listings,
    attack_connectors,
    attack_rap_callback,
    attack_open_responses,
    attack_agui,
    attack_approvals,
    attack_feedback,
    attack_socket,
    attack_frames,
    attack_attachments,
    attack_public,
]


# ----------------------------------------------------------------------------- the tests


def served_routes(app: Any) -> set[tuple[str, str]]:
    routes: set[tuple[str, str]] = set()
    for route in app.routes:
        if isinstance(route, Route):
            routes |= {(method, route.path) for method in route.methods or () if method != "HEAD"}
        elif isinstance(route, WebSocketRoute):
            routes.add(("WS", route.path))
        elif isinstance(route, Mount):
            routes.add(("MOUNT", route.path))
        else:
            routes.add((type(route).__name__, str(getattr(route, "path", route))))
    return routes


async def start_running_turn(live: LiveServer, alice: Alice) -> asyncio.Task[list[Any]]:
    """A turn of Alice's that runs while Bob attacks (and must not be cancelled by him)."""
    alice.running_chat = f"{alice.chats[0]}-running"
    url, headers = ws_as(live, alice.running_chat, alice.token)
    started: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    async def run() -> list[Any]:
        async with open_client(url, additional_headers=headers, auto_approve=True) as client:
            await client.send({"type": "prompt", "text": MULTI_AGENT})
            first = await client.recv()
            started.set_result(first["turn_id"])
            return [first, *await client.until("end_of_stream", within=60)]

    task = asyncio.create_task(run())
    alice.running_turn = await asyncio.wait_for(started, 10)
    alice.turn_ids.append(alice.running_turn)
    return task


def test_every_route_is_in_the_matrix_or_public(tmp_path: Path) -> None:
    # The routes are fixed when the app is built, with every connector mode alike.
    settings = load_settings(
        database_url=f"sqlite+aiosqlite:///{tmp_path}/unused.db",
        data_dir=tmp_path,
        auth_mode="token",
    )
    served = served_routes(create_app(settings))
    unlisted = served - MATRIX - PUBLIC
    assert not unlisted, (
        f"routes in neither the access matrix nor PUBLIC: {sorted(unlisted)};"
        " attack them in tests/reliability/test_access_matrix.py"
    )
    stale = (MATRIX | PUBLIC) - served
    assert not stale, f"the matrix lists routes the app no longer serves: {sorted(stale)}"


async def test_bob_cannot_reach_anything_of_alices(
    world: tuple[LiveServer, Alice, Person], record_property: Any
) -> None:
    live, alice, bob = world
    running = await start_running_turn(live, alice)
    ledger = Ledger(alice.secrets())
    for attack in ATTACKS:
        await attack(live, alice, bob, ledger)
    ended = await running

    failures = ledger.failures()
    denied = len(ledger.attempts) - len(failures)
    record_property("cross_user_attempts", len(ledger.attempts))
    record_property("cross_user_denied", denied)
    print(f"\ncross-user access attempts: {len(ledger.attempts)}, denied: {denied}")
    assert not failures, "\n".join(f"{what}: {detail}" for what, _, detail in failures)
    assert len(ledger.attempts) >= 130

    # And Alice lost nothing: her running turn finished, her chats and bank are intact.
    assert ended[-1]["type"] == "end_of_stream" and ended[-1]["status"] == "completed"
    async with http_as(live, alice.token) as http:
        for chat_id, count in alice.events_before.items():
            stored = (await http.get(f"/api/chats/{chat_id}/events")).json()["events"]
            assert len(stored) == count
        titles = [chat["title"] for chat in (await http.get("/api/chats")).json()["chats"]]
        assert "renamed by bob" not in titles
        listing = (await http.get("/api/connectors")).json()["connectors"]
        plaid = next(c for c in listing if c["name"] == "plaid")
        assert plaid["connected"] and plaid["account"]["institutions"] == ["Tartan Bank"]
        pending = (await http.get("/api/approvals")).json()["approvals"]
        assert [a["approval_id"] for a in pending] == [alice.approval_id]
        ratings = [
            [turn["feedback"] and turn["feedback"]["rating"] for turn in detail["turns"]]
            for detail in [(await http.get(f"/api/chats/{c}")).json() for c in alice.chats]
        ]
        assert ratings == [["up"], [None]]  # hers, untouched; none of Bob's


async def test_no_token_or_a_wrong_one_is_401_everywhere(
    world: tuple[LiveServer, Alice, Person], record_property: Any
) -> None:
    live, alice, _bob = world
    ledger = Ledger(alice.secrets())
    chat_id = alice.chats[0]
    # Every user-authenticated REST route of the matrix, with a concrete path.
    requests = {
        ("GET", "/api/me"): ("/api/me", {}),
        ("GET", "/api/chats"): ("/api/chats", {}),
        ("GET", "/api/chats/{chat_id}"): (f"/api/chats/{chat_id}", {}),
        ("DELETE", "/api/chats/{chat_id}"): (f"/api/chats/{chat_id}", {}),
        ("PATCH", "/api/chats/{chat_id}"): (f"/api/chats/{chat_id}", {}),
        ("GET", "/api/chats/{chat_id}/events"): (f"/api/chats/{chat_id}/events", {}),
        ("GET", "/api/chats/{chat_id}/export"): (f"/api/chats/{chat_id}/export", {}),
        ("GET", "/api/chats/{chat_id}/rap-subscriptions"): (
            f"/api/chats/{chat_id}/rap-subscriptions",
            {},
        ),
        ("POST", "/api/chats/{chat_id}/attachments"): (f"/api/chats/{chat_id}/attachments", {}),
        ("GET", "/api/attachments/{attachment_id}"): (
            f"/api/attachments/{alice.attachment_id}",
            {},
        ),
        ("GET", "/api/attachments/{attachment_id}/content"): (
            f"/api/attachments/{alice.attachment_id}/content",
            {},
        ),
        ("GET", "/api/connectors"): ("/api/connectors", {}),
        ("POST", "/api/connectors/{name}/exchange"): ("/api/connectors/plaid/exchange", {}),
        ("POST", "/api/connectors/{name}/finish"): ("/api/connectors/plaid/finish", {}),
        ("POST", "/api/connectors/{name}/connect"): ("/api/connectors/gmail/connect", {}),
        ("DELETE", "/api/connectors/{name}"): ("/api/connectors/plaid", {}),
        ("GET", CALLBACK_ROUTE): (CALLBACK, {"state": alice.oauth_state, "code": "x"}),
        ("POST", "/v1/responses"): ("/v1/responses", {}),
        ("GET", "/v1/responses/{response_id}"): ("/v1/responses/resp_unknown", {}),
        ("POST", "/v1/responses/compact"): ("/v1/responses/compact", {}),
        ("GET", "/api/approvals"): ("/api/approvals", {}),
        ("POST", "/api/chats/{chat_id}/approvals/{approval_id}"): (
            f"/api/chats/{alice.approval_chat}/approvals/{alice.approval_id}",
            {},
        ),
        ("POST", "/ag-ui"): ("/ag-ui", {}),
        ("GET", "/metrics"): ("/metrics", {}),
        ("PUT", FEEDBACK_ROUTE): (f"/api/chats/{chat_id}/turns/{alice.turn_ids[0]}/feedback", {}),
        ("DELETE", FEEDBACK_ROUTE): (
            f"/api/chats/{chat_id}/turns/{alice.turn_ids[0]}/feedback",
            {},
        ),
    }
    sockets = {("WS", "/ws/chats/{chat_id}"), ("WS", "/v1/responses")}
    assert set(requests) == MATRIX - CALL_TOKEN_ROUTES - sockets
    for token in (None, "sb_" + "x" * 43, alice.token[:-1], "Bearer", "null"):
        for carrier in CARRIERS:
            async with http_as(live, token, carrier) as http:
                for (method, _), (path, params) in requests.items():
                    response = await http.request(method, path, params=params)
                    # A 401 says how to authenticate (RFC 6750 §3).
                    challenge = response.headers.get("www-authenticate", "")
                    ledger.record(
                        f"{token!r} {carrier} {method} {path}",
                        response.status_code == 401 and challenge.startswith("Bearer "),
                        shown(response),
                    )
            url, headers = ws_as(live, chat_id, token, carrier, after_seq=0)
            code, seen = await socket_refusal(url, headers)
            ledger.record(f"{token!r} {carrier} WS {chat_id}", code == 4401, seen)
            url, headers = ws_at(live, "/v1/responses", token, carrier)
            said = await socket_exchange(
                url, headers, {"type": "response.create", "model": "m", "input": "hi"}, True
            )
            ledger.record(
                f"{token!r} {carrier} WS /v1/responses",
                '"status":401' in said and said.endswith("closed 1008"),
                said,
            )
    failures = ledger.failures()
    record_property("unauthenticated_attempts", len(ledger.attempts))
    print(
        f"\nunauthenticated attempts: {len(ledger.attempts)}, "
        f"denied: {len(ledger.attempts) - len(failures)}"
    )
    assert not failures, "\n".join(f"{what}: {detail}" for what, _, detail in failures)
