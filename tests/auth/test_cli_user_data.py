"""``switchboard users delete|export`` and ``tokens list|revoke|rotate``, on both engines.

Each user gets a row in every table (``seed_everything``), so a table that ``users
delete`` forgot would keep a row and fail the test; another user's rows must survive.
"""

from __future__ import annotations

import asyncio
import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import insert, select

from app.cli import main
from storage.attachments import new_blob_key
from storage.blobs import BlobMissing, LocalBlobStore
from storage.engine import Database
from storage.models import (
    Base,
    approvals,
    attachments,
    chat_events,
    chat_memory,
    chats,
    connected_accounts,
    conversation_items,
    feedback,
    open_responses,
    paused_turns,
    rap_subscriptions,
    turns,
    user_identities,
)
from storage.user_data import CHAT_TABLES, USER_TABLES, count_rows
from storage.users import UserRepository

TOKEN = re.compile(r"\bsb_[A-Za-z0-9_-]{20,}")


@pytest.fixture
def cli_env(database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("SWITCHBOARD_DATABASE_URL", database_url)
    monkeypatch.setenv("SWITCHBOARD_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("SWITCHBOARD_HOST", "127.0.0.1")
    return database_url


async def cli(*argv: str) -> int:
    return await asyncio.to_thread(main, list(argv))


async def seed_everything(
    db: Database, name: str, blobs: LocalBlobStore | None = None
) -> tuple[str, str]:
    """A user named ``name`` with a row in every table; returns (user id, token)."""
    users = UserRepository(db)
    user, token = await users.create_user(name)
    await users.create_token(user.id, "laptop")
    now = datetime.now(UTC)
    chat, turn = f"chat-{name}", f"turn-{name}"
    async with db.session(write=True) as session:
        # The identity a sign-in through the provider would have linked to this user.
        await session.execute(
            insert(user_identities).values(
                user_id=user.id,
                issuer="https://id.example",
                subject=f"sub-{name}",
                created_at=now,
            )
        )
        await session.execute(
            insert(chats).values(
                id=chat, user_id=user.id, title=f"{name}'s chat", created_at=now, updated_at=now
            )
        )
        await session.execute(
            insert(turns).values(
                id=turn,
                chat_id=chat,
                prompt="hello",
                status="running",
                created_at=now,
                user_prompt_seq=1,
            )
        )
        await session.execute(
            insert(chat_events).values(
                chat_id=chat,
                seq=1,
                turn_id=turn,
                type="user_prompt",
                payload={"text": f"hello from {name}"},
                ts="2026-11-24T12:00:00.000Z",
            )
        )
        await session.execute(
            insert(conversation_items).values(
                chat_id=chat, item={"role": "user", "content": "hello"}, created_at=now
            )
        )
        await session.execute(
            insert(chat_memory).values(
                chat_id=chat,
                through_item_id=1,
                summary=f"{name} said hello",
                summary_tokens=5,
                folded_items=1,
                compactions=1,
                updated_at=now,
            )
        )
        await session.execute(
            insert(connected_accounts).values(
                user_id=user.id,
                connector="gmail",
                credentials=b"encrypted-secret",
                meta={"email": f"{name}@example.com"},
                created_at=now,
                updated_at=now,
            )
        )
        await session.execute(
            insert(rap_subscriptions).values(
                chat_id=chat,
                call_id=f"call-{name}",
                connector="feeds",
                operation="watch",
                created_at=now,
            )
        )
        await session.execute(
            insert(open_responses).values(
                id=f"resp-{name}",
                chat_id=chat,
                turn_id=turn,
                status="completed",
                created_at=now,
            )
        )
        await session.execute(
            insert(approvals).values(
                id=f"appr-{name}",
                chat_id=chat,
                turn_id=turn,
                call_id="c1",
                name="send_email",
                description="send",
                arguments={"to": "x"},
                current_agent="GMail",
                status="pending",
                created_at=now,
                expires_at=now + timedelta(hours=1),
            )
        )
        await session.execute(
            insert(paused_turns).values(
                turn_id=turn, chat_id=chat, state={"paused": True}, created_at=now
            )
        )
        await session.execute(
            insert(feedback).values(
                turn_id=turn,
                user_id=user.id,
                chat_id=chat,
                rating="down",
                comment=f"{name}'s comment",
                created_at=now,
                updated_at=now,
            )
        )
        blob_key = new_blob_key()
        await session.execute(
            insert(attachments).values(
                id=f"att-{name}",
                chat_id=chat,
                name=f"{name}.txt",
                content_type="text/plain",
                size=5,
                sha256="0" * 64,
                blob_key=blob_key,
                turn_id=turn,
                created_at=now,
            )
        )
        await session.commit()
    if blobs is not None:
        await blobs.put(blob_key, f"{name}'s file".encode())
    return user.id, token


def test_every_table_is_placed_for_delete_and_export() -> None:
    placed = {table.name for table in (*USER_TABLES, *CHAT_TABLES)} | {"users"}
    assert placed == set(Base.metadata.tables)


async def test_delete_takes_every_row_of_the_user_and_none_of_another(
    cli_env: str, db: Database, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The CLI's blob store: the default one, under SWITCHBOARD_DATA_DIR.
    blob_dir = tmp_path / "attachments"
    blobs = LocalBlobStore(blob_dir)
    await seed_everything(db, "alice", blobs)
    await seed_everything(db, "bob", blobs)
    before_alice = await count_rows(db, "alice")
    before_bob = await count_rows(db, "bob")
    # The seed reaches every table, so nothing below passes for lack of data.
    assert all(before_alice[table] >= 1 for table in Base.metadata.tables), str(before_alice)

    # Without --yes: what would go, and nothing goes.
    assert await cli("users", "delete", "alice") == 1
    assert "--yes" in capsys.readouterr().err
    assert await count_rows(db, "alice") == before_alice

    assert await cli("users", "delete", "alice", "--yes") == 0
    assert "deleted user 'alice'" in capsys.readouterr().out
    assert set((await count_rows(db, "alice")).values()) == {0}
    assert await count_rows(db, "bob") == before_bob
    # Alice's attachment bytes went with her rows; Bob's stayed.
    files = [path.read_bytes() for path in blob_dir.rglob("*") if path.is_file()]
    assert files == [b"bob's file"]

    assert await cli("users", "delete", "alice", "--yes") == 1
    assert "no user named 'alice'" in capsys.readouterr().err


async def test_export_is_the_user_s_data_without_secrets(
    cli_env: str, db: Database, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await seed_everything(db, "alice")
    await seed_everything(db, "bob")

    assert await cli("users", "export", "alice") == 0
    exported = json.loads(capsys.readouterr().out)
    assert exported["user"]["name"] == "alice"
    tables = exported["tables"]
    assert set(tables) | {"users"} == set(Base.metadata.tables)
    assert all(tables[name] for name in tables), "every table has alice's row"
    assert tables["chat_events"][0]["payload"] == {"text": "hello from alice"}
    assert [row["label"] for row in tables["api_tokens"]] == ["initial", "laptop"]
    assert "token_hash" not in tables["api_tokens"][0]
    assert "credentials" not in tables["connected_accounts"][0]
    text = json.dumps(exported)
    assert "bob" not in text and "encrypted-secret" not in text

    target = tmp_path / "alice.json"
    assert await cli("users", "export", "alice", "--output", str(target)) == 0
    assert json.loads(target.read_text()) == exported
    assert target.stat().st_mode & 0o777 == 0o600

    assert await cli("users", "export", "nobody") == 1
    assert "no user named 'nobody'" in capsys.readouterr().err


async def test_tokens_list_revoke_and_rotate(
    cli_env: str, db: Database, capsys: pytest.CaptureFixture[str]
) -> None:
    users = UserRepository(db)
    _alice_id, alice_token = await seed_everything(db, "alice")
    _bob_id, bob_token = await seed_everything(db, "bob")

    assert await cli("tokens", "list", "--user", "alice") == 0
    listed = capsys.readouterr().out
    rows = [line.split("\t") for line in listed.splitlines()[1:]]
    assert [(row[1], row[2]) for row in rows] == [("alice", "initial"), ("alice", "laptop")]
    assert TOKEN.search(listed) is None  # never the token itself
    initial_id = rows[0][0]

    assert await cli("tokens", "rotate", initial_id) == 0
    rotated = TOKEN.search(capsys.readouterr().out)
    assert rotated is not None
    assert await users.user_for_token(alice_token) is None
    new_user = await users.user_for_token(rotated[0])
    assert new_user is not None and new_user.name == "alice"

    assert await cli("tokens", "list") == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()[1:]]
    alice_rows = [row for row in rows if row[1] == "alice"]
    assert sorted(row[2] for row in alice_rows) == ["initial", "laptop"]
    new_id = next(row[0] for row in alice_rows if row[2] == "initial")

    assert await cli("tokens", "revoke", new_id) == 0
    assert await users.user_for_token(rotated[0]) is None
    assert await cli("tokens", "revoke", new_id) == 1
    assert "no token with id" in capsys.readouterr().err
    assert await cli("tokens", "rotate", "999999") == 1
    assert await cli("tokens", "list", "--user", "nobody") == 1
    # Bob's token was never touched.
    bob = await users.user_for_token(bob_token)
    assert bob is not None and bob.name == "bob"


async def test_a_token_id_that_is_not_a_number_is_a_usage_error(
    cli_env: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        await cli("tokens", "revoke", "sb_abc")
    assert exited.value.code == 2
    assert "is not a token id" in capsys.readouterr().err


async def test_attachments_prune_takes_only_old_uploads_never_sent(
    cli_env: str, db: Database, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await seed_everything(db, "alice")  # its own attachment was sent: it stays
    blobs = LocalBlobStore(tmp_path / "attachments")
    now = datetime.now(UTC)
    kept = {}
    cases = {"old-unsent": (10, None), "new-unsent": (1, None), "old-sent": (10, "turn-alice")}
    async with db.session(write=True) as session:
        for name, (days, turn) in cases.items():
            key = new_blob_key()
            kept[name] = key
            await session.execute(
                insert(attachments).values(
                    id=f"att-{name}",
                    chat_id="chat-alice",
                    name=f"{name}.txt",
                    content_type="text/plain",
                    size=4,
                    sha256="0" * 64,
                    blob_key=key,
                    turn_id=turn,
                    created_at=now - timedelta(days=days),
                )
            )
        await session.commit()
    for key in kept.values():
        await blobs.put(key, b"data")

    assert await cli("attachments", "prune", "--older-than-days", "7") == 0
    assert "deleted 1 attachment(s)" in capsys.readouterr().out
    async with db.session() as session:
        left = set((await session.scalars(select(attachments.c.id))).all())
    assert left == {"att-alice", "att-new-unsent", "att-old-sent"}
    with pytest.raises(BlobMissing):
        await blobs.get(kept["old-unsent"])
    assert await blobs.get(kept["new-unsent"]) == b"data"
