"""``/docs``: the vendored Swagger UI page, its policy, and the vendored files being the
ones the vendor list (app/static/vendor/README.md) names. The page itself is driven in a
browser by tests/browser/test_api_docs.py."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from app.openapi import DOCS_POLICY
from app.settings import Settings
from tests.support.servers import serve

VENDOR = Path(__file__).resolve().parents[2] / "app" / "static" / "vendor"


@pytest.fixture
async def live(make_settings: Callable[..., Settings]) -> Any:
    async with serve(make_settings(auth_mode="token")) as server:
        yield server


async def test_the_docs_page_loads_only_vendored_files_under_its_policy(live: Any) -> None:
    async with live.client() as http:
        page = await http.get("/docs")  # public, like the UI page: it holds no data
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")
        policy = page.headers["content-security-policy"]
        assert policy == DOCS_POLICY
        assert "script-src 'self';" in policy and "unsafe" not in policy
        assert "frame-ancestors 'none'" in policy and "connect-src 'self'" in policy
        assert page.headers["x-content-type-options"] == "nosniff"
        sources = re.findall(r'(?:src|href)="([^"]+)"', page.text)
        assert sources, page.text
        assert "<script>" not in page.text  # no inline script: the policy would block it
        for source in sources:
            assert source.startswith("/"), f"{source}: nothing may come from another origin"
            asset = await http.get(source)
            assert asset.status_code == 200, source
        assert "/static/vendor/swagger-ui/swagger-ui-bundle.js" in sources
        # The page reads the document from this server.
        assert 'data-url="/openapi.json"' in page.text


def listed_digests(folder: str) -> dict[str, str]:
    """The sha256 the vendor list gives each file of ``folder``."""
    return dict(
        (name, digest)
        for digest, name in re.findall(
            rf"^\s+([0-9a-f]{{64}})\s+({re.escape(folder)}/\S+)$",
            (VENDOR / "README.md").read_text(),
            re.MULTILINE,
        )
    )


def test_vendored_swagger_ui_is_the_listed_release() -> None:
    listed = listed_digests("swagger-ui")
    assert set(listed) == {"swagger-ui/swagger-ui-bundle.js", "swagger-ui/swagger-ui.css"}
    for name, digest in listed.items():
        assert hashlib.sha256((VENDOR / name).read_bytes()).hexdigest() == digest, name
    for licence in ("LICENSE", "NOTICE", "swagger-ui-bundle.js.LICENSE.txt"):
        assert (VENDOR / "swagger-ui" / licence).stat().st_size > 0


def test_vendored_highlight_js_is_the_listed_release() -> None:
    listed = listed_digests("highlight")
    assert set(listed) == {
        "highlight/highlight.min.js",
        "highlight/github.min.css",
        "highlight/github-dark.min.css",
    }
    for name, digest in listed.items():
        assert hashlib.sha256((VENDOR / name).read_bytes()).hexdigest() == digest, name
    assert "BSD 3-Clause" in (VENDOR / "highlight" / "LICENSE").read_text()
