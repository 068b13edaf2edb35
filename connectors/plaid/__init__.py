"""Plaid (banking) connector."""

from __future__ import annotations

from connectors.plaid.agent import build_agent
from connectors.plaid.flow import flow
from connectors.plaid.offline import HINTS as OFFLINE_HINTS
from connectors.plaid.responses import ConnectPlaidAccountResponse
from connectors.plaid.settings import PlaidSettings
from connectors.plaid.tools import AGENT_NAME, CONNECTOR, RESPONSE_TYPES, TOOL_DESCRIPTIONS
from connectors.registry import Connector

PLAID_LINK = "https://cdn.plaid.com"

connector = Connector(
    name=CONNECTOR,
    agent_name=AGENT_NAME,
    display_name="Plaid",
    build_agent=build_agent,
    tool_descriptions=TOOL_DESCRIPTIONS,
    response_types=RESPONSE_TYPES,
    offline=OFFLINE_HINTS,
    options=PlaidSettings,
    order=20,
    needs_account=True,
    account_card=ConnectPlaidAccountResponse,
    account_flow=flow,
    demo_account={"institutions": ["Chase", "Ally Bank"]},
    icon="bank",
    # Plaid Link (card.js loads it for a live connection) is a script that opens a frame.
    csp={"script-src": (PLAID_LINK,), "frame-src": (PLAID_LINK,)},
)

__all__ = ["connector"]
