"""Plug-in connectors that ship their own UI card (``card.js``, ``card.css`` beside the
package's ``__init__.py``), installed as real distributions on ``sys.path``, as pip would
leave them; for the card tests (served assets, the page's policy, the browser).

Each plug-in is a "tickets"-style connector: ``show_<name>_ticket`` answers its own
response type (``<name>_ticket``), ``close_<name>_ticket`` is a write that needs approval.
"""

from __future__ import annotations

import importlib
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ENTRY_POINT_GROUP = "switchboard.connectors"

PACKAGE = '''
from typing import Any

from agents import Agent

from connectors.registry import Connector
from connectors.responses import ToolResponse
from connectors.tooling import connector_tool

AGENT = {agent!r}


@connector_tool(agent_name=AGENT, name="show_{name}_ticket", timeout=5)
async def show_ticket(ticket_id: str) -> ToolResponse:
    """Show one ticket.

    Args:
        ticket_id: The ticket's id.
    """
    return ToolResponse(
        "{name}_ticket",
        AGENT,
        "Ticket " + ticket_id,
        {{"id": ticket_id, "status": "open", "title": "Printer on fire"}},
        display_as=[{{"type": "text", "content": "Ticket " + ticket_id + ": Printer on fire"}}],
    )


@connector_tool(agent_name=AGENT, name="close_{name}_ticket", side_effect=True, timeout=5)
async def close_ticket(ticket_id: str, comment: str) -> ToolResponse:
    """Close a ticket.

    Args:
        ticket_id: The ticket's id.
        comment: Why it is closed.
    """
    return ToolResponse("text", AGENT, "Closed", "closed " + ticket_id)


def build_agent(settings: Any) -> Agent[Any]:
    return Agent(name=AGENT, handoff_description="Tickets", tools=[show_ticket, close_ticket])


connector = Connector(
    name={name!r},
    agent_name=AGENT,
    display_name={agent!r},
    build_agent=build_agent,
    tool_descriptions={{
        "show_{name}_ticket": "Showing a ticket",
        "close_{name}_ticket": "Closing a ticket",
    }},
    response_types=("{name}_ticket", "text", "error"),
    icon={icon!r},
    csp={csp!r},
)
'''


@dataclass(frozen=True)
class CardPlugin:
    name: str  # the connector's name; its package is switchboard_<name>
    agent: str
    package: Path

    @property
    def module(self) -> str:
        return f"switchboard_{self.name}"

    def tools(self) -> list[Any]:
        """The plug-in's two tools (for a scripted model), from the installed package."""
        loaded = importlib.import_module(self.module)
        return [loaded.show_ticket, loaded.close_ticket]


def install_card_plugin(
    site: Path,
    name: str,
    *,
    card_js: str | None = None,
    card_css: str | None = None,
    icon: str | None = None,
    csp: dict[str, tuple[str, ...]] | None = None,
    version: str = "1.0",
) -> CardPlugin:
    """Install plug-in ``name`` into ``site`` (a folder on ``sys.path``): a package with
    the card files given, and its ``.dist-info`` with the entry point."""
    agent = name.title()
    package = site / f"switchboard_{name}"
    package.mkdir()
    source = PACKAGE.format(name=name, agent=agent, icon=icon, csp=csp or {})
    (package / "__init__.py").write_text(textwrap.dedent(source))
    if card_js is not None:
        (package / "card.js").write_text(textwrap.dedent(card_js))
    if card_css is not None:
        (package / "card.css").write_text(textwrap.dedent(card_css))
    info = site / f"switchboard_{name}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: switchboard-{name}\nVersion: {version}\n"
    )
    (info / "entry_points.txt").write_text(
        f"[{ENTRY_POINT_GROUP}]\n{name} = switchboard_{name}:connector\n"
    )
    importlib.invalidate_caches()  # the path finders cache directory listings
    return CardPlugin(name, agent, package)


def forget(*plugins: CardPlugin) -> None:
    """Unload the plug-ins' modules (their folders go with the test's tmp_path)."""
    for plugin in plugins:
        sys.modules.pop(plugin.module, None)
