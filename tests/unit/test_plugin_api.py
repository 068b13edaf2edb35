"""The plug-in API (connectors.api): the names connector authors import, pinned.

A name added to or removed from the module fails here until this list says so too, so
the API changes only on purpose. And what authors copy from — the scaffold's templates,
the weather example, docs/connectors.md — imports from ``connectors`` only through the
API and the contract kit.
"""

from __future__ import annotations

import re
from pathlib import Path

import connectors.api
from connectors.scaffold import files_for, names_for

ROOT = Path(__file__).resolve().parents[2]

EXPORTED = {
    "LIVE_REQUIRED",
    "AccountFlow",
    "AccountNeeded",
    "ApiKeyFlow",
    "AskKey",
    "ChatContext",
    "Clause",
    "ClientStep",
    "ConnectAtOnce",
    "Connected",
    "Connector",
    "ConnectorOptions",
    "ConnectorSettings",
    "Decline",
    "Effect",
    "ErrorResponse",
    "FileResponse",
    "FlowContext",
    "FlowError",
    "HttpUrlOption",
    "JsonResponse",
    "LinkResponse",
    "NeedsAccount",
    "OAuthFlow",
    "OfflineHints",
    "OpenTabResponse",
    "OpenWindowResponse",
    "Redirect",
    "RetryPolicy",
    "ServiceError",
    "ServiceHttp",
    "TextResponse",
    "ToolError",
    "ToolHints",
    "ToolResponse",
    "connector_tool",
    "effect_of",
    "read_json",
    "shared_client",
}
ALLOWED = {"connectors.api", "connectors.testing"}


def test_the_api_exports_exactly_the_pinned_names() -> None:
    assert set(connectors.api.__all__) == EXPORTED
    assert len(connectors.api.__all__) == len(EXPORTED), "a name is listed twice"


def test_every_public_name_of_the_module_is_exported() -> None:
    public = {name for name in vars(connectors.api) if not name.startswith("_")}
    assert public == set(connectors.api.__all__)


IMPORT = re.compile(r"^\s*(?:from|import)\s+(connectors(?:\.\w+)*)\b", flags=re.MULTILINE)


def connectors_imports(source: str) -> set[str]:
    """The ``connectors`` modules a source imports (docs' snippets need not compile)."""
    return set(IMPORT.findall(source))


def python_blocks(markdown: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", markdown, flags=re.DOTALL)


def sources() -> dict[str, str]:
    found = {
        f"scaffold:{name}": text
        for name, text in files_for(names_for("weather")).items()
        if name.endswith(".py")
    }
    for path in sorted((ROOT / "examples").rglob("*.py")):
        found[str(path.relative_to(ROOT))] = path.read_text()
    for i, block in enumerate(python_blocks((ROOT / "docs/connectors.md").read_text())):
        found[f"docs/connectors.md block {i + 1}"] = block
    return found


def test_what_authors_copy_imports_only_the_api_and_the_kit() -> None:
    found = sources()
    assert any(name.startswith("scaffold:") for name in found)
    assert any(name.startswith("examples/") for name in found)
    outside = {
        name: sorted(imported - ALLOWED)
        for name, source in found.items()
        if (imported := connectors_imports(source)) - ALLOWED
    }
    assert outside == {}


def test_the_check_sees_an_import_from_outside_the_api() -> None:
    assert connectors_imports("from connectors.tooling import ToolError\n") == {
        "connectors.tooling"
    }
