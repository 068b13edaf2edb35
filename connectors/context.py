"""Per-turn context handed to every agent and tool (``RunContextWrapper[ChatContext]``)."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx

from connectors.effects import CallLedger
from connectors.settings import ConnectorSettings


class AccountLookup(Protocol):
    """What connectors need from the user's accounts (``storage.accounts.AccountRepository``).

    ``get`` gives the decrypted credentials; ``connect`` stores (replaces) them, e.g. after
    an OAuth token refresh or a sync moved its cursor; ``list`` gives each account's
    clear ``meta``; ``disconnect`` deletes the credentials.
    """

    async def get(self, connector: str) -> dict[str, Any] | None: ...

    async def connect(
        self, connector: str, credentials: dict[str, Any], meta: dict[str, Any] | None = None
    ) -> Any: ...

    async def list(self) -> list[Any]: ...

    async def disconnect(self, connector: str) -> bool: ...


@dataclass
class DemoState:
    """One user's mutable demo-backend state (sent mail, read flags, …).

    Each connector keeps its own namespace so plug-ins never collide.
    """

    user_id: str
    namespaces: dict[str, dict[str, Any]] = field(default_factory=dict)

    def namespace(self, connector: str) -> dict[str, Any]:
        return self.namespaces.setdefault(connector, {})


class DemoStore:
    """Process-wide demo state, one ``DemoState`` per user. The app holds the single instance.

    Bounded (least recently used users are forgotten) so a long-running demo server with
    many users does not grow without limit; demo state is disposable by design.
    """

    def __init__(self, max_users: int = 10_000) -> None:
        self._max_users = max_users
        self._states: OrderedDict[str, DemoState] = OrderedDict()

    def for_user(self, user_id: str) -> DemoState:
        state = self._states.get(user_id)
        if state is None:
            state = self._states[user_id] = DemoState(user_id)
            while len(self._states) > self._max_users:
                self._states.popitem(last=False)
        else:
            self._states.move_to_end(user_id)
        return state


@dataclass
class ChatContext:
    user_id: str
    chat_id: str
    turn_id: str
    settings: ConnectorSettings
    demo: DemoState
    # The user's connected accounts. Live connectors read their credentials here; demo
    # connectors only check that the user has not disconnected them. None: all connected.
    accounts: AccountLookup | None = None
    # The app's shared outbound client (live mode); None outside a running app.
    http: httpx.AsyncClient | None = None
    # This turn's calls that ask for approval: their effects, decisions and runs.
    calls: CallLedger = field(default_factory=CallLedger)
