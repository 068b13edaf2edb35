"""The key ring: comma-separated Fernet keys for rotation, clear errors for bad keys."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet

from app.services import build_fernet
from app.settings import SettingsError


def test_rotation_new_key_first_still_decrypts_old() -> None:
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    written_before = build_fernet(old).encrypt(b"credentials")
    ring = build_fernet(f"{new}, {old}")
    assert ring.decrypt(written_before) == b"credentials"
    # New writes use the first key only.
    assert Fernet(new.encode()).decrypt(ring.encrypt(b"x")) == b"x"


@pytest.mark.parametrize("bad", ["not-a-key", " , "])
def test_bad_key_names_the_variable(bad: str) -> None:
    with pytest.raises(SettingsError, match="SWITCHBOARD_SECRET_KEY"):
        build_fernet(bad)
