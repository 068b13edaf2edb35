"""Connecting a bank: Plaid Link, a client widget.

``start`` creates a Link token for the browser, which runs Plaid Link (the ``plaid_link``
widget of the UI) and posts Link's ``public_token`` and institution to ``finish``; that
exchanges it for an item. Disconnecting removes every item at Plaid.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from connectors.account_flow import (
    AccountFlow,
    ClientStep,
    Connected,
    FlowContext,
    FlowError,
    FlowKind,
    StartResult,
)
from connectors.plaid import client as plaid

WIDGET = "plaid_link"


class Institution(BaseModel):
    model_config = ConfigDict(extra="ignore")
    name: str | None = Field(None, max_length=200)
    institution_id: str | None = Field(None, max_length=100)


class ExchangeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    public_token: str = Field(min_length=1, max_length=500)
    institution: Institution | None = None


class PlaidLink(AccountFlow):
    kind: ClassVar[FlowKind] = "client_widget"
    finish_model: ClassVar[type[BaseModel] | None] = ExchangeRequest
    finish_example: ClassVar[str] = '{"public_token": "public-…", "institution": {"name": …}}'

    async def start(self, ctx: FlowContext) -> StartResult:
        if ctx.user_id is None:
            raise FlowError("sign in to Switchboard before linking a bank", status=401)
        token = await plaid.api_for(ctx.http, ctx.settings).create_link_token(
            ctx.user_id, "Switchboard"
        )
        # "link_token": the status this answer had before flows were generic (docs/protocol.md).
        return ClientStep(
            WIDGET,
            {"link_token": token.get("link_token"), "expiration": token.get("expiration")},
            status="link_token",
        )

    async def finish(self, ctx: FlowContext, body: BaseModel) -> Connected:
        if not isinstance(body, ExchangeRequest):
            raise TypeError(f"expected ExchangeRequest, got {type(body).__name__}")
        institution = body.institution.model_dump() if body.institution else {}
        try:
            credentials = await plaid.add_item(
                plaid.api_for(ctx.http, ctx.settings),
                await ctx.current_credentials(),
                body.public_token.strip(),
                institution,
            )
        except plaid.PlaidError as exc:
            if exc.error_code != "INVALID_PUBLIC_TOKEN":
                raise
            raise FlowError(
                "Plaid did not accept this public token (expired or already used); open "
                "Plaid Link again"
            ) from None
        return Connected(credentials, plaid.plaid_meta(credentials))

    async def forget(self, ctx: FlowContext, credentials: dict[str, Any]) -> None:
        await plaid.remove_items(plaid.api_for(ctx.http, ctx.settings), credentials)


flow = PlaidLink()
