"""``switchboard connectors new NAME``: a connector package whose tests pass at once.

The package has the layout of the built-ins (``agent.py``, ``tools.py``, ``client.py``,
``demo.py``), registers itself through the ``switchboard.connectors`` entry point, and
runs the contract kit (``connectors.testing``) over itself. Pure file generation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path

from connectors.names import ENTRY_POINT_GROUP, name_problem


class ScaffoldError(ValueError):
    """The name or the target directory cannot be used; the message says why."""


@dataclass(frozen=True)
class Names:
    name: str  # "weather": connector name, settings key, entry point name
    package: str  # "switchboard_weather"
    agent: str  # "Weather"
    project: str  # "switchboard-weather"


def names_for(name: str) -> Names:
    problem = name_problem(name)
    if problem is not None:
        raise ScaffoldError(problem)
    installed = {point.name for point in entry_points(group=ENTRY_POINT_GROUP)}
    if name in installed:
        raise ScaffoldError(f"{name!r} is the name of an installed connector; choose another name")
    agent = "".join(part.capitalize() for part in name.split("_"))
    return Names(name, f"switchboard_{name}", agent, f"switchboard-{name.replace('_', '-')}")


def files_for(names: Names) -> dict[str, str]:
    """Relative path → content."""
    values = {
        "name": names.name,
        "package": names.package,
        "agent": names.agent,
        "project": names.project,
        "upper": names.name.upper(),
    }
    return {_fill(path, values): _fill(text, values) for path, text in TEMPLATES.items()}


def write_package(name: str, parent: Path) -> Path:
    names = names_for(name)
    root = parent / names.project
    if root.exists():
        raise ScaffoldError(
            f"{root} already exists; remove it or pick another directory with --dir"
        )
    for relative, content in files_for(names).items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    return root


def _fill(template: str, values: dict[str, str]) -> str:
    # [[name]] placeholders: the templates are Python full of braces.
    return re.sub(r"\[\[(\w+)\]\]", lambda m: values[m.group(1)], template)


TEMPLATES: dict[str, str] = {}

TEMPLATES["pyproject.toml"] = """\
[build-system]
requires = ["setuptools>=69"]
build-backend = "setuptools.build_meta"

[project]
name = "[[project]]"
version = "0.1.0"
description = "A Switchboard connector: [[agent]]."
requires-python = ">=3.11"
# Runs inside a Switchboard environment (it imports `connectors` and `app`):
# install it there with `pip install -e .`.
dependencies = []

[project.entry-points."switchboard.connectors"]
[[name]] = "[[package]]:connector"

[tool.setuptools.packages.find]
include = ["[[package]]*"]

[tool.pytest.ini_options]
asyncio_mode = "auto"
asyncio_default_fixture_loop_scope = "function"
testpaths = ["tests"]
pythonpath = ["."]

[tool.ruff]
line-length = 100
target-version = "py311"

[tool.ruff.lint]
select = ["E", "F", "I", "B", "UP", "ASYNC"]

[tool.ruff.lint.isort]
# Switchboard (app, connectors) is the platform this package plugs into.
known-first-party = ["[[package]]"]
known-third-party = ["app", "connectors", "storage", "websocket"]
"""

TEMPLATES["README.md"] = """\
# [[project]]

A Switchboard connector. Install it into the server's
environment and restart the server:

```sh
pip install -e .
switchboard connectors list        # [[name]] is listed
pytest                             # the contract kit and the demo tests
```

Demo mode (the default) answers from `demo.py`. Live mode calls the service:

```sh
SWITCHBOARD_CONNECTOR_MODES=[[name]]=live
SWITCHBOARD_CONNECTOR_OPTIONS=[[name]].base_url=https://api.example.org,[[name]].api_key=...
```
"""

TEMPLATES["[[package]]/__init__.py"] = '''\
"""The [[agent]] connector for Switchboard."""

from __future__ import annotations

from connectors.registry import Connector

from [[package]].agent import build_agent
from [[package]].tools import AGENT_NAME, CONNECTOR, RESPONSE_TYPES, TOOL_DESCRIPTIONS

connector = Connector(
    name=CONNECTOR,
    agent_name=AGENT_NAME,
    display_name="[[agent]]",
    build_agent=build_agent,
    tool_descriptions=TOOL_DESCRIPTIONS,
    response_types=RESPONSE_TYPES,
)

__all__ = ["connector"]
'''

TEMPLATES["[[package]]/agent.py"] = '''\
"""The [[agent]] agent: its instructions and tools."""

from __future__ import annotations

from agents import Agent
from connectors.context import ChatContext
from connectors.settings import ConnectorSettings

from [[package]].tools import AGENT_NAME, TOOLS

HANDOFF_DESCRIPTION = "Looks things up in [[agent]]."

INSTRUCTIONS = """\\
You are [[agent]], a specialist of Switchboard.

Call search_[[name]] with a short query. Answer in two or three sentences from its
results; the chat already shows them as a card. If a tool returns "Error: ...", explain
briefly and suggest what to try next.
"""


def build_agent(settings: ConnectorSettings) -> Agent[ChatContext]:
    del settings  # demo and live share one agent; the tools pick the backend per call
    return Agent[ChatContext](name=AGENT_NAME, handoff_description=HANDOFF_DESCRIPTION,
                              instructions=INSTRUCTIONS, tools=list(TOOLS))
'''

TEMPLATES["[[package]]/tools.py"] = '''\
"""[[agent]] tools. Each returns a ToolResponse; failures become error cards by themselves."""

from __future__ import annotations

from agents import RunContextWrapper
from connectors.context import ChatContext
from connectors.responses import ToolResponse
from connectors.tooling import ToolError, connector_tool

from [[package]].client import live_backend
from [[package]].demo import Backend, DemoBackend

AGENT_NAME = "[[agent]]"
CONNECTOR = "[[name]]"
TIMEOUT = 15.0


def backend(ctx: RunContextWrapper[ChatContext]) -> Backend:
    if ctx.context.settings.connector_mode(CONNECTOR) == "live":
        return live_backend(ctx.context)
    return DemoBackend()


@connector_tool(agent_name=AGENT_NAME, timeout=TIMEOUT, side_effect=False)
async def search_[[name]](ctx: RunContextWrapper[ChatContext], query: str,
                          limit: int = 5) -> ToolResponse:
    """Search [[agent]].

    Args:
        query: What to look for.
        limit: How many results (1-10).
    """
    if not query.strip():
        raise ToolError("the query is empty; say what to look for")
    items = await backend(ctx).search(query.strip(), max(1, min(limit, 10)))
    lines = "\\n".join(f"- [{item['title']}]({item['url']}): {item['snippet']}"
                      for item in items) or "Nothing found."
    return ToolResponse("[[name]]_results", AGENT_NAME, f"Searching [[agent]] for {query}",
                        items, display_as=[{"type": "markdown", "content": lines}])


TOOLS = [search_[[name]]]
TOOL_DESCRIPTIONS = {"search_[[name]]": "Searching [[agent]]"}
RESPONSE_TYPES = ("[[name]]_results", "error")
'''

TEMPLATES["[[package]]/demo.py"] = '''\
"""The backend interface and its demo implementation (fixture data, no network)."""

from __future__ import annotations

from typing import Any, Protocol

Item = dict[str, Any]

ITEMS: tuple[Item, ...] = (
    {"title": "Getting started", "url": "https://example.org/[[name]]/start",
     "snippet": "A first look at [[agent]]."},
    {"title": "Frequently asked questions", "url": "https://example.org/[[name]]/faq",
     "snippet": "Answers to the questions people ask most about [[agent]]."},
    {"title": "Release notes", "url": "https://example.org/[[name]]/releases",
     "snippet": "What changed in each version of [[agent]]."},
)


class Backend(Protocol):
    async def search(self, query: str, limit: int) -> list[Item]: ...


class DemoBackend:
    async def search(self, query: str, limit: int) -> list[Item]:
        words = query.lower().split()
        found = [item for item in ITEMS
                 if any(word in (item["title"] + " " + item["snippet"]).lower()
                        for word in words)]
        return [dict(item) for item in (found or list(ITEMS))[:limit]]
'''

TEMPLATES["[[package]]/client.py"] = '''\
"""The live backend: GET {base_url}/search?q=...&limit=... answering {"items": [...]}.

Replace it with the real service's API. ``ServiceHttp`` gives timeouts, retries on
429/5xx (honouring Retry-After) and error texts that are safe to show.
"""

from __future__ import annotations

from typing import Any

from connectors.context import ChatContext
from connectors.service_http import ServiceHttp, read_json, shared_client
from connectors.tooling import ToolError

from [[package]].demo import Item

SERVICE = "[[agent]]"


class LiveBackend:
    def __init__(self, http: ServiceHttp, base_url: str, api_key: str | None) -> None:
        self._http = http
        self._base = base_url.rstrip("/")
        self._headers = {"Accept": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"

    async def search(self, query: str, limit: int) -> list[Item]:
        response = await self._http.send("GET", f"{self._base}/search",
                                          params={"q": query, "limit": limit},
                                          headers=self._headers)
        if not response.is_success:
            raise self._http.status_error(response)
        body: Any = read_json(response, SERVICE)
        items = body.get("items") if isinstance(body, dict) else None
        return [{"title": str(item.get("title", "")), "url": str(item.get("url", "")),
                 "snippet": str(item.get("snippet", ""))}
                for item in items or [] if isinstance(item, dict)][:limit]


def live_backend(context: ChatContext) -> LiveBackend:
    options = context.settings.connector_options.get("[[name]]", {})
    base_url = options.get("base_url")
    if not base_url:
        raise ToolError("live [[agent]] needs a base URL: set "
                        "SWITCHBOARD_CONNECTOR_OPTIONS=[[name]].base_url=https://...")
    api_key = options.get("api_key")
    http = ServiceHttp.for_settings(shared_client(context.http, SERVICE), SERVICE,
                                    context.settings, (api_key,))
    return LiveBackend(http, base_url, api_key)
'''

TEMPLATES["tests/test_contract.py"] = '''\
"""Switchboard's contract kit over this connector."""

from __future__ import annotations

from typing import Any, ClassVar

from connectors.registry import Connector
from connectors.testing import ConnectorContract

from [[package]] import connector


class Test[[agent]]Contract(ConnectorContract):
    connector: ClassVar[Connector] = connector
    sample_arguments: ClassVar[dict[str, dict[str, Any]]] = {
        "search_[[name]]": {"query": "questions", "limit": 3}}
    live_settings: ClassVar[dict[str, Any] | None] = {
        "connector_options": {"[[name]]": {"base_url": "{base_url}",
                                          "api_key": "contract-test-key-123"}}}
'''

TEMPLATES["tests/test_demo.py"] = '''\
"""The demo backend through the real tool."""

from __future__ import annotations

from connectors.settings import ConnectorSettings
from connectors.testing import call_tool, harness

from [[package]] import connector


async def test_search_finds_the_matching_fixture() -> None:
    async with harness(ConnectorSettings()) as kit:
        output = await call_tool(connector, "search_[[name]]", kit.context(),
                                 {"query": "release", "limit": 5})
    assert output["response_type"] == "[[name]]_results"
    assert [item["title"] for item in output["response"]] == ["Release notes"]


async def test_an_empty_query_is_explained() -> None:
    async with harness(ConnectorSettings()) as kit:
        output = await call_tool(connector, "search_[[name]]", kit.context(),
                                 {"query": "  ", "limit": 5})
    assert output["error_message"] == "Error: the query is empty; say what to look for"
'''
