"""The frame limit fits the prompt limit: derived from it when unset, refused when too small.

A prompt is limited in characters (code points), a frame in bytes. The worst case for one
character is an emoji written by an ASCII-only JSON encoder (Python's json.dumps by
default) as a surrogate pair of escapes, ``\\ud83d\\ude00``: 12 bytes. A frame limit below
that for the longest legal prompt closes the socket (1009) on prompts the server accepts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.cli import main
from app.settings import SettingsError, load_settings, min_frame_bytes
from websocket.protocol import (
    MAX_APPROVAL_ID,
    MAX_APPROVAL_REASON,
    MAX_ATTACHMENT_ID,
    MAX_ATTACHMENTS,
    MAX_CLIENT_MESSAGE_ID,
)

# One character of each width: 2 bytes in UTF-8 (é), 3 (€, CJK), 4 (an emoji: 12 escaped).
SCRIPTS = {"latin": "é", "euro": "€", "cjk": "漢", "emoji": "😀"}


@pytest.fixture(autouse=True)
def _no_limits_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SWITCHBOARD_MAX_FRAME_BYTES", raising=False)
    monkeypatch.delenv("SWITCHBOARD_MAX_PROMPT_CHARS", raising=False)


def largest_encodings(frame: dict[str, Any]) -> int:
    """The most bytes ``frame`` takes as any ordinary JSON encoder writes it."""
    return max(
        len(json.dumps(frame, **options).encode())
        for options in (
            {"ensure_ascii": True},
            {"ensure_ascii": False},
            {"ensure_ascii": True, "indent": 2},
            {"ensure_ascii": True, "separators": (",", ":")},
        )
    )


def longest_prompt(chars: int, char: str) -> dict[str, Any]:
    return {
        "type": "prompt",
        "text": char * chars,
        "client_message_id": char * MAX_CLIENT_MESSAGE_ID,
        "attachments": [char * MAX_ATTACHMENT_ID] * MAX_ATTACHMENTS,
    }


@pytest.mark.parametrize("script", SCRIPTS)
def test_the_default_frame_limit_fits_the_longest_prompt_in_any_script(script: str) -> None:
    settings = load_settings()
    frame = longest_prompt(settings.max_prompt_chars, SCRIPTS[script])
    assert largest_encodings(frame) <= settings.max_frame_bytes


def test_unset_the_frame_limit_is_derived_from_the_prompt_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SWITCHBOARD_MAX_PROMPT_CHARS", "100000")
    settings = load_settings()
    assert settings.max_prompt_chars == 100_000
    assert settings.max_frame_bytes == min_frame_bytes(100_000)
    assert largest_encodings(longest_prompt(100_000, "😀")) <= settings.max_frame_bytes
    # Not merely large: the worst prompt takes most of it (a limit far above would let
    # frames through that no legal prompt needs).
    assert settings.max_frame_bytes - largest_encodings(longest_prompt(100_000, "😀")) < 2048


def test_a_tiny_prompt_limit_still_lets_the_longest_approval_through() -> None:
    settings = load_settings(max_prompt_chars=1)
    approval = {
        "type": "approval",
        "approval_id": "😀" * MAX_APPROVAL_ID,
        "decision": "reject",
        "reason": "😀" * MAX_APPROVAL_REASON,
    }
    assert largest_encodings(approval) <= settings.max_frame_bytes
    assert largest_encodings(longest_prompt(1, "😀")) <= settings.max_frame_bytes


def test_a_frame_limit_set_high_enough_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWITCHBOARD_MAX_FRAME_BYTES", "1000000")
    assert load_settings().max_frame_bytes == 1_000_000
    exactly = min_frame_bytes(32_000)
    assert load_settings(max_frame_bytes=exactly).max_frame_bytes == exactly


@pytest.mark.parametrize("frame_bytes", [65_536, min_frame_bytes(32_000) - 1, 0, -5])
def test_a_frame_limit_too_small_for_the_prompt_limit_is_refused(
    monkeypatch: pytest.MonkeyPatch, frame_bytes: int
) -> None:
    monkeypatch.setenv("SWITCHBOARD_MAX_FRAME_BYTES", str(frame_bytes))
    with pytest.raises(SettingsError) as refused:
        load_settings()
    message = str(refused.value)
    assert (
        f"SWITCHBOARD_MAX_FRAME_BYTES={frame_bytes} is too small for "
        "SWITCHBOARD_MAX_PROMPT_CHARS=32000" in message
    )
    assert f"at least {min_frame_bytes(32_000)}" in message
    assert "leave it unset" in message


def test_raising_the_prompt_limit_past_a_set_frame_limit_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SWITCHBOARD_MAX_FRAME_BYTES", str(min_frame_bytes(32_000)))
    monkeypatch.setenv("SWITCHBOARD_MAX_PROMPT_CHARS", "32001")
    with pytest.raises(SettingsError, match=f"at least {min_frame_bytes(32_001)}"):
        load_settings()


def test_the_command_refuses_to_start_with_contradicting_limits(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setenv("SWITCHBOARD_DATABASE_URL", f"sqlite+aiosqlite:///{tmp_path}/cli.db")
    monkeypatch.setenv("SWITCHBOARD_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("SWITCHBOARD_MAX_FRAME_BYTES", "65536")
    # Every command (serve too) loads the settings first: refused before anything is
    # opened, with exit code 2 and one clear message. `migrate`, because it ends either way.
    assert main(["migrate"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("switchboard: invalid configuration:")
    assert (
        "SWITCHBOARD_MAX_FRAME_BYTES=65536 is too small for "
        "SWITCHBOARD_MAX_PROMPT_CHARS=32000" in err
    )
    assert "Traceback" not in err
