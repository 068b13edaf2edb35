"""The Gmail connector's connect cards: what its tools answer while no Google account is
connected (the UI shows a "Connect Google" button; the model reads a connect card)."""

from __future__ import annotations

from typing import ClassVar

from connectors.generic_renderers import register_account_card
from connectors.responses import AccountNeeded


class GoogleAccountNeededResponse(AccountNeeded):
    response_type_name: ClassVar[str] = "google_account_needed"
    account_label: ClassVar[str | None] = "Google account"

    def __init__(self, agent_name: str = "GMail", message: str | None = None) -> None:
        super().__init__(
            agent_name,
            "gmail",
            message or "Connect your Google account so I can read and send email.",
            friendly_name="Connect your Google account",
        )


class ConnectGoogleAccount(AccountNeeded):
    response_type_name: ClassVar[str] = "connect_google_account"
    account_label: ClassVar[str | None] = "Google account"

    def __init__(self, agent_name: str = "GMail", message: str | None = None) -> None:
        super().__init__(
            agent_name,
            "gmail",
            message or "Connect your Google account to continue.",
            friendly_name="Connect your Google account",
        )


register_account_card(GoogleAccountNeededResponse, ConnectGoogleAccount)
