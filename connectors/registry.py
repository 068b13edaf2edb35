"""Connector registration: each service is one ``Connector``, found through entry points.

A plug-in package declares, in its ``pyproject.toml``::

    [project.entry-points."switchboard.connectors"]
    weather = "switchboard_weather:connector"

where ``connector`` is a ``Connector`` or a zero-argument callable returning one. The
built-in connectors register the same way, from this distribution's ``pyproject.toml``.
Every name is checked against one namespace (``Namespace``): a plug-in can neither take
over a built-in nor shadow another plug-in, and one that fails is skipped, with its reason
shown in ``switchboard connectors list`` and ``GET /api/connectors``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from difflib import get_close_matches
from functools import partial
from importlib.metadata import EntryPoint, entry_points
from typing import TYPE_CHECKING, Any, TypeVar

from agents import Agent

from connectors.context import ChatContext
from connectors.names import DISTRIBUTION, ENTRY_POINT_GROUP, ORCHESTRATOR, name_problem
from connectors.options import ConnectorOptions
from connectors.plugin_code import PluginCodeFailed, exit_call, run_plugin_code
from connectors.responses import AccountNeeded, ToolResponse
from connectors.settings import ConnectorMode, ConnectorSettings
from connectors.ui_card import ui_problems

if TYPE_CHECKING:
    from connectors.account_flow import AccountFlow
    from connectors.offline_hints import OfflineHints

logger = logging.getLogger("switchboard.connectors")
T = TypeVar("T")


@dataclass(frozen=True)
class Connector:
    name: str  # "weather": settings key (SWITCHBOARD_CONNECTOR_MODES), REST path
    agent_name: str  # "WeatherAgent": the Agent's name, hence its transfer_to_<name> tool
    display_name: str  # "Weather": what people read
    build_agent: Callable[[ConnectorSettings], Agent[ChatContext]]
    tool_descriptions: dict[str, str] = field(
        default_factory=dict
    )  # tool → "Checking the forecast"
    response_types: tuple[str, ...] = ()
    # True when each user connects their own account (OAuth, a bank link); False when the
    # connector uses the server's keys (a search API) or nothing at all.
    needs_account: bool = False
    # The "Connect" card its tools answer with while the user is not connected
    # (default: a generic ``AccountNeeded``).
    account_card: Callable[[], ToolResponse] | None = None
    # What the demo account shows in GET /api/connectors (e.g. {"email": "me@example.com"}).
    demo_account: dict[str, Any] = field(default_factory=dict)
    # How a user connects their account in live mode (connectors.account_flow); None: only
    # the demo mode can connect it.
    account_flow: AccountFlow | None = None
    # What the offline demo model knows about it (connectors.offline_hints); None: generic.
    offline: OfflineHints | None = None
    # Where it appears in lists and the orchestrator's instructions: lower first, then by
    # name. The built-ins set theirs; plug-ins follow them.
    order: int = 100
    # Its typed settings (connectors.options), checked for its mode at start-up.
    options: type[ConnectorOptions] | None = None
    # Its UI (connectors.ui_card): the icon its cards show, and the outside sources its
    # card needs in the page's Content-Security-Policy, e.g. {"script-src": ("https://…",)}.
    icon: str | None = None
    csp: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # The module its entry point names, set when it registers: its card.js and card.css
    # are found beside it.
    module: str | None = field(default=None, compare=False)
    # A remote server (RAP, MCP) is always "live"; None: SWITCHBOARD_CONNECTOR_MODES says.
    mode: ConnectorMode | None = None
    # A remote server's connection as of now (listings); None: nothing to report.
    health: Callable[[], Health] | None = None

    def mode_in(self, settings: ConnectorSettings) -> ConnectorMode:
        return self.mode or settings.connector_mode(self.name)

    def connect_card(self) -> ToolResponse:
        if self.account_card is not None:
            return self.account_card()
        return AccountNeeded(self.agent_name, self.name)


@dataclass(frozen=True)
class Health:
    """A remote server's connection: "connected", "connecting", "reconnecting", "failed"
    or "stopped", and why when it is not connected (safe to show: no secrets)."""

    state: str
    reason: str | None = None


@dataclass(frozen=True)
class _Stage:
    """A part of a plug-in's code, as the reason for refusing it names it."""

    raised: str  # heads the exception it raised: "did not load: ModuleNotFoundError: …"
    exited: str  # says it called sys.exit: "did not load: its import called sys.exit(3)"


_IMPORT = _Stage("did not load", "did not load: its import")
_BUILD = _Stage("build_agent raised", "build_agent")
_CHECKS = _Stage("did not load", "did not load: it")  # its options model, its card files


def _run(stage: _Stage, code: Callable[[], T]) -> T:
    """``code()``, a plug-in's; anything it raises (``BaseException`` included, see
    ``connectors.plugin_code``) refuses the plug-in with the reason ``stage`` gives it."""
    try:
        return run_plugin_code(code)
    except PluginCodeFailed as failed:
        raise Refused(_reason(stage, failed.error)) from failed.error


def _resolve(point: EntryPoint) -> Connector:
    target = _run(_IMPORT, point.load)
    value = target
    if callable(target) and not isinstance(target, Connector):
        value = _run(_Stage("did not load", f"did not load: {point.value}()"), target)
    if not isinstance(value, Connector):
        raise Refused(
            f"{point.value} gave a {type(value).__name__!r} object, not a Connector "
            "(or a function returning one)"
        )
    return value


def installed_points() -> list[EntryPoint]:
    """The installed connectors' entry points (tests add their own plug-ins to these)."""
    return list(entry_points(group=ENTRY_POINT_GROUP))


def load_connectors(
    settings: ConnectorSettings, points: Iterable[EntryPoint] | None = None
) -> list[Connector]:
    """The connectors that registered cleanly (``register_connectors`` says why others did not)."""
    return register_connectors(settings, points).connectors


def register_connectors(
    settings: ConnectorSettings, points: Iterable[EntryPoint] | None = None
) -> Registration:
    """Every installed connector, checked: the built-ins first, then plug-ins by name.

    A plug-in that fails to load, raises in ``build_agent``, builds the wrong agent or
    claims a name someone else holds is refused with a reason and the rest are served.
    ``points`` overrides the entry-point scan (tests).
    """
    scanned = installed_points() if points is None else points
    # One distribution reachable twice on sys.path is one candidate, not a clash.
    candidates = list({_Candidate.of(point): None for point in scanned})
    namespace = Namespace()
    failed: list[FailedConnector] = []
    for candidate in _claims_clashing(candidates, failed):
        name = candidate.point.name
        try:
            connector = replace(_resolve(candidate.point), module=candidate.point.module)
            name = connector.name
            namespace.admit(connector, candidate.origin, settings)
        except Refused as exc:
            failed.append(FailedConnector(name, candidate.origin, str(exc), exc.__cause__))
        except KeyboardInterrupt:
            raise  # a person's Ctrl-C (connectors.plugin_code)
        except BaseException as exc:
            failed.append(FailedConnector(name, candidate.origin, _reason(_CHECKS, exc), exc))
    for failure in failed:
        _log_failure(failure)
    ordered = sorted(namespace.connectors(), key=lambda c: (c.order, c.name))
    return Registration(ordered, failed, namespace)


def _log_failure(failure: FailedConnector) -> None:
    logger.error(
        "connector %r of %s skipped: %s",
        failure.name,
        failure.origin,
        failure.reason,
        exc_info=failure.error,
    )


@dataclass(frozen=True)
class FailedConnector:
    """A connector that is installed but not served, and why (safe to show: no secrets)."""

    name: str
    origin: str  # "switchboard-weather 0.3.0" or "the built-in connectors"
    reason: str
    # For the server log's traceback only: its message may hold anything.
    error: BaseException | None = field(default=None, repr=False, compare=False)


@dataclass
class Registration:
    """The connectors to serve and the ones refused; remote connectors (RAP, MCP servers)
    join the same namespace after discovery."""

    connectors: list[Connector]
    failed: list[FailedConnector]
    namespace: Namespace

    def admit_remote(self, remote: Iterable[tuple[Connector, Iterable[str]]], setting: str) -> None:
        """Add servers configured in ``setting`` (their tool names known); one whose names
        are taken is skipped like an unreachable one, its reason naming the holder."""
        for connector, tools in remote:
            try:
                self.namespace.admit_agent(connector, setting, tools)
            except Refused as exc:
                self.failed.append(FailedConnector(connector.name, setting, str(exc)))
                _log_failure(self.failed[-1])
                continue
            self.connectors.append(connector)

    def unknown_names(self, settings: ConnectorSettings, *configured: str) -> list[str]:
        """One line per connector name in the mode or option settings that names nothing
        installed or ``configured`` (a typo would otherwise be silently ignored)."""
        known = {c.name for c in self.connectors} | {f.name for f in self.failed}
        known.update(configured, self.namespace.names())
        problems = []
        for variable, names in (
            ("SWITCHBOARD_CONNECTOR_MODES", settings.connector_modes),
            ("SWITCHBOARD_CONNECTOR_OPTIONS", settings.connector_options),
        ):
            for name in sorted(set(names) - known):
                close = get_close_matches(name, sorted(known), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                problems.append(
                    f"{variable} names {name!r}, which is not a connector here{hint}; "
                    f"the connectors are {', '.join(sorted(known))}"
                )
        return problems


@dataclass(frozen=True)
class _Candidate:
    point: EntryPoint
    origin: str
    builtin: bool

    @classmethod
    def of(cls, point: EntryPoint) -> _Candidate:
        dist = getattr(point, "dist", None)
        builtin = dist is not None and dist.name == DISTRIBUTION
        if builtin:
            origin = "the built-in connectors"
        elif dist is not None:
            origin = f"{dist.name} {dist.version}"
        else:
            origin = f"entry point {point.value}"
        return cls(point, origin, builtin)


def _claims_clashing(
    candidates: list[_Candidate], failed: list[FailedConnector]
) -> list[_Candidate]:
    """The candidates in load order, without plug-ins that claim a taken entry-point name.

    A plug-in may not take a built-in's name; two plug-ins claiming one name are both
    refused, since neither is the one the operator meant.
    """
    builtins = [c for c in candidates if c.builtin]
    taken = {c.point.name: c.origin for c in builtins}
    claims: dict[str, list[_Candidate]] = {}
    for candidate in candidates:
        if not candidate.builtin:
            claims.setdefault(candidate.point.name, []).append(candidate)
    plugins: list[_Candidate] = []
    for name in sorted(claims):
        claimants = claims[name]
        if name in taken:
            failed.extend(
                FailedConnector(name, c.origin, f"{name!r} is a built-in connector's name")
                for c in claimants
            )
        elif len(claimants) > 1:
            origins = " and ".join(c.origin for c in claimants)
            failed.extend(
                FailedConnector(
                    name,
                    c.origin,
                    f"{origins} both register a connector named {name!r}; uninstall one",
                )
                for c in claimants
            )
        else:
            plugins.extend(claimants)
    return builtins + plugins


def _reason(stage: _Stage, exc: BaseException) -> str:
    # The traceback goes to the log; the reason names only the exception's type, since its
    # message may hold anything (a URL with a key, a token). An import error's is a module.
    if isinstance(exc, SystemExit):
        what = f"{stage.exited} called {exit_call(exc)}"
    elif isinstance(exc, ImportError):
        what = f"{stage.raised}: {type(exc).__name__}: {exc}"
    else:
        what = f"{stage.raised}: {type(exc).__name__}"
    return f"{what} (see the server log)"


class Refused(Exception):
    """Why a connector was not admitted; the message is safe to show and names both sides."""


def _check_options(connector: Connector, settings: ConnectorSettings) -> None:
    if connector.options is None:
        return
    if connector.options.connector != connector.name:
        raise Refused(
            f"its options model {connector.options.__name__} is for "
            f"{connector.options.connector!r}, not {connector.name!r}"
        )
    problems = connector.options.problems(settings)
    if problems:
        raise Refused("; ".join(problems))


class Namespace:
    """Connector, agent and tool names, each held by exactly one connector.

    Built-ins are admitted first, so a clash never displaces one; every refusal names the
    holder of the name.
    """

    def __init__(self) -> None:
        self._connectors: dict[str, tuple[Connector, str]] = {}
        self._agents: dict[str, str] = {ORCHESTRATOR.lower(): "the orchestrator"}
        self._tools: dict[str, tuple[str, str]] = {}  # tool → (connector, label)

    def connectors(self) -> tuple[Connector, ...]:
        return tuple(connector for connector, _ in self._connectors.values())

    def names(self) -> set[str]:
        return set(self._connectors)

    def admit(self, connector: Connector, origin: str, settings: ConnectorSettings) -> None:
        """Take ``connector`` in, or raise ``Refused``; its agent is built once to check it."""
        self._check_name(connector.name)
        _check_options(connector, settings)
        problems = ui_problems(connector)
        if problems:
            raise Refused("; ".join(problems))
        agent = _run(_BUILD, partial(connector.build_agent, settings))
        if agent.name != connector.agent_name:
            raise Refused(
                f"build_agent built an agent named {agent.name!r}; the connector declares "
                f"agent_name={connector.agent_name!r}"
            )
        self.admit_agent(connector, origin, [tool.name for tool in agent.tools])

    def admit_agent(self, connector: Connector, origin: str, tools: Iterable[str]) -> None:
        """Take in a connector whose agent and tool names are already known (RAP, MCP)."""
        self._check_name(connector.name)
        key = connector.agent_name.lower()
        if key in self._agents:
            raise Refused(
                f"agent name {connector.agent_name!r} is already used by {self._agents[key]}"
            )
        names = list(tools)
        for tool in names:
            if tool in self._tools:
                raise Refused(f"tool name {tool!r} is already a tool of {self._tools[tool][1]}")
        label = f"connector {connector.name!r} of {origin}"
        self._connectors[connector.name] = (connector, origin)
        self._agents[key] = label
        self._tools.update(dict.fromkeys(names, (connector.name, label)))

    def claim_tool(self, connector: str, tool: str) -> str | None:
        """Record a tool that appeared after start-up (an MCP server's); the holder's label
        when another connector already holds the name (the tool must then be left out)."""
        holder = self._tools.setdefault(tool, (connector, f"connector {connector!r}"))
        return None if holder[0] == connector else holder[1]

    def _check_name(self, name: str) -> None:
        problem = name_problem(name)
        if problem is not None:
            raise Refused(problem)
        held = self._connectors.get(name)
        if held is not None:
            raise Refused(f"the name {name!r} is already taken by {held[1]}")


def tool_descriptions(connectors: Iterable[Connector]) -> dict[str, str]:
    """Every tool's progress text ("Checking the forecast"), for the stream translator.

    Tool names are unique across connectors (``Namespace``), so nothing here is overwritten.
    """
    merged: dict[str, str] = {}
    for connector in connectors:
        merged.update(connector.tool_descriptions)
    return merged
