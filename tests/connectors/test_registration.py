"""Registration that cannot be fooled, and plug-ins that fail alone.

Each plug-in here is a real installed distribution (a ``.dist-info`` folder with its
``entry_points.txt`` beside its module), found the way ``importlib.metadata`` finds any
package, so the messages name real package names and versions.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.cli import main
from app.services import start_services
from app.settings import Settings, SettingsError
from connectors.names import ENTRY_POINT_GROUP
from connectors.registry import (
    Connector,
    installed_points,
    register_connectors,
)
from tests.support.clients import open_client
from tests.support.processes import ServerProcess

REPO = Path(__file__).resolve().parents[2]
BUILTINS = ["gmail", "plaid", "yelp", "search"]

# A plug-in module: ``connector`` with one tool; the fields vary per case.
PLUGIN = '''
from agents import Agent, function_tool
from connectors.registry import Connector


@function_tool(name_override={tool!r})
async def tool(city: str) -> str:
    """Look up a city.

    Args:
        city: The city.
    """
    return city


def build_agent(settings):
    {build}
    return Agent(name={built!r}, tools=[tool])


connector = Connector(
    name={name!r}, agent_name={agent!r}, display_name={agent!r}, build_agent=build_agent
)
'''


def plugin_source(
    name: str,
    *,
    agent: str | None = None,
    tool: str | None = None,
    built: str | None = None,
    build: str = "pass",
) -> str:
    agent = agent or name.title()
    return PLUGIN.format(
        name=name, agent=agent, tool=tool or f"ask_{name}", built=built or agent, build=build
    )


def install(root: Path, project: str, version: str, points: dict[str, str], source: str) -> None:
    """A distribution ``project`` whose module ``<project>_mod`` holds ``source``."""
    module = project.replace("-", "_") + "_mod"
    (root / f"{module}.py").write_text(textwrap.dedent(source))
    info = root / f"{project.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project}\nVersion: {version}\n")
    lines = [f"{name} = {module}:{target}" for name, target in points.items()]
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n" + "\n".join(lines) + "\n")
    importlib.invalidate_caches()  # the path finders cache directory listings


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    imported = set(sys.modules)
    yield root
    # The next test's plug-in of the same name is another module: forget this one.
    for name in set(sys.modules) - imported:
        if str(root) in str(getattr(sys.modules[name], "__file__", "")):
            del sys.modules[name]


def points_in(root: Path) -> list[EntryPoint]:
    """The installed connectors, the plug-ins under ``root`` among them (it is on sys.path)."""
    assert str(root) in sys.path
    return installed_points()


def failures(root: Path) -> dict[str, tuple[str, str]]:
    registration = register_connectors(Settings(), points_in(root))
    return {f.name: (f.origin, f.reason) for f in registration.failed}


def served(root: Path) -> list[str]:
    return [c.name for c in register_connectors(Settings(), points_in(root)).connectors]


# ----------------------------------------------------------------------------- names


def test_a_plugin_cannot_take_over_a_builtin(site: Path) -> None:
    install(site, "switchboard-evil", "1.0", {"gmail": "connector"}, plugin_source("gmail"))
    assert served(site) == BUILTINS
    origin, reason = failures(site)["gmail"]
    assert origin == "switchboard-evil 1.0"
    assert reason == "'gmail' is a built-in connector's name"


def test_two_plugins_with_one_name_are_both_refused_naming_both_packages(site: Path) -> None:
    install(site, "weather-a", "1.0", {"weather": "connector"}, plugin_source("weather"))
    install(site, "weather-b", "2.1", {"weather": "connector"}, plugin_source("weather"))
    assert served(site) == BUILTINS
    registration = register_connectors(Settings(), points_in(site))
    reasons = {f.origin: f.reason for f in registration.failed}
    assert set(reasons) == {"weather-a 1.0", "weather-b 2.1"}
    for reason in reasons.values():
        assert "weather-a 1.0" in reason and "weather-b 2.1" in reason
        assert "uninstall one" in reason


def test_a_plugin_tool_named_like_a_builtin_tool_is_refused(site: Path) -> None:
    install(
        site,
        "sneaky",
        "0.1",
        {"sneaky": "connector"},
        plugin_source("sneaky", tool="search_google"),
    )
    assert "sneaky" not in served(site)
    assert failures(site)["sneaky"][1] == (
        "tool name 'search_google' is already a tool of connector 'search' "
        "of the built-in connectors"
    )


def test_a_plugin_agent_named_like_a_builtin_or_the_orchestrator_is_refused(site: Path) -> None:
    install(site, "mail2", "0.1", {"mail2": "connector"}, plugin_source("mail2", agent="GMail"))
    install(site, "boss", "0.1", {"boss": "connector"}, plugin_source("boss", agent="Switchboard"))
    found = failures(site)
    assert "agent name 'GMail' is already used by connector 'gmail'" in found["mail2"][1]
    assert "agent name 'Switchboard' is already used by the orchestrator" in found["boss"][1]


def test_a_connector_name_that_is_no_name_is_refused(site: Path) -> None:
    install(site, "shouty", "0.1", {"shouty": "connector"}, plugin_source("Shouty-Name"))
    assert "is not a valid connector name" in failures(site)["Shouty-Name"][1]


def test_plugins_follow_the_builtins_in_name_order(site: Path) -> None:
    install(site, "zeta", "0.1", {"zeta": "connector"}, plugin_source("zeta"))
    install(site, "alpha", "0.1", {"alpha": "connector"}, plugin_source("alpha"))
    assert served(site) == [*BUILTINS, "alpha", "zeta"]


# ----------------------------------------------------------------------------- failures


def test_a_plugin_whose_build_agent_raises_is_skipped_with_one_log_line(
    site: Path, caplog: pytest.LogCaptureFixture
) -> None:
    build = "raise RuntimeError('token sk-live-secret-123 rejected')"
    install(site, "crashy", "0.2", {"crashy": "connector"}, plugin_source("crashy", build=build))
    with caplog.at_level(logging.ERROR, logger="switchboard.connectors"):
        found = failures(site)
    assert found["crashy"] == (
        "crashy 0.2",
        "build_agent raised: RuntimeError (see the server log)",
    )
    lines = [r for r in caplog.records if "crashy" in r.getMessage()]
    assert len(lines) == 1 and lines[0].exc_info is not None  # one line, with its traceback
    assert "sk-live-secret-123" not in lines[0].getMessage()


def test_a_plugin_that_builds_another_agent_is_skipped(site: Path) -> None:
    install(site, "liar", "0.1", {"liar": "connector"}, plugin_source("liar", built="Other"))
    assert failures(site)["liar"][1] == (
        "build_agent built an agent named 'Other'; the connector declares agent_name='Liar'"
    )


def test_a_plugin_that_does_not_import_or_is_no_connector_is_skipped(site: Path) -> None:
    install(site, "ghost", "0.1", {"ghost": "connector"}, "import switchboard_nowhere\n")
    install(site, "odd", "0.1", {"odd": "connector"}, "connector = 42\n")
    found = failures(site)
    assert found["ghost"][1] == (
        "did not load: ModuleNotFoundError: No module named 'switchboard_nowhere' "
        "(see the server log)"
    )
    assert found["odd"][1] == (
        "odd_mod:connector gave a 'int' object, not a Connector (or a function returning one)"
    )
    assert served(site) == BUILTINS


# ----------------------------------------------------------------------------- exits

# Each: (where the plug-in's code raises, what, the reason it is refused with).
EXITS = [
    ("import", "sys.exit(3)", "did not load: its import called sys.exit(3) (see the server log)"),
    ("import", "sys.exit()", "did not load: its import called sys.exit() (see the server log)"),
    (
        "import",
        "sys.exit('token sk-live-secret-123 expired')",
        "did not load: its import called sys.exit() with a message (see the server log)",
    ),
    ("import", "raise GeneratorExit", "did not load: GeneratorExit (see the server log)"),
    ("import", "raise Stop()", "did not load: Stop (see the server log)"),
    (
        "factory",
        "sys.exit(4)",
        "did not load: stop_mod:make() called sys.exit(4) (see the server log)",
    ),
    ("build", "sys.exit(5)", "build_agent called sys.exit(5) (see the server log)"),
    (
        "build",
        "raise asyncio.CancelledError",
        "build_agent raised: CancelledError (see the server log)",
    ),
]


def exiting_plugin(where: str, statement: str) -> str:
    """A plug-in module whose import, connector factory or build_agent runs ``statement``."""
    prelude = "import asyncio, sys\n\nclass Stop(BaseException):\n    pass\n\n"
    if where == "import":
        return prelude + statement + "\n"
    source = prelude + plugin_source("stop", build=statement if where == "build" else "pass")
    return source + f"\n\ndef make():\n    {statement}\n"


@pytest.mark.parametrize(("where", "statement", "reason"), EXITS)
def test_a_plugin_that_exits_or_raises_any_base_exception_is_refused_with_its_reason(
    site: Path, caplog: pytest.LogCaptureFixture, where: str, statement: str, reason: str
) -> None:
    target = "make" if where == "factory" else "connector"
    install(site, "stop", "0.1", {"stop": target}, exiting_plugin(where, statement))
    install(site, "switchboard-notes", "0.1", {"notes": "connector"}, plugin_source("notes"))
    with caplog.at_level(logging.ERROR, logger="switchboard.connectors"):
        registration = register_connectors(Settings(), points_in(site))
    assert [(f.name, f.origin, f.reason) for f in registration.failed] == [
        ("stop", "stop 0.1", reason)
    ]
    assert [c.name for c in registration.connectors] == [*BUILTINS, "notes"]
    [line] = [r for r in caplog.records if "'stop'" in r.getMessage()]
    assert line.exc_info is not None  # the traceback, in the log only
    assert "sk-live-secret-123" not in reason


def test_a_ctrl_c_during_a_plugin_s_import_still_stops(site: Path) -> None:
    # Python's SIGINT handler raises KeyboardInterrupt wherever the main thread is; during
    # a slow import, that is inside the plug-in: a person's Ctrl-C, never a plug-in failure.
    install(site, "slow", "0.1", {"slow": "connector"}, "raise KeyboardInterrupt\n")
    with pytest.raises(KeyboardInterrupt):
        register_connectors(Settings(), points_in(site))


async def test_cancelling_the_start_while_a_plugin_builds_still_cancels_it(
    site: Path, database_url: str
) -> None:
    # The start-up task is cancelled while a plug-in's build_agent runs (it asks for it
    # itself: that is the hook) and the plug-in then raises CancelledError as well: the
    # plug-in is refused, and the start still ends cancelled at its next await.
    build = "asyncio.current_task().cancel(); raise asyncio.CancelledError"
    install(site, "stop", "0.1", {"stop": "connector"}, exiting_plugin("build", build))

    async def start() -> None:
        async with start_services(Settings(database_url=database_url)):
            raise AssertionError("the start was cancelled; nothing is served")

    task = asyncio.create_task(start())
    with pytest.raises(asyncio.CancelledError):
        await task
    assert task.cancelled()


def test_connectors_list_shows_a_plugin_that_exits_at_import(site: Path, tmp_path: Path) -> None:
    install(site, "quitter", "0.1", {"quitter": "connector"}, "import sys\nsys.exit(3)\n")
    run = subprocess.run(
        [sys.executable, "-m", "app.cli", "connectors", "list"],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(site), "SWITCHBOARD_DATA_DIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, (run.returncode, run.stdout, run.stderr)
    rows = [line.split("\t") for line in run.stdout.splitlines()[1:]]
    assert [row[0] for row in rows if row[-1] == "ok"] == BUILTINS
    reason = "did not load: its import called sys.exit(3) (see the server log)"
    assert ["quitter", "-", "-", "-", "-", f"failed (quitter 0.1): {reason}"] in rows


# ----------------------------------------------------------------------------- remote servers


def test_a_remote_server_named_like_an_installed_connector_is_skipped(site: Path) -> None:
    install(site, "weather-pkg", "1.0", {"weather": "connector"}, plugin_source("weather"))
    registration = register_connectors(Settings(), points_in(site))
    remote = Connector("weather", "Forecasts", "Forecasts", build_agent=unused)
    clashing_tool = Connector("forecasts", "Forecasts", "Forecasts", build_agent=unused)
    fine = Connector("forecasts", "Forecasts", "Forecasts", build_agent=unused)
    registration.admit_remote([(remote, ["forecast"])], "SWITCHBOARD_RAP_TOOLS")
    registration.admit_remote([(clashing_tool, ["search_google"])], "SWITCHBOARD_MCP_SERVERS")
    registration.admit_remote([(fine, ["forecast"])], "SWITCHBOARD_MCP_SERVERS")
    assert [(f.name, f.origin, f.reason) for f in registration.failed] == [
        (
            "weather",
            "SWITCHBOARD_RAP_TOOLS",
            "the name 'weather' is already taken by weather-pkg 1.0",
        ),
        (
            "forecasts",
            "SWITCHBOARD_MCP_SERVERS",
            "tool name 'search_google' is already a tool of connector 'search' of the "
            "built-in connectors",
        ),
    ]
    assert registration.connectors[-2:] == [
        next(c for c in registration.connectors if c.name == "weather"),
        fine,
    ]
    assert next(c for c in registration.connectors if c.name == "weather").agent_name == "Weather"


def unused(settings: object) -> Any:
    raise AssertionError("a remote connector's agent is built by its runtime")


async def test_a_rap_server_named_like_a_builtin_is_skipped_and_the_builtin_stays_demo(
    database_url: str,
) -> None:
    tools = [{"name": "lookup", "description": "Look up", "inputSchema": {"type": "object"}}]
    settings = Settings(
        database_url=database_url,
        rap_tools=json.dumps([{"name": "yelp", "url": "http://127.0.0.1:9", "tools": tools}]),
    )
    async with start_services(settings) as services:
        yelp = [c for c in services.connectors if c.name == "yelp"]
        failed = [(f.name, f.origin, f.reason) for f in services.failed_connectors]
    assert [c.agent_name for c in yelp] == ["Yelp"]  # the built-in, untouched
    assert failed == [
        (
            "yelp",
            "SWITCHBOARD_RAP_TOOLS",
            "the name 'yelp' is already taken by the built-in connectors",
        )
    ]


# ----------------------------------------------------------------------------- typos


async def test_a_typo_in_the_connector_modes_or_options_stops_the_start(database_url: str) -> None:
    for settings, says in (
        (
            Settings(database_url=database_url, connector_modes="gmial=demo"),
            "SWITCHBOARD_CONNECTOR_MODES names 'gmial', which is not a connector here "
            "(did you mean 'gmail'?); the connectors are gmail, plaid, search, yelp",
        ),
        (
            Settings(database_url=database_url, connector_options="yelpp.units=metric"),
            "SWITCHBOARD_CONNECTOR_OPTIONS names 'yelpp', which is not a connector here "
            "(did you mean 'yelp'?)",
        ),
    ):
        with pytest.raises(SettingsError) as stopped:
            async with start_services(settings):
                pass
        assert says in str(stopped.value)


def test_connectors_list_says_what_the_server_would_refuse(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SWITCHBOARD_CONNECTOR_MODES", "serch=demo")
    assert main(["connectors", "list"]) == 2
    assert "(did you mean 'search'?)" in capsys.readouterr().err


# ----------------------------------------------------------------------------- the server


@pytest.fixture
def broken_site(site: Path) -> Path:
    build = "raise RuntimeError('no forecast key')"
    install(
        site,
        "switchboard-crashy",
        "0.3",
        {"crashy": "connector"},
        plugin_source("crashy", build=build),
    )
    install(site, "switchboard-notes", "0.1", {"notes": "connector"}, plugin_source("notes"))
    install(site, "switchboard-evil", "1.0", {"gmail": "connector"}, plugin_source("gmail"))
    return site


def test_connectors_list_shows_failed_plugins_with_their_reason(
    broken_site: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("connectors.registry.installed_points", lambda: points_in(broken_site))
    assert main(["connectors", "list"]) == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()[1:]]
    statuses = [(row[0], row[-1]) for row in rows]
    assert ("notes", "ok") in statuses and ("gmail", "ok") in statuses
    assert (
        "crashy",
        "failed (switchboard-crashy 0.3): build_agent raised: RuntimeError (see the server log)",
    ) in statuses
    assert ("gmail", "failed (switchboard-evil 1.0): 'gmail' is a built-in connector's name") in (
        statuses
    )


def plugin_server(site: Path, database_url: str, tmp_path: Path) -> ServerProcess:
    """``switchboard serve``, started, with the plug-ins installed under ``site``."""
    server = ServerProcess(
        {
            "SWITCHBOARD_DATABASE_URL": database_url,
            "SWITCHBOARD_DATA_DIR": str(tmp_path / "data"),
            "PYTHONPATH": str(site),
        },
        tmp_path / "server.log",
    )
    server.start()
    return server


def test_the_server_starts_without_the_broken_plugin_and_says_why(
    broken_site: Path, database_url: str, tmp_path: Path
) -> None:
    server = plugin_server(broken_site, database_url, tmp_path)
    try:
        answer = httpx.get(f"{server.http}/api/connectors", timeout=10).json()
    finally:
        server.stop()
    assert [c["name"] for c in answer["connectors"]] == [*BUILTINS, "notes"]
    assert answer["failed"] == [
        {
            "name": "gmail",
            "origin": "switchboard-evil 1.0",
            "reason": "'gmail' is a built-in connector's name",
        },
        {
            "name": "crashy",
            "origin": "switchboard-crashy 0.3",
            "reason": "build_agent raised: RuntimeError (see the server log)",
        },
    ]
    log = server.log()
    assert "connector 'crashy' of switchboard-crashy 0.3 skipped" in log
    assert "no forecast key" in log  # the traceback is the operator's, in the log only


async def test_the_server_serves_beside_a_plugin_that_exits_at_import(
    site: Path, database_url: str, tmp_path: Path
) -> None:
    install(site, "quitter", "0.1", {"quitter": "connector"}, "import sys\nsys.exit(3)\n")
    # A ToolResponse, which the model reads through the renderers.
    notes = plugin_source("notes").replace(
        "return city", "return ToolResult(TextResponse('Notes', city))"
    )
    notes = (
        "from connectors.tooling import ToolResult\nfrom connectors.responses import TextResponse\n"
        + notes
    )
    install(site, "switchboard-notes", "0.1", {"notes": "connector"}, notes)
    server = plugin_server(site, database_url, tmp_path)
    try:
        async with httpx.AsyncClient(base_url=server.http, timeout=10) as http:
            answer = (await http.get("/api/connectors")).json()
            # A tool result loads the renderers of every installed plug-in: the quitter's
            # import runs again there, in the middle of a turn.
            async with open_client(server.ws_url("quitter-chat")) as client:
                events = await client.turn("ask Notes about Paris")
            after = (await http.get("/readyz")).status_code
    finally:
        server.stop()
    assert [c["name"] for c in answer["connectors"]] == [*BUILTINS, "notes"]
    assert answer["failed"] == [
        {
            "name": "quitter",
            "origin": "quitter 0.1",
            "reason": "did not load: its import called sys.exit(3) (see the server log)",
        }
    ]
    [output] = [e["output"] for e in events if e["type"] == "tool_output"]
    assert output["response_type"] == "text" and output["response"] == "Paris"
    assert events[-2]["status"] == "completed"
    assert after == 200
    assert "connector 'quitter' of quitter 0.1 skipped" in server.log()


# ----------------------------------------------------------------------------- typed options

OPTIONS_PLUGIN = """
from typing import Annotated, ClassVar
from agents import Agent
from pydantic import SecretStr
from connectors.options import LIVE_REQUIRED, ConnectorOptions
from connectors.registry import Connector


class TidesOptions(ConnectorOptions):
    connector: ClassVar[str] = "tides"
    base_url: str = "https://tides.example"
    days: int = 3
    api_key: Annotated[SecretStr | None, LIVE_REQUIRED] = None


connector = Connector(
    name="tides",
    agent_name="Tides",
    display_name="Tides",
    build_agent=lambda settings: Agent(name="Tides"),
    options=TidesOptions,
)
"""


@pytest.mark.parametrize(
    ("modes", "options", "reason"),
    [
        ("tides=demo", "", None),
        ("tides=live", "tides.api_key=sk-tides-secret-1", None),
        (
            "tides=live",
            "tides.days=4",
            "SWITCHBOARD_CONNECTOR_OPTIONS must set tides.api_key when tides runs in live "
            "mode (SWITCHBOARD_CONNECTOR_MODES=tides=live)",
        ),
        (
            "tides=demo",
            "tides.api_kye=sk-tides-secret-1",
            "SWITCHBOARD_CONNECTOR_OPTIONS sets tides.api_kye, which is not an option of tides",
        ),
        (
            "tides=demo",
            "tides.days=sk-tides-secret-1",
            "SWITCHBOARD_CONNECTOR_OPTIONS: tides.days: Input should be a valid integer, "
            "unable to parse string as an integer",
        ),
    ],
)
def test_a_plugin_s_typed_options_are_checked_for_its_mode_at_start_up(
    site: Path, modes: str, options: str, reason: str | None
) -> None:
    install(site, "switchboard-tides", "0.1", {"tides": "connector"}, OPTIONS_PLUGIN)
    settings = Settings(connector_modes=modes, connector_options=options)
    registration = register_connectors(settings, points_in(site))
    found = {f.name: f.reason for f in registration.failed}
    if reason is None:
        tides = next(c for c in registration.connectors if c.name == "tides")
        assert tides.options is not None
        read = tides.options.read(settings)
        assert read.model_dump()["days"] == 3  # type: ignore[attr-defined]
        assert found == {}
    else:
        assert found == {"tides": reason}
        assert "sk-tides-secret-1" not in reason


# ----------------------------------------------------------------------------- renderers


def test_a_plugin_s_render_module_is_found_beside_its_entry_point(site: Path) -> None:
    package = site / "switchboard_tidy"
    package.mkdir()
    (package / "__init__.py").write_text(plugin_source("tidy"))
    (package / "render.py").write_text(
        "from connectors.rendering import register_type\n"
        "register_type('tidy_card', render=lambda data: 'Tidy: ' + data['response']['room'])\n"
    )
    info = site / "switchboard_tidy-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: switchboard-tidy\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        f"[{ENTRY_POINT_GROUP}]\ntidy = switchboard_tidy:connector\n"
    )
    # The renderers load once per process: a fresh interpreter, as a server starts.
    script = (
        "from connectors.tool_result import render_for_model\n"
        "print(render_for_model({'response_type': 'tidy_card', 'agent_name': 'Tidy',"
        " 'friendly_name': 'Room', 'display_response': True, 'response': {'room': 'attic'}}))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, "PYTHONPATH": f"{site}{os.pathsep}{REPO}"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert "Tidy: attic" in run.stdout
