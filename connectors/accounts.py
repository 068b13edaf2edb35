"""Is the user connected to a connector? The same answer for the REST API and the tools.

One ``connected_accounts`` row per user and connector. Its encrypted credentials and its
clear ``meta`` both carry a ``mode``:

- ``live``: the credentials are the provider's tokens (OAuth tokens, bank links); the meta
  is what the UI shows (the mailbox's address, the banks' names), never a secret.
- ``demo``: the credentials hold no secret, only ``{"mode": "demo", "connected": bool}``.

Demo connectors count as connected until the user disconnects them: a first-time user of
``make run`` chats with demo data at once, and after a disconnect sees the same "Connect"
card a live user would, and can connect again. A demo row therefore also records an
explicit disconnect. A live connector is connected only by a live row; rows of the other
mode are ignored, so switching a connector's mode never reuses stale credentials.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from connectors.context import AccountLookup, ChatContext
from connectors.registry import Connector
from connectors.responses import ToolResponse
from connectors.tooling import NeedsAccount

DEMO = "demo"
LIVE = "live"


@dataclass(frozen=True)
class ConnectionState:
    connected: bool
    account: dict[str, Any] | None  # the non-secret meta to show; None when not connected


def demo_credentials(connected: bool) -> dict[str, Any]:
    return {"mode": DEMO, "connected": connected}


def demo_meta(connector: Connector, connected: bool) -> dict[str, Any]:
    if not connected:
        return {"mode": DEMO, "connected": False}
    return {"mode": DEMO, "connected": True, **connector.demo_account}


def connection_state(
    connector: Connector, mode: Literal["demo", "live"], meta: dict[str, Any] | None
) -> ConnectionState:
    """The state shown for ``connector`` given the meta of the user's row (None: no row)."""
    if not connector.needs_account:
        return ConnectionState(True, None)  # server keys or nothing: always usable
    if mode == DEMO:
        if meta is not None and meta.get("mode") == DEMO and meta.get("connected") is False:
            return ConnectionState(False, None)
        return ConnectionState(True, {"mode": DEMO, **connector.demo_account})
    if meta is None or meta.get("mode") != LIVE:
        return ConnectionState(False, None)
    return ConnectionState(True, dict(meta))


async def demo_connected(accounts: AccountLookup | None, connector: str) -> bool:
    """False only after the user disconnected the demo connector."""
    if accounts is None:
        return True
    credentials = await accounts.get(connector)
    return not (
        credentials is not None
        and credentials.get("mode") == DEMO
        and credentials.get("connected") is False
    )


async def live_credentials(accounts: AccountLookup | None, connector: str) -> dict[str, Any] | None:
    if accounts is None:
        return None
    credentials = await accounts.get(connector)
    if credentials is None or credentials.get("mode") != LIVE:
        return None
    return credentials


async def require_connection(
    context: ChatContext, connector: str, card: ToolResponse
) -> dict[str, Any] | None:
    """The live credentials (live mode) or None (demo mode), else ``NeedsAccount(card)``."""
    if context.settings.connector_mode(connector) == LIVE:
        credentials = await live_credentials(context.accounts, connector)
        if credentials is None:
            raise NeedsAccount(card)
        return credentials
    if not await demo_connected(context.accounts, connector):
        raise NeedsAccount(card)
    return None


async def save_credentials(
    accounts: AccountLookup, connector: str, credentials: dict[str, Any]
) -> bool:
    """Replace the stored credentials, keeping the account's meta (token refresh, cursor).

    Does nothing (False) when the account is gone: a user who disconnected while a tool was
    running must not be reconnected by that tool.
    """
    meta = next(
        (account.meta for account in await accounts.list() if account.connector == connector), None
    )
    if meta is None or meta.get("mode") != credentials.get("mode"):
        return False
    await accounts.connect(connector, credentials, meta)
    return True
