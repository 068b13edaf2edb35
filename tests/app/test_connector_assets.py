"""Each connector's UI card, served from its own folder (``GET /connectors/{name}/card.js``),
listed in ``GET /api/connectors``, and the page's Content-Security-Policy built from the
sources the installed connectors declare."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from apptest import Running, User, create_user, running

from app.settings import Settings
from app.ui import content_security_policy
from connectors.registry import register_connectors
from storage.engine import Database
from tests.support.card_plugin import CardPlugin, forget, install_card_plugin

REPO = Path(__file__).resolve().parents[2]
CARD_JS = "export default (ui) => ({ renderers: {} });\n"
CARD_CSS = ".desk-ticket { color: rgb(1, 2, 3); }\n"
# What the page's policy was when app/ui.py named Plaid's host itself: with the built-ins
# installed, the policy built from their declarations is exactly this.
POLICY_WITH_PLAID = (
    "default-src 'self'; script-src 'self' https://cdn.plaid.com; style-src 'self'; "
    "img-src 'self' data: https:; connect-src 'self'; frame-src https://cdn.plaid.com; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    yield root


@pytest.fixture
def plugins(site: Path) -> Iterator[dict[str, CardPlugin]]:
    """Two plug-ins: "desk" ships a card, a stylesheet, an icon and a widget host in the
    policy; "bare" ships nothing for the UI."""
    installed = {
        "desk": install_card_plugin(
            site,
            "desk",
            card_js=CARD_JS,
            card_css=CARD_CSS,
            icon="review",
            csp={
                "script-src": ("https://widgets.desk.example",),
                "frame-src": ("https://widgets.desk.example",),
            },
        ),
        "bare": install_card_plugin(site, "bare"),
    }
    yield installed
    forget(*installed.values())


@pytest.fixture
async def server(settings: Settings, plugins: dict[str, CardPlugin]) -> AsyncIterator[Running]:
    async with running(settings) as started:
        yield started


@pytest.fixture
async def carol(db: Database) -> User:
    return await create_user(db, "carol")


async def listing(server: Running, user: User) -> dict[str, dict[str, Any]]:
    answer = await server.client.get("/api/connectors", headers=user.auth)
    answer.raise_for_status()
    return {item["name"]: item for item in answer.json()["connectors"]}


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


# ----------------------------------------------------------------------------- the route


async def test_a_builtin_card_is_served_from_its_folder_and_cached_by_its_digest(
    server: Running, carol: User
) -> None:
    gmail = (await listing(server, carol))["gmail"]
    card = REPO / "connectors" / "gmail" / "card.js"
    assert gmail["icon"] == "mail"
    assert gmail["card"] == f"/connectors/gmail/card.js?v={digest(card)}"
    assert gmail["card_css"] == f"/connectors/gmail/card.css?v={digest(card.with_name('card.css'))}"

    # Public, like /static: the page imports it without a token.
    answer = await server.client.get(gmail["card"])
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "text/javascript; charset=utf-8"
    assert answer.content == card.read_bytes()
    assert answer.headers["etag"] == f'"{digest(card)}"'
    assert answer.headers["cache-control"] == "public, max-age=31536000, immutable"
    assert answer.headers["x-content-type-options"] == "nosniff"

    # Without the digest (or an old one): revalidated, and unchanged is a 304.
    for path in ("/connectors/gmail/card.js", "/connectors/gmail/card.js?v=0123456789abcdef"):
        plain = await server.client.get(path)
        assert plain.status_code == 200 and plain.headers["cache-control"] == "no-cache"
        assert plain.headers["etag"] == f'"{digest(card)}"'
    again = await server.client.get(
        "/connectors/gmail/card.js", headers={"If-None-Match": f'"{digest(card)}"'}
    )
    assert again.status_code == 304 and again.content == b""
    changed = await server.client.get(
        "/connectors/gmail/card.js", headers={"If-None-Match": '"0123456789abcdef"'}
    )
    assert changed.status_code == 200
    anything = await server.client.get("/connectors/gmail/card.js", headers={"If-None-Match": "*"})
    assert anything.status_code == 304

    css = await server.client.get(gmail["card_css"])
    assert css.headers["content-type"] == "text/css; charset=utf-8"
    assert b".email-list" in css.content
    head = await server.client.head(gmail["card"])
    assert head.status_code == 200 and head.headers["etag"] == f'"{digest(card)}"'


async def test_a_plugin_card_is_listed_and_served(
    server: Running, carol: User, plugins: dict[str, CardPlugin]
) -> None:
    found = await listing(server, carol)
    desk = found["desk"]
    package = plugins["desk"].package
    assert desk["icon"] == "review"
    assert desk["card"] == f"/connectors/desk/card.js?v={digest(package / 'card.js')}"
    assert desk["card_css"] == f"/connectors/desk/card.css?v={digest(package / 'card.css')}"
    assert (await server.client.get(desk["card"])).text == CARD_JS
    assert (await server.client.get(desk["card_css"])).text == CARD_CSS
    # A connector without UI files: no card, generic cards in the page.
    bare = found["bare"]
    assert bare["card"] is None and bare["card_css"] is None and bare["icon"] is None
    assert (await server.client.get("/connectors/bare/card.js")).status_code == 404


@pytest.mark.parametrize(
    "path",
    [
        "/connectors/nobody/card.js",  # no such connector
        "/connectors/gmail/render.py",  # a file beside the card, not a card file
        "/connectors/gmail/__init__.py",
        "/connectors/gmail/card.mjs",
        "/connectors/gmail/CARD.JS",
        "/connectors/desk/card.js%00",
        # Out of the folder: never a path on disk, whatever the encoding.
        "/connectors/gmail/..%2F..%2Fpyproject.toml",
        "/connectors/gmail/%2e%2e%2fcard.js",
        "/connectors/..%2Fgmail/card.js",
        "/connectors/%2e%2e/card.js",
        "/connectors/gmail/card.js/extra",
        "/connectors/gmail",
    ],
)
async def test_nothing_but_a_connector_card_file_is_served(server: Running, path: str) -> None:
    answer = await server.client.get(path)
    assert answer.status_code == 404, f"{path} answered {answer.status_code}"
    assert b"import" not in answer.content and b"[project]" not in answer.content
    # Nothing of the request is echoed back: the route's own answer, or the app's 404.
    assert answer.text in (
        "no such connector card file; GET /api/connectors lists each connector's card",
        '{"error":{"code":"not_found","message":"not found"}}',
    ), answer.text


# ----------------------------------------------------------------------------- the policy


def test_the_builtins_policy_is_the_one_the_page_always_had() -> None:
    builtins = register_connectors(Settings()).connectors
    assert [c.name for c in builtins] == ["gmail", "plaid", "yelp", "search"]
    assert content_security_policy(builtins) == POLICY_WITH_PLAID


def test_without_plaid_nothing_lets_plaid_in() -> None:
    others = [c for c in register_connectors(Settings()).connectors if c.name != "plaid"]
    policy = content_security_policy(others)
    assert "plaid" not in policy
    assert "frame-src" not in policy  # default-src 'self' governs frames then
    assert "script-src 'self';" in policy


async def test_the_page_policy_carries_a_plugins_declared_sources(server: Running) -> None:
    answer = await server.client.get("/")
    directives = dict(
        part.strip().split(" ", 1) for part in answer.headers["content-security-policy"].split(";")
    )
    assert directives["script-src"] == "'self' https://cdn.plaid.com https://widgets.desk.example"
    assert directives["frame-src"] == "https://cdn.plaid.com https://widgets.desk.example"
    assert directives["connect-src"] == "'self'"
    assert "unsafe" not in answer.headers["content-security-policy"]
