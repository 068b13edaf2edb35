"""The `switchboard` command, run through main([...]) on a temporary SQLite database.

main() runs its own event loop (asyncio.run), so async tests call it in a thread.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from apptest import make_settings, running

from app.cli import main

TOKEN = re.compile(r"\bsb_[A-Za-z0-9_-]{20,}")


@pytest.fixture
def sqlite_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    url = f"sqlite+aiosqlite:///{tmp_path}/cli.db"
    monkeypatch.setenv("SWITCHBOARD_DATABASE_URL", url)
    monkeypatch.setenv("SWITCHBOARD_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("SWITCHBOARD_HOST", "127.0.0.1")
    return url


async def cli(*argv: str) -> int:
    return await asyncio.to_thread(main, list(argv))


async def test_users_create_prints_a_token_that_authenticates(
    sqlite_env: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert await cli("migrate") == 0
    assert "latest schema" in capsys.readouterr().out

    assert await cli("users", "create", "carol") == 0
    out = capsys.readouterr().out
    token = TOKEN.search(out)
    assert token is not None, out
    assert "Authorization: Bearer" in out

    async with running(make_settings(sqlite_env, tmp_path)) as api:
        me = await api.client.get("/api/me", headers={"Authorization": f"Bearer {token[0]}"})
        assert me.status_code == 200
        assert me.json()["name"] == "carol"

    # A second token for the same user, from `users token`.
    assert await cli("users", "token", "carol") == 0
    second = TOKEN.search(capsys.readouterr().out)
    assert second is not None and second[0] != token[0]
    async with running(make_settings(sqlite_env, tmp_path)) as api:
        me = await api.client.get("/api/me", headers={"Authorization": f"Bearer {second[0]}"})
        assert me.json()["name"] == "carol"

    assert await cli("users", "list") == 0
    assert "carol" in capsys.readouterr().out


async def test_duplicate_user_is_a_clear_error(
    sqlite_env: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert await cli("migrate") == 0
    assert await cli("users", "create", "dave") == 0
    capsys.readouterr()
    assert await cli("users", "create", "dave") == 1
    captured = capsys.readouterr()
    assert "already exists" in captured.err
    assert "switchboard users token dave" in captured.err
    assert "Traceback" not in captured.err and not TOKEN.search(captured.out)


async def test_token_for_unknown_user(sqlite_env: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert await cli("migrate") == 0
    assert await cli("users", "token", "nobody") == 1
    assert "switchboard users create nobody" in capsys.readouterr().err


async def test_users_on_unmigrated_database(
    sqlite_env: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert await cli("users", "list") == 1
    assert "run `switchboard migrate`" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("variable", "value"),
    [("SWITCHBOARD_PORT", "not-a-port"), ("SWITCHBOARD_DATABASE_URL", "mysql://x")],
)
def test_invalid_setting_exits_2_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], variable: str, value: str
) -> None:
    monkeypatch.setenv(variable, value)
    assert main(["migrate"]) == 2
    err = capsys.readouterr().err
    assert variable in err
    assert "Traceback" not in err


def test_serve_refuses_local_auth_on_a_public_address(
    sqlite_env: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SWITCHBOARD_AUTH_MODE", "local")
    assert main(["serve", "--host", "0.0.0.0", "--no-migrate"]) == 2
    assert "SWITCHBOARD_AUTH_MODE=token" in capsys.readouterr().err


def test_unreachable_database_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SWITCHBOARD_DATABASE_URL", "postgresql+asyncpg://u:pw@127.0.0.1:1/x")
    monkeypatch.setenv("SWITCHBOARD_DATA_DIR", str(tmp_path))
    assert main(["users", "list"]) == 1
    err = capsys.readouterr().err
    assert "SWITCHBOARD_DATABASE_URL" in err and ":pw@" not in err and "Traceback" not in err


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main([])
    assert caught.value.code == 2
    with pytest.raises(SystemExit) as caught:
        main(["users"])
    assert caught.value.code == 2


async def test_empty_user_name(sqlite_env: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert await cli("migrate") == 0
    assert await cli("users", "create", "  ") == 1
    assert "must not be empty" in capsys.readouterr().err


def test_serve_checks_the_database_before_starting(
    sqlite_env: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Keep the test process's logging as pytest set it up.
    monkeypatch.setattr("app.log_setup.configure_logging", lambda level: None)
    assert main(["serve", "--no-migrate"]) == 1
    assert "run `switchboard migrate`" in capsys.readouterr().err


def test_serve_refuses_a_bad_secret_key(
    sqlite_env: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SWITCHBOARD_SECRET_KEY", "not-a-fernet-key")
    assert main(["serve", "--no-migrate"]) == 2
    assert "SWITCHBOARD_SECRET_KEY" in capsys.readouterr().err


def test_serve_refuses_an_approval_override_naming_no_tool(
    sqlite_env: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A typo would leave the tool it meant ungated: the server does not start.
    monkeypatch.setenv("SWITCHBOARD_APPROVAL_OVERRIDES", "send_gmail=auto")
    assert main(["serve", "--no-migrate"]) == 2
    err = capsys.readouterr().err
    assert (
        "SWITCHBOARD_APPROVAL_OVERRIDES: no tool is named 'send_gmail' "
        "(did you mean 'send_google_email'?)"
    ) in err
    assert "Traceback" not in err
