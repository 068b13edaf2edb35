"""The sign-in settings refuse what would leave a server open or unusable, naming the
variable to fix, before the server starts."""

from __future__ import annotations

import pytest

from app.settings import SettingsError, load_settings


def refused(**values: object) -> str:
    with pytest.raises(SettingsError) as error:
        load_settings(host="127.0.0.1", **values)
    return str(error.value)


def test_oidc_needs_its_issuer_and_audience() -> None:
    message = refused(auth_mode="oidc")
    assert "SWITCHBOARD_OIDC_ISSUER and SWITCHBOARD_OIDC_AUDIENCE" in message
    message = refused(auth_mode="oidc", oidc_issuer="https://id.example.com")
    assert "SWITCHBOARD_OIDC_AUDIENCE" in message and "ISSUER" not in message


@pytest.mark.parametrize(
    ("issuer", "reason"),
    [
        ("id.example.com", "must be the issuer's URL"),
        ("http://id.example.com", "must use https://"),
    ],
)
def test_an_issuer_must_be_an_https_url(issuer: str, reason: str) -> None:
    message = refused(auth_mode="oidc", oidc_issuer=issuer, oidc_audience="api")
    assert "SWITCHBOARD_OIDC_ISSUER" in message and reason in message


def test_a_loopback_issuer_may_use_http_and_a_trailing_slash_is_dropped() -> None:
    settings = load_settings(
        host="127.0.0.1",
        auth_mode="oidc",
        oidc_issuer="http://127.0.0.1:9000/",
        oidc_audience="api",
    )
    assert settings.oidc_issuer == "http://127.0.0.1:9000"


def test_header_mode_needs_the_proxy_addresses() -> None:
    assert "SWITCHBOARD_TRUSTED_PROXIES" in refused(auth_mode="header")
    message = refused(auth_mode="header", trusted_proxies="10.0.0.5,not-an-ip")
    assert "SWITCHBOARD_TRUSTED_PROXIES" in message and "'not-an-ip'" in message
    settings = load_settings(auth_mode="header", trusted_proxies="10.0.0.5, 10.1.0.0/24")
    assert settings.trusted_proxies == ["10.0.0.5", "10.1.0.0/24"]
