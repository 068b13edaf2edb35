"""Gmail connector."""

from __future__ import annotations

from connectors.gmail.agent import build_agent
from connectors.gmail.demo_mailbox import ME
from connectors.gmail.flow import flow
from connectors.gmail.offline import HINTS as OFFLINE_HINTS
from connectors.gmail.responses import GoogleAccountNeededResponse
from connectors.gmail.settings import GmailSettings
from connectors.gmail.tools import AGENT_NAME, CONNECTOR, RESPONSE_TYPES, TOOL_DESCRIPTIONS
from connectors.registry import Connector

connector = Connector(
    name=CONNECTOR,
    agent_name=AGENT_NAME,
    display_name="Gmail",
    build_agent=build_agent,
    tool_descriptions=TOOL_DESCRIPTIONS,
    response_types=RESPONSE_TYPES,
    offline=OFFLINE_HINTS,
    options=GmailSettings,
    order=10,
    needs_account=True,
    account_card=GoogleAccountNeededResponse,
    account_flow=flow,
    demo_account={"email": ME},
    icon="mail",
)

__all__ = ["connector"]
