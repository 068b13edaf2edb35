"""A connector's UI declarations (``icon``, ``csp``) are checked when it registers: a plug-in
may let one outside host into the page's policy, never weaken it for everyone; its card
files are found beside the package its entry point names (``connectors.ui_card``)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.settings import Settings
from connectors.registry import installed_points, register_connectors
from connectors.ui_card import card_files, csp_sources
from tests.support.card_plugin import install_card_plugin


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    yield root
    for module in [m for m in sys.modules if m.startswith(("switchboard_", "desk_"))]:
        sys.modules.pop(module, None)


def refusal(name: str) -> str:
    failed = {f.name: f for f in register_connectors(Settings(), installed_points()).failed}
    assert name in failed, f"{name} was not refused"
    return failed[name].reason


@pytest.mark.parametrize(
    ("csp", "icon", "expected"),
    [
        (
            {"script-src": ("'unsafe-inline'",)},
            None,
            "csp['script-src'] source \"'unsafe-inline'\" is not an https:// or wss:// host",
        ),
        ({"script-src": ("*",)}, None, "source '*' is not an https:// or wss:// host"),
        ({"img-src": ("http://cdn.example",)}, None, "'http://cdn.example' is not an https://"),
        ({"connect-src": ("data:",)}, None, "source 'data:' is not"),
        ({"script-src": ("https://a.example; script-src *",)}, None, "is not an https://"),
        (
            {"default-src": ("https://a.example",)},
            None,
            "csp names 'default-src', which a connector cannot extend; it may add sources to "
            "connect-src, font-src, frame-src, img-src, media-src, script-src, style-src",
        ),
        ({"script-src": "https://a.example"}, None, "is a string; give a tuple of sources"),
        ({}, "Big Store", "icon='Big Store' is not an icon name"),
    ],
)
def test_a_plugin_that_would_weaken_the_page_policy_is_refused(
    site: Path, csp: dict[str, object], icon: str | None, expected: str
) -> None:
    install_card_plugin(site, "desk", csp=csp, icon=icon)  # type: ignore[arg-type]
    assert expected in refusal("desk")
    served = [c.name for c in register_connectors(Settings(), installed_points()).connectors]
    assert served == ["gmail", "plaid", "yelp", "search"]


def test_declared_sources_are_merged_per_directive_each_once(site: Path) -> None:
    host = "https://widgets.example:8443/link/"
    install_card_plugin(
        site, "desk", csp={"script-src": (host,), "frame-src": ("wss://live.example",)}
    )
    install_card_plugin(site, "help", csp={"script-src": (host, "https://help.example")})
    connectors = register_connectors(Settings(), installed_points()).connectors
    assert [c.name for c in connectors][-2:] == ["desk", "help"]
    assert csp_sources(connectors) == {
        "script-src": ["https://cdn.plaid.com", host, "https://help.example"],
        "frame-src": ["https://cdn.plaid.com", "wss://live.example"],
    }


def test_card_files_are_found_beside_the_entry_points_package(site: Path) -> None:
    install_card_plugin(site, "desk", card_js="export default () => ({});\n")
    connectors = {c.name: c for c in register_connectors(Settings(), installed_points()).connectors}
    assert connectors["desk"].module == "switchboard_desk"
    found = card_files(connectors["desk"])
    assert list(found) == ["card.js"]
    assert found["card.js"].body == b"export default () => ({});\n"
    assert found["card.js"].media_type == "text/javascript; charset=utf-8"
    assert set(card_files(connectors["gmail"])) == {"card.js", "card.css"}


def test_a_plugin_in_a_single_module_has_no_card_files(site: Path) -> None:
    (site / "desk_single.py").write_text(
        "from connectors.registry import Connector\n"
        "from agents import Agent\n"
        "connector = Connector(name='single', agent_name='Single', display_name='Single',\n"
        "    build_agent=lambda settings: Agent(name='Single'))\n"
    )
    (site / "card.js").write_text("export default () => ({});\n")  # beside it: not its own
    info = site / "desk_single-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: desk-single\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[switchboard.connectors]\nsingle = desk_single:connector\n"
    )
    importlib.invalidate_caches()
    connectors = {c.name: c for c in register_connectors(Settings(), installed_points()).connectors}
    assert connectors["single"].module == "desk_single"
    assert card_files(connectors["single"]) == {}
