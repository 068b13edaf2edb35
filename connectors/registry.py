"""Connector registration: each service is one ``Connector``, found through entry points.

A plug-in package declares, in its ``pyproject.toml``::

    [project.entry-points."switchboard.connectors"]
    weather = "switchboard_weather:connector"

where ``connector`` is a ``Connector`` or a zero-argument callable returning one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from importlib import import_module
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from agents import Agent

from connectors.context import ChatContext
from connectors.responses import AccountNeeded, ToolResponse
from connectors.settings import ConnectorSettings

logger = logging.getLogger("switchboard.connectors")

ENTRY_POINT_GROUP = "switchboard.connectors"

# The built-ins, in the order the orchestrator lists them. Loaded from source when the
# distribution's entry points are missing (running from a checkout without `pip install -e`).
BUILTIN_CONNECTORS: tuple[tuple[str, str], ...] = (
    ("gmail", "connectors.gmail:connector"),
    ("plaid", "connectors.plaid:connector"),
    ("yelp", "connectors.yelp:connector"),
    ("search", "connectors.search:connector"),
)


@dataclass(frozen=True)
class Connector:
    name: str  # "gmail": settings key (SWITCHBOARD_CONNECTOR_MODES), REST path
    agent_name: str  # "GMail": the Agent's name, hence its transfer_to_<name> hand-off tool
    display_name: str  # "Gmail": what people read
    build_agent: Callable[[ConnectorSettings], Agent[ChatContext]]
    tool_descriptions: dict[str, str] = field(default_factory=dict)  # tool → "Searching Yelp"
    response_types: tuple[str, ...] = ()
    # True when each user connects their own account (OAuth, a bank link); False when the
    # connector uses the server's keys (Yelp, search) or nothing at all.
    needs_account: bool = False
    # The "Connect" card its tools answer with while the user is not connected
    # (default: a generic ``AccountNeeded``).
    account_card: Callable[[], ToolResponse] | None = None
    # What the demo account shows in GET /api/connectors (e.g. {"email": "me@example.com"}).
    demo_account: dict[str, Any] = field(default_factory=dict)

    def connect_card(self) -> ToolResponse:
        if self.account_card is not None:
            return self.account_card()
        return AccountNeeded(self.agent_name, self.name)


def _resolve(target: object, label: str) -> Connector:
    value = target() if callable(target) and not isinstance(target, Connector) else target
    if not isinstance(value, Connector):
        raise TypeError(f"{label} gave {type(value).__name__}, expected a Connector")
    return value


def _load_reference(reference: str) -> Any:
    module_name, _, attribute = reference.partition(":")
    value: Any = import_module(module_name)
    for part in attribute.split(".") if attribute else ():
        value = getattr(value, part)
    return value


def _from_entry_points(points: Iterable[EntryPoint]) -> dict[str, Connector]:
    found: dict[str, Connector] = {}
    for point in sorted(points, key=lambda p: p.name):
        try:
            connector = _resolve(point.load(), f"entry point {point.name!r} ({point.value})")
        except Exception:
            # One broken plug-in must not take the server down with it.
            logger.exception("skipping connector entry point %r (%s)", point.name, point.value)
            continue
        if connector.name in found:
            logger.warning("connector %r registered twice; keeping the first", connector.name)
            continue
        found[connector.name] = connector
    return found


def load_connectors(
    settings: ConnectorSettings, points: Iterable[EntryPoint] | None = None
) -> list[Connector]:
    """Every installed connector: the built-ins first (fixed order), then plug-ins by name.

    ``settings`` is accepted so registration can depend on configuration later; agents
    are built per settings by the orchestrator. ``points`` overrides the entry-point scan
    (tests).
    """
    del settings  # nothing in the settings changes which connectors exist yet
    found = _from_entry_points(entry_points(group=ENTRY_POINT_GROUP) if points is None else points)
    ordered: list[Connector] = []
    for name, reference in BUILTIN_CONNECTORS:
        connector = found.pop(name, None)
        if connector is None:
            try:
                connector = _resolve(_load_reference(reference), reference)
            except Exception:
                logger.exception("built-in connector %r failed to load", name)
                continue
        ordered.append(connector)
    ordered.extend(found[name] for name in sorted(found))
    return _unique_agents(ordered)


def _unique_agents(connectors: list[Connector]) -> list[Connector]:
    # Two agents with one name would share a transfer_to_<name> tool and the SDK would
    # silently pick one: keep the first (built-ins come first) and say so.
    seen: dict[str, str] = {}
    kept: list[Connector] = []
    for connector in connectors:
        key = connector.agent_name.lower()
        if key in seen:
            logger.error(
                "skipping connector %r: agent name %r is already used by %r",
                connector.name,
                connector.agent_name,
                seen[key],
            )
            continue
        seen[key] = connector.name
        kept.append(connector)
    return kept


def tool_descriptions(connectors: Iterable[Connector]) -> dict[str, str]:
    """Every tool's progress text ("Searching Yelp"), for the stream translator."""
    merged: dict[str, str] = {}
    for connector in connectors:
        merged.update(connector.tool_descriptions)
    return merged
