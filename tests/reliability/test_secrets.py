"""No secret in any log line or event of a whole run (issue 9, "Secrets").

A real server process (``switchboard serve``) in token mode, at log level DEBUG so that
every record of every library is written, with known secrets: the Fernet key, a user's
API token, the database password (PostgreSQL ignores it under trust auth, but it is in the
URL the app holds), the model API key and a connector's API key. It runs turns that pass
and turns that fail, against fakes that echo the secrets back in their error bodies (an
upstream error message is untrusted text): the model answers 400 and 500 quoting our
``Authorization`` header, Yelp answers 500 quoting our key. The token travels in every way
a client can send it (header, ``?token=``, cookie), and wrong tokens are tried too.

Then the whole log file and every event (socket and REST) are searched: no secret may
appear, and no event may carry a stack trace or a source path.
"""

from __future__ import annotations

import json
import re
import secrets
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from cryptography.fernet import Fernet
from sqlalchemy.engine import make_url

from storage.engine import Database
from storage.users import UserRepository
from tests.fakes.fake_service import Answer, serve_fake
from tests.fakes.model_server import Call, Fail, FakeModelServer, Say, running_model_server
from tests.fakes.yelp_api import FakeYelp
from tests.support.clients import open_client
from tests.support.processes import ROOT

pytestmark = pytest.mark.parametrize("_migrated_database", ["postgresql"], indirect=True)

SECRET_KEY = Fernet.generate_key().decode()
DB_PASSWORD = "pw-" + secrets.token_urlsafe(18)
MODEL_KEY = "sk-test-" + secrets.token_hex(16)
YELP_KEY = "yelp-" + secrets.token_hex(16)
GOOGLE_SECRET = "GOCSPX-" + secrets.token_urlsafe(18)
# A stack trace or a path into the code, in an event.
INTERNALS = re.compile(r"Traceback|File \"|site-packages|\.py\b|" + re.escape(str(ROOT)))


@pytest.fixture
async def model() -> AsyncIterator[FakeModelServer]:
    async with running_model_server(FakeModelServer(api_key=MODEL_KEY)) as server:
        yield server


@pytest.fixture
async def yelp() -> AsyncIterator[FakeYelp]:
    fake = FakeYelp(api_key=YELP_KEY)
    async with serve_fake(fake):
        yield fake


def with_password(database_url: str) -> str:
    return make_url(database_url).set(password=DB_PASSWORD).render_as_string(hide_password=False)


async def collect_turn(client: Any, text: str) -> list[dict[str, Any]]:
    await client.send({"type": "prompt", "text": text})
    # Suggestions are off: end_of_stream is the last event of every turn.
    return await client.until("end_of_stream", within=30)


async def test_no_secret_in_any_log_line_or_event(
    servers: Any, database_url: str, model: FakeModelServer, yelp: FakeYelp
) -> None:
    url = with_password(database_url)
    db = Database(url)
    try:
        _user, token = await UserRepository(db).create_user(f"keeper-{uuid.uuid4().hex[:6]}")
    finally:
        await db.dispose()
    server = servers(
        url,
        auth_mode="token",
        secret_key=SECRET_KEY,
        log_level="DEBUG",
        model=f"responses:fake-large@{model.base_url()}",
        model_api_key=MODEL_KEY,
        model_max_retries=0,
        suggest_model="off",
        connector_modes="yelp=live,gmail=live",
        yelp_api_key=YELP_KEY,
        yelp_base_url=yelp.base_url,
        http_retries=0,
        google_client_id="client-id.apps.example",
        google_client_secret=GOOGLE_SECRET,
    )
    server.start()
    secret_values = {
        "token": token,
        "secret key": SECRET_KEY,
        "db password": DB_PASSWORD,
        "model key": MODEL_KEY,
        "yelp key": YELP_KEY,
        "google secret": GOOGLE_SECRET,
    }

    # Yelp fails, quoting the key it was sent; the model quotes our Authorization header.
    yelp.script(
        "/v3/businesses/search",
        Answer(
            500,
            {
                "error": {
                    "code": "INTERNAL_ERROR",
                    "description": f"backend down; your key {YELP_KEY}",
                }
            },
        ),
    )
    model.script(
        Say("All good here."),
        Fail(400, "invalid_request_error", "bad request", echo_request=True),
        Fail(500, "server_error", "boom", echo_request=True),
        Call("transfer_to_yelp"),
        Call("search_businesses_at_yelp", {"term": "sushi", "location": "Boston, MA"}),
        Say("Yelp is not answering right now."),
    )
    chat_id = uuid.uuid4().hex
    marker = uuid.uuid4().hex[:10]  # makes each prompt findable in the log
    prompts = [
        f"hello {marker}",
        f"tell me about my inbox {marker}",
        f"and my bank {marker}",
        f"find sushi in Boston {marker}",
    ]
    events: list[dict[str, Any]] = []
    async with open_client(server.ws_url(chat_id, token=token), auto_approve=True) as client:
        for prompt in prompts:
            events += await collect_turn(client, prompt)
    statuses = [e["status"] for e in events if e["type"] == "end_of_stream"]
    assert statuses == ["completed", "failed", "failed", "completed"], statuses
    codes = [e["code"] for e in events if e["type"] == "error"]
    assert codes == ["model_error", "model_unavailable", "tool_error"], codes
    tool_outputs = [e["output"] for e in events if e["type"] == "tool_output"]
    assert [o["response_type"] for o in tool_outputs] == ["error"], tool_outputs
    # The fakes did quote the secrets back (else this test would prove little).
    (search,) = yelp.hits("/v3/businesses/search")
    assert search.headers["authorization"] == f"Bearer {YELP_KEY}"
    assert sum(r.headers.get("authorization") == f"Bearer {MODEL_KEY}" for r in model.requests) == 6
    # The handshake headers are logged at DEBUG: the token in a header and in a cookie.
    for extra in ({"Authorization": f"Bearer {token}"}, {"Cookie": f"sb_session={token}"}):
        async with open_client(
            server.ws_url(chat_id, after_seq=0), additional_headers=extra, auto_approve=True
        ) as client:
            await client.send({"type": "ping"})
            events_again = await client.until("pong")
            assert events_again[0]["type"] == "user_prompt"

    rest: list[str] = []
    for carrier in (
        {"headers": {"Authorization": f"Bearer {token}"}},
        {"params": {"token": token}},
        {"cookies": {"sb_session": token}},
    ):
        async with httpx.AsyncClient(base_url=server.http, timeout=10, **carrier) as http:
            for path in (
                "/api/chats",
                f"/api/chats/{chat_id}",
                f"/api/chats/{chat_id}/events",
                "/api/connectors",
                "/api/me",
            ):
                answer = await http.get(path)
                assert answer.status_code == 200, (path, answer.text)
                rest.append(answer.text)
    async with httpx.AsyncClient(base_url=server.http, timeout=10) as http:
        for wrong in ("sb_" + "w" * 43, token[:-2]):  # wrong tokens are not logged either
            assert (await http.get("/api/chats", params={"token": wrong})).status_code == 401
            secret_values[f"wrong token {wrong[:6]}"] = wrong
        metrics = await http.get("/metrics", headers={"Authorization": f"Bearer {token}"})
        assert metrics.status_code == 200
        rest.append(metrics.text)
        stored = json.loads(rest[2])["events"]
    assert [e["type"] for e in stored] == [e["type"] for e in events if e["seq"] is not None]

    server.stop()
    log = server.log()
    assert '"level": "DEBUG"' in log, "the log is not at DEBUG: the test would prove little"
    assert "GET /api/chats?token=" in log  # the access log has the query, redacted
    wire = [json.dumps(e) for e in events] + [json.dumps(e) for e in stored] + rest
    for name, value in secret_values.items():
        assert value not in log, f"the {name} is in the server log"
        for text in wire:
            assert value not in text, f"the {name} reached a client: {text[:300]}"
    # Prompts are the user's words: DEBUG lines may quote them, INFO and above never.
    for line in log.splitlines():
        if '"level": "DEBUG"' not in line:
            assert marker not in line, f"a prompt in a log line above DEBUG: {line[:300]}"
    # The database URL is logged with its password masked.
    assert "***" in log and make_url(url).username in log
    for event in [*events, *stored]:
        found = INTERNALS.search(json.dumps(event))
        assert found is None, f"{found.group()!r} in an event: {event}"
