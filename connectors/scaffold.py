"""``switchboard connectors new NAME``: a connector package whose tests pass at once.

The package starts from the shape most real connectors have: a hidden lookup
(``find_NAME_project``, a name to an id, no card), a read (``list_NAME_items``) and a write
that waits for the person's approval (``create_NAME_item``); a demo backend that keeps each
user's changes; a live client over ``ServiceHttp`` with a typed options model; hints for
the offline demo model; and tests (the contract kit, the demo, the approval flow with the
scripted model). It registers itself through the ``switchboard.connectors`` entry point.
Pure file generation: the templates below are a worked package named ``qux`` with its
names replaced by ``[[placeholders]]``.
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
# Runs inside a Switchboard environment (it imports `connectors` and `agents`):
# install it there with `pip install -e .`.
dependencies = []

[project.entry-points."switchboard.connectors"]
[[name]] = "[[package]]:connector"

[tool.setuptools.packages.find]
include = ["[[package]]*"]

[tool.setuptools.package-data]
# How the chat shows this connector's results (docs/connectors.md, "The UI card").
"[[package]]" = ["card.js", "card.css"]

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

[tool.mypy]
strict = true
"""

TEMPLATES["README.md"] = """\
# [[project]]

A Switchboard connector for [[agent]], made by `switchboard connectors new [[name]]`. It starts with
the three tools most connectors need:

| tool | kind | the person sees |
|---|---|---|
| `find_[[name]]_project` | hidden lookup: a project's name → its id | nothing (`display_response=False`) |
| `list_[[name]]_items` | read (`side_effect=False`) | a card with the project's items |
| `create_[[name]]_item` | write (`side_effect=True`) | an approval card, then the added item |

It runs on demo data (`demo.py`, each user's additions kept while the server runs) until
you switch it to live mode, where `client.py` calls your service.

## Try it

Use the Python environment the Switchboard server runs in (`/path/to/switchboard/.venv/bin/`
in front of each command, or activate that venv):

```sh
pip install -e .              # registers the `[[name]]` entry point
pytest                        # contract kit, demo and approval-flow tests: all pass
switchboard connectors list   # [[name]]  [[agent]]  demo  server  find_[[name]]_project,…  ok
switchboard serve             # or `make run` in the Switchboard checkout; restart it if running
```

Open the chat and ask: *add an item 'renew passport' to the Home project*. The offline
demo model (no API key) finds the project out of sight, asks you to approve
`create_[[name]]_item`, adds it, and *what's in my Home project?* then lists it. To remove the
connector again: `pip uninstall [[project]]` and restart the server.

## Make it yours

1. **`demo.py`**: the `Backend` interface the tools call, and its demo implementation.
   Change `Project` and `Item` to your service's objects; keep per-user changes in the
   `state` dict it is given (`ctx.context.demo.namespace("[[name]]")`).
2. **`client.py`**: the same interface over your service's REST API, through
   `ServiceHttp` (timeouts, retries, safe error texts). Raise `ToolError("…what to do")`
   for anything the person should read.
3. **`tools.py`**: rename the tools and their `response_type`s. The docstring and the
   `Args:` lines are what the model reads. Every tool declares `side_effect`: `True` for
   anything that changes something for the person (they approve each call), `False` for
   reads. Set `display_response=False` on results only the model needs.
4. **`options.py`**: your settings. Operators set them as
   `SWITCHBOARD_CONNECTOR_OPTIONS=[[name]].base_url=https://…,[[name]].api_key=…`; options marked
   `LIVE_REQUIRED` must be set when `SWITCHBOARD_CONNECTOR_MODES=[[name]]=live`, or the server
   refuses the connector at start-up and says which.
5. **`agent.py`**: the `HANDOFF_DESCRIPTION` decides which requests reach this agent; the
   instructions say when to use which tool.
6. **`offline.py`**: example prompts and lookups for the offline demo model (a real model
   needs none of it).
7. **`card.js`, `card.css`**: how the chat shows your results (a renderer per
   `response_type`) and words the approval of your write tools. Without them the chat
   shows each result's `display_as` hint and lists a write's arguments.
8. **`tests/`**: keep `sample_arguments` in `test_contract.py` in step with the tools, and
   point `live_settings` at your options. Add tests for the live client against a local
   fake server that speaks your service's wire format.

Switchboard's `docs/connectors.md` describes every piece; `docs/approvals.md` the
approvals.
"""

TEMPLATES[".gitignore"] = """\
__pycache__/
*.egg-info/
.hypothesis/
.pytest_cache/
.mypy_cache/
.ruff_cache/
"""

TEMPLATES["[[package]]/__init__.py"] = '''\
"""The [[agent]] connector for Switchboard.

The ``switchboard.connectors`` entry point in pyproject.toml registers ``connector``.
"""

from __future__ import annotations

from connectors.api import Connector

from [[package]].agent import build_agent
from [[package]].offline import HINTS
from [[package]].options import (
    [[agent]]Options,
)
from [[package]].tools import (
    AGENT_NAME,
    CONNECTOR,
    RESPONSE_TYPES,
    TOOL_DESCRIPTIONS,
)

connector = Connector(
    name=CONNECTOR,
    agent_name=AGENT_NAME,
    display_name="[[agent]]",
    build_agent=build_agent,
    tool_descriptions=TOOL_DESCRIPTIONS,
    response_types=RESPONSE_TYPES,
    options=[[agent]]Options,
    offline=HINTS,
)

__all__ = ["connector"]
'''

TEMPLATES["[[package]]/agent.py"] = '''\
"""The [[agent]] agent: its instructions and tools."""

from __future__ import annotations

from agents import Agent
from connectors.api import ChatContext, ConnectorSettings

from [[package]].tools import AGENT_NAME, TOOLS

# What the orchestrator reads to decide which requests to hand to this agent.
HANDOFF_DESCRIPTION = "Lists and adds items (to-dos) in the user's projects."

INSTRUCTIONS = """\\
You are [[agent]], the projects specialist of Switchboard.

Tools:
- find_[[name]]_project: a project's id from its name. Call it
  first whenever the user names a project; the chat does not show its result.
- list_[[name]]_items: the items of a project, by its id.
- create_[[name]]_item: add an item to a project, by its id, with
  the title the user gave. The user is asked to approve it before it runs; if they
  decline, nothing was added: say so.

Answer in one or two sentences: the chat already shows the items as cards.
"""


def build_agent(settings: ConnectorSettings) -> Agent[ChatContext]:
    del settings  # demo and live share one agent; the tools pick the backend per call
    return Agent[ChatContext](
        name=AGENT_NAME,
        handoff_description=HANDOFF_DESCRIPTION,
        instructions=INSTRUCTIONS,
        tools=list(TOOLS),
    )
'''

TEMPLATES["[[package]]/tools.py"] = '''\
"""The tools: a hidden lookup (a project's name → its id), a read (a project's items) and
a write (add an item, after the person approves). Each returns a ToolResponse; a
``ToolError`` becomes an error card with its message, anything else a generic one."""

from __future__ import annotations

from agents import RunContextWrapper
from connectors.api import ChatContext, ToolResponse, connector_tool

from [[package]].client import live_backend
from [[package]].demo import Backend, DemoBackend

AGENT_NAME = "[[agent]]"
CONNECTOR = "[[name]]"
TIMEOUT = 15.0
MAX_ITEMS = 50


def backend(ctx: RunContextWrapper[ChatContext]) -> Backend:
    if ctx.context.settings.connector_mode(CONNECTOR) == "live":
        return live_backend(ctx.context)
    # Demo mode: fixtures plus this user's own changes, kept while the server runs.
    return DemoBackend(ctx.context.demo.namespace(CONNECTOR))


@connector_tool(agent_name=AGENT_NAME, timeout=TIMEOUT, side_effect=False)
async def find_[[name]]_project(
    ctx: RunContextWrapper[ChatContext],
    project_name: str,
) -> ToolResponse:
    """Find a project by its name and get its id, which the other tools need.

    Args:
        project_name: The project's name as the user said it, e.g. "Home".
    """
    project = await backend(ctx).find_project(project_name)
    # display_response=False: only the model reads it; the chat shows no card for it.
    return ToolResponse(
        "[[name]]_project",
        AGENT_NAME,
        f"Project {project['name']}",
        project,
        display_response=False,
    )


@connector_tool(agent_name=AGENT_NAME, timeout=TIMEOUT, side_effect=False)
async def list_[[name]]_items(
    ctx: RunContextWrapper[ChatContext], project_id: str, limit: int = 20
) -> ToolResponse:
    """List the items of a project, oldest first.

    Args:
        project_id: The project's id, from find_[[name]]_project.
        limit: How many items at most (1-50).
    """
    project, items = await backend(ctx).list_items(project_id, max(1, min(limit, MAX_ITEMS)))
    lines = [f"- {item['title']}" + (" (done)" if item["done"] else "") for item in items]
    shown = "\\n".join(lines) or "No items yet."
    return ToolResponse(
        "[[name]]_items",
        AGENT_NAME,
        f"Items in {project['name']}",
        items,
        display_as=[{"type": "markdown", "content": f"**{project['name']}**\\n\\n{shown}"}],
    )


# side_effect=True: the server asks the person to approve each call before it runs.
@connector_tool(agent_name=AGENT_NAME, timeout=TIMEOUT, side_effect=True)
async def create_[[name]]_item(
    ctx: RunContextWrapper[ChatContext], project_id: str, title: str
) -> ToolResponse:
    """Add an item to a project.

    Args:
        project_id: The project's id, from find_[[name]]_project.
        title: What the item says, e.g. "Renew passport".
    """
    project, item = await backend(ctx).create_item(project_id, title)
    added = {"title": item["title"], "project": project["name"], "id": item["id"]}
    return ToolResponse(
        "[[name]]_item",
        AGENT_NAME,
        f"Added to {project['name']}",
        added,
        display_as=[
            {"type": "markdown", "content": f"Added **{item['title']}** to {project['name']}."}
        ],
    )


TOOLS = [
    find_[[name]]_project,
    list_[[name]]_items,
    create_[[name]]_item,
]
# What the chat shows while each tool runs.
TOOL_DESCRIPTIONS = {
    "find_[[name]]_project": "Finding the project",
    "list_[[name]]_items": "Listing the items",
    "create_[[name]]_item": "Adding the item",
}
RESPONSE_TYPES = (
    "[[name]]_project",
    "[[name]]_items",
    "[[name]]_item",
    "error",
)
'''

TEMPLATES["[[package]]/demo.py"] = '''\
"""The backend interface the tools talk to, and its demo implementation: fixture projects
and items, plus what this user added (kept per user while the server runs)."""

from __future__ import annotations

from typing import Any, Protocol

from connectors.api import ToolError

# {"id": "prj_1", "name": "Home"}
Project = dict[str, Any]
# {"id": "itm_1", "title": "Fix the kitchen tap", "done": False}
Item = dict[str, Any]

MAX_TITLE = 200


class Backend(Protocol):
    async def find_project(self, name: str) -> Project:
        """The project called ``name``; a ``ToolError`` naming the choices if none is."""
        ...

    async def list_items(self, project_id: str, limit: int) -> tuple[Project, list[Item]]: ...

    async def create_item(self, project_id: str, title: str) -> tuple[Project, Item]: ...


PROJECTS: tuple[Project, ...] = (
    {"id": "prj_1", "name": "Home"},
    {"id": "prj_2", "name": "Work"},
    {"id": "prj_3", "name": "Garden"},
)
ITEMS: dict[str, tuple[Item, ...]] = {
    "prj_1": (
        {"id": "itm_1", "title": "Fix the kitchen tap", "done": False},
        {"id": "itm_2", "title": "Book the boiler service", "done": True},
    ),
    "prj_2": (
        {"id": "itm_3", "title": "Send the quarterly report", "done": False},
        {"id": "itm_4", "title": "Plan the team offsite", "done": False},
    ),
    "prj_3": ({"id": "itm_5", "title": "Plant the tulip bulbs", "done": False},),
}


def check_title(title: str) -> str:
    cleaned = " ".join(title.split())
    if not cleaned:
        raise ToolError("the item has no title; ask the user what to add")
    if len(cleaned) > MAX_TITLE:
        raise ToolError(f"the title is {len(cleaned)} characters; keep it under {MAX_TITLE}")
    return cleaned


class DemoBackend:
    """The fixtures plus the items this user created, kept in ``state`` (the user's demo
    namespace of this connector), so a created item shows up in a later list."""

    def __init__(self, state: dict[str, Any]) -> None:
        self._created: dict[str, list[Item]] = state.setdefault("created", {})

    async def find_project(self, name: str) -> Project:
        wanted = " ".join(name.split()).casefold().removesuffix(" project")
        if not wanted:
            raise ToolError("no project name given; ask the user which project")
        for project in PROJECTS:
            if project["name"].casefold() == wanted:
                return dict(project)
        names = ", ".join(project["name"] for project in PROJECTS)
        raise ToolError(f"no project is called {name!r}; the projects are {names}")

    async def list_items(self, project_id: str, limit: int) -> tuple[Project, list[Item]]:
        project = self._project(project_id)
        items = [*ITEMS[project["id"]], *self._created.get(project["id"], [])]
        return project, [dict(item) for item in items[:limit]]

    async def create_item(self, project_id: str, title: str) -> tuple[Project, Item]:
        project = self._project(project_id)
        created = self._created.setdefault(project["id"], [])
        count = sum(len(items) for items in ITEMS.values()) + sum(map(len, self._created.values()))
        item: Item = {"id": f"itm_{count + 1}", "title": check_title(title), "done": False}
        created.append(item)
        return project, dict(item)

    def _project(self, project_id: str) -> Project:
        for project in PROJECTS:
            if project["id"] == project_id.strip():
                return dict(project)
        raise ToolError(
            f"no project has the id {project_id!r}; find the project by its name first "
            "to get its id"
        )
'''

TEMPLATES["[[package]]/client.py"] = '''\
"""The live backend, over a made-up REST API: replace it with your service's.

- ``GET  {base_url}/projects?name=Home`` → ``{"projects": [{"id", "name"}]}``
- ``GET  {base_url}/projects/{id}/items?limit=20`` → ``{"project": {...}, "items": [...]}``
- ``POST {base_url}/projects/{id}/items`` ``{"title"}`` → ``{"project": {...}, "item": {...}}``

``ServiceHttp`` brings timeouts, retries on 429/5xx (honouring Retry-After; a write is
only repeated when it certainly did not arrive) and error texts that are safe to show.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import httpx
from connectors.api import ChatContext, ServiceHttp, ToolError, read_json, shared_client

from [[package]].demo import Item, Project, check_title
from [[package]].options import (
    [[agent]]Options,
)

SERVICE = "[[agent]]"


class LiveBackend:
    def __init__(self, http: ServiceHttp, base_url: str, api_key: str) -> None:
        self._http = http
        self._base = base_url.rstrip("/")
        self._headers = {"Accept": "application/json", "Authorization": f"Bearer {api_key}"}

    async def find_project(self, name: str) -> Project:
        body = await self._call("GET", "/projects", params={"name": name.strip()})
        projects = [_project(entry) for entry in body.get("projects") or []]
        if not projects:
            raise ToolError(f"{SERVICE} has no project called {name!r}; check the name")
        return projects[0]

    async def list_items(self, project_id: str, limit: int) -> tuple[Project, list[Item]]:
        path = f"/projects/{quote(project_id, safe='')}/items"
        body = await self._call("GET", path, params={"limit": limit})
        items = [_item(entry) for entry in body.get("items") or []]
        return _project(body.get("project")), items[:limit]

    async def create_item(self, project_id: str, title: str) -> tuple[Project, Item]:
        path = f"/projects/{quote(project_id, safe='')}/items"
        # idempotent=False: a POST that may have arrived is not sent twice.
        body = await self._call("POST", path, json={"title": check_title(title)}, idempotent=False)
        return _project(body.get("project")), _item(body.get("item"))

    async def _call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        response = await self._http.send(method, self._base + path, headers=self._headers, **kwargs)
        if not response.is_success:
            raise self._http.status_error(response, _error_detail(response))
        body = read_json(response, SERVICE)
        if not isinstance(body, dict):
            raise ToolError(f"{SERVICE} sent an answer of an unexpected shape; try again later")
        return body


def _error_detail(response: httpx.Response) -> str | None:
    """The service's own explanation, e.g. {"error": "project not found"}, if it gave one."""
    try:
        body = response.json()
    except ValueError:
        return None
    detail = body.get("error") if isinstance(body, dict) else None
    return str(detail) if detail else None


def _project(entry: Any) -> Project:
    data = entry if isinstance(entry, dict) else {}
    return {"id": str(data.get("id", "")), "name": str(data.get("name", ""))}


def _item(entry: Any) -> Item:
    data = entry if isinstance(entry, dict) else {}
    return {
        "id": str(data.get("id", "")),
        "title": str(data.get("title", "")),
        "done": bool(data.get("done", False)),
    }


def live_backend(context: ChatContext) -> LiveBackend:
    options = [[agent]]Options.read(context.settings)
    if not options.base_url or options.api_key is None:
        # The server checks this at start-up (LIVE_REQUIRED); this guards other callers.
        raise ToolError(f"live {SERVICE} is not configured; the operator must set its options")
    api_key = options.api_key.get_secret_value()
    http = ServiceHttp.for_settings(
        shared_client(context.http, SERVICE), SERVICE, context.settings, (api_key,)
    )
    return LiveBackend(http, options.base_url, api_key)
'''

TEMPLATES["[[package]]/options.py"] = '''\
"""This connector's settings, read from SWITCHBOARD_CONNECTOR_OPTIONS and checked when the
server starts: a misspelt option, or one marked LIVE_REQUIRED left unset in live mode,
stops the connector with the variable named (never its value)."""

from __future__ import annotations

from typing import Annotated, ClassVar

from connectors.api import LIVE_REQUIRED, ConnectorOptions
from pydantic import SecretStr


class [[agent]]Options(ConnectorOptions):
    connector: ClassVar[str] = "[[name]]"
    # The service's API root, e.g. https://api.example.com/v1.
    base_url: Annotated[str, LIVE_REQUIRED] = ""
    api_key: Annotated[SecretStr | None, LIVE_REQUIRED] = None
'''

TEMPLATES["[[package]]/offline.py"] = '''\
"""What the offline demo model (`make run` without an API key) knows about this connector:
prompts people would type, so it routes them here and picks the right tool, and which tool
looks up a missing argument. A real model needs none of this."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from connectors.api import Clause, OfflineHints, ToolHints

# A capitalised name: "the Home project", "project Home", "to Home", "my Work items".
_NAME = r"([A-Z][\\w'-]*(?:\\s+[A-Z][\\w'-]*)*)"
_PROJECT = (
    re.compile(rf"\\b{_NAME}\\s+(?:project|list)\\b"),
    re.compile(rf"\\bproject\\s+{_NAME}"),
    re.compile(rf"\\b(?:to|in|on|from|of|for)\\s+(?:the\\s+|my\\s+)?{_NAME}"),
    re.compile(rf"\\b(?:my|the)\\s+{_NAME}"),
)


def project_name(clause: Clause) -> Mapping[str, Any]:
    """The project the request names, for find_[[name]]_project."""
    for pattern in _PROJECT:
        found = pattern.search(clause.text)
        if found:
            return {"project_name": found.group(1)}
    return {}  # the offline model then reads it from the tool's schema


HINTS = OfflineHints(
    examples=("What's in my Work project?", "Add 'buy milk' to the Home project"),
    tools={
        "find_[[name]]_project": ToolHints(
            extract=project_name,
            hidden=True,
        ),
        "list_[[name]]_items": ToolHints(
            examples=("show the items in the Garden project", "what's on my Work list"),
            lookups={"project_id": "find_[[name]]_project"},
        ),
        "create_[[name]]_item": ToolHints(
            examples=(
                "add an item 'call the plumber' to Home",
                "put 'buy stamps' on my Work list",
                "new to-do in Work",
            ),
            lookups={"project_id": "find_[[name]]_project"},
        ),
    },
    capability="keep your [[agent]] projects' items",
    suggestions={"[[name]]_item": ("What's in my Home project?",)},
)
'''

TEMPLATES["tests/test_contract.py"] = '''\
"""Switchboard's contract kit over this connector: metadata, documentation, every tool
called in demo mode (sample and generated arguments), and live-mode failures."""

from __future__ import annotations

from typing import Any, ClassVar

from connectors.api import Connector
from connectors.testing import ConnectorContract

from [[package]] import connector


class Test[[agent]]Contract(ConnectorContract):
    connector: ClassVar[Connector] = connector
    sample_arguments: ClassVar[dict[str, dict[str, Any]]] = {
        "find_[[name]]_project": {"project_name": "Home"},
        "list_[[name]]_items": {"project_id": "prj_1", "limit": 5},
        "create_[[name]]_item": {
            "project_id": "prj_1",
            "title": "Water the plants",
        },
    }
    # Live mode, pointed at a server that fails every request ({base_url} is its URL).
    live_settings: ClassVar[dict[str, Any] | None] = {
        "connector_options": {
            "[[name]]": {
                "base_url": "{base_url}",
                "api_key": "contract-key-123",
            }
        }
    }
'''

TEMPLATES["tests/test_demo.py"] = '''\
"""The demo backend through the real tools: each user's own changes are kept."""

from __future__ import annotations

from dataclasses import replace

from connectors.testing import call_tool, harness

from [[package]] import connector


async def test_a_created_item_shows_up_in_the_list() -> None:
    async with harness() as kit:
        found = await call_tool(
            connector,
            "find_[[name]]_project",
            kit.context(),
            {"project_name": "home"},
        )
        project_id = found["response"]["id"]
        created = await call_tool(
            connector,
            "create_[[name]]_item",
            kit.context(),
            {"project_id": project_id, "title": "Renew passport"},
        )
        listed = await call_tool(
            connector,
            "list_[[name]]_items",
            kit.context(),
            {"project_id": project_id},
        )
    assert found["display_response"] is False  # the lookup is for the model only
    assert created["response"]["title"] == "Renew passport"
    assert [item["title"] for item in listed["response"]][-1] == "Renew passport"


async def test_another_user_does_not_see_it() -> None:
    async with harness() as kit:
        mine = kit.context()
        theirs = replace(mine, user_id="someone-else", demo=kit.demo.for_user("someone-else"))
        arguments = {"project_id": "prj_1", "title": "Renew passport"}
        await call_tool(connector, "create_[[name]]_item", mine, arguments)
        listed = await call_tool(
            connector,
            "list_[[name]]_items",
            theirs,
            {"project_id": "prj_1"},
        )
    assert "Renew passport" not in [item["title"] for item in listed["response"]]


async def test_mistakes_are_explained() -> None:
    async with harness() as kit:
        nowhere = await call_tool(
            connector,
            "find_[[name]]_project",
            kit.context(),
            {"project_name": "Atlantis"},
        )
        untitled = await call_tool(
            connector,
            "create_[[name]]_item",
            kit.context(),
            {"project_id": "prj_1", "title": " "},
        )
    assert nowhere["error_message"] == (
        "Error: no project is called 'Atlantis'; the projects are Home, Work, Garden"
    )
    assert untitled["error_message"] == "Error: the item has no title; ask the user what to add"
'''

TEMPLATES["tests/test_flows.py"] = '''\
"""A whole request as the model would run it (a scripted model, the real tools and the
real approval pause): the hidden lookup, then the write the person approves or declines."""

from __future__ import annotations

from typing import Any

from connectors.api import ChatContext
from connectors.testing import Flow, call, harness, reply, run_script

from [[package]] import connector

FIND = "find_[[name]]_project"  # the hidden lookup
LIST = "list_[[name]]_items"
CREATE = "create_[[name]]_item"  # the write: it waits for approval


def renew_passport_in_home(flow: Flow) -> dict[str, Any]:
    """The write's arguments, with the id the hidden lookup found."""
    project = flow.output(FIND)["response"]
    return {"project_id": project["id"], "title": "Renew passport"}


async def titles_in_home(context: ChatContext) -> list[str]:
    flow = await run_script(
        connector, [call(LIST, {"project_id": "prj_1"}), reply("Here they are.")], context=context
    )
    return [item["title"] for item in flow.output(LIST)["response"]]


async def test_an_approved_item_is_added() -> None:
    async with harness() as kit:
        flow = await run_script(
            connector,
            [
                call(FIND, {"project_name": "Home"}),
                call(CREATE, renew_passport_in_home),
                reply("Added it."),
            ],
            approve={CREATE: True},
            context=kit.context(),
        )
        titles = await titles_in_home(kit.context())
    assert flow.tools_called == [FIND, CREATE]
    assert flow.calls[0].hidden and not flow.calls[1].hidden
    assert flow.asked == [CREATE]  # only the write waited for the person
    assert flow.output(CREATE)["response"]["project"] == "Home"
    assert flow.final_text == "Added it."
    assert titles[-1] == "Renew passport"


async def test_a_declined_item_is_not_added() -> None:
    async with harness() as kit:
        flow = await run_script(
            connector,
            [
                call(FIND, {"project_name": "Home"}),
                call(CREATE, renew_passport_in_home),
                reply("OK, I did not add it."),
            ],
            approve={CREATE: False},
            context=kit.context(),
        )
        titles = await titles_in_home(kit.context())
    assert flow.tools_called == [FIND]  # the write never ran
    assert [approval.approved for approval in flow.approvals] == [False]
    assert flow.model is not None  # what the model read: nothing was done
    assert "the user declined this call" in str(flow.model.calls[-1].input)
    assert "Renew passport" not in titles
'''

TEMPLATES["[[package]]/card.js"] = """\
// How the [[agent]] connector's results look in Switchboard's chat, and how its write
// asks for approval (Switchboard's docs/connectors.md, "The UI card"). The page calls the
// default export once with its helpers (ui) and renders each response_type with the
// function given for it; anything that fails here falls back to the generic card.

export default function card(ui) {
  const { h, asText, asList, isObject } = ui;

  // list_[[name]]_items: the project's items as a checklist.
  function items(list) {
    const found = asList(list).filter(isObject);
    if (!found.length) return h("p", { class: "muted", text: "No items yet." });
    return h("ul", { class: "[[name]]-items" }, found.map((item) =>
      h("li", { class: item.done ? "done" : "" },
        h("span", { class: "[[name]]-check", "aria-hidden": "true", text: item.done ? "☑" : "☐" }),
        h("span", { class: "[[name]]-title", text: asText(item.title) }),
        item.done ? h("span", { class: "visually-hidden", text: " (done)" }) : null)));
  }

  // create_[[name]]_item: what was added, and where.
  function added(item, output) {
    if (!isObject(item)) return ui.genericBody(output);
    return h("p", { class: "status-line ok" }, ui.icon("check"),
      h("span", { text: `Added “${asText(item.title)}” to ${asText(item.project)}` }));
  }

  return {
    renderers: { "[[name]]_items": items, "[[name]]_item": added },
    approvals: {
      // The card reads "[[agent]] wants to add an item"; every argument is still listed.
      create_[[name]]_item: {
        action: "add an item",
        approveLabel: "Approve and add",
        summary: (args) => `add “${asText(args.title)}” to a project`,
      },
    },
  };
}
"""

TEMPLATES["[[package]]/card.css"] = """\
/* The [[agent]] connector's cards (card.js). The chat's theme variables (--accent,
   --muted, --border, …) follow light and dark mode. */

.[[name]]-items { list-style: none; margin: 0; padding: 0; display: grid; gap: 4px; }
.[[name]]-items li { display: flex; gap: 8px; align-items: baseline; }
.[[name]]-check { color: var(--accent); }
.[[name]]-items li.done .[[name]]-title { color: var(--muted); text-decoration: line-through; }
"""
