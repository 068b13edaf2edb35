"""The Plaid connector's connect card: what its tools answer while no bank is linked (or a
bank needs signing in again)."""

from __future__ import annotations

from typing import ClassVar

from connectors.generic_renderers import register_account_card
from connectors.responses import AccountNeeded


class ConnectPlaidAccountResponse(AccountNeeded):
    response_type_name: ClassVar[str] = "connect_plaid_account"
    account_label: ClassVar[str | None] = "bank account"

    def __init__(self, agent_name: str = "Plaid", message: str | None = None) -> None:
        super().__init__(
            agent_name,
            "plaid",
            message or "Connect a bank account so I can see balances and transactions.",
            friendly_name="Connect your bank",
        )


register_account_card(ConnectPlaidAccountResponse)
