"""A connector's account flow: how a person connects, and forgets, their own account.

One interface for every kind of flow, so the REST API (``app.connectors_api``) and the UI
drive any connector's flow without knowing which service it is:

=================  ===================  ============================================
kind               ``start`` answers    then
=================  ===================  ============================================
``oauth``          ``Redirect``         the provider sends the browser back to
                                        ``GET /oauth/<callback_name>/callback``:
                                        ``callback`` (``connectors.oauth_flow``)
``client_widget``  ``ClientStep``       the browser runs the named widget (a bank's
                                        link), then posts its result to ``finish``
``api_key``        ``AskKey``           the person pastes a key, posted to ``finish``
                                        (``ApiKeyFlow`` validates it)
``none``           ``Connected``        nothing: connected at once
=================  ===================  ============================================

Flows run only in live mode; in demo mode the API connects at once. A flow never stores
anything: it returns ``Connected(credentials, meta)`` and the API stores it, encrypted,
under the connector's own name, so a flow can only ever write its own account. Nothing
here knows Starlette: the API hands each step a ``FlowContext`` and turns the results
into responses. A step that fails in a way the person should read raises ``FlowError``;
a ``ServiceError`` from the provider is answered as the provider's failure (502).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import httpx
from cryptography.fernet import MultiFernet
from pydantic import BaseModel, ConfigDict, Field

from connectors.accounts import live_credentials
from connectors.context import AccountLookup
from connectors.settings import ConnectorSettings

FlowKind = Literal["oauth", "client_widget", "api_key", "none"]

# What the browser reads in a connect answer; a ClientStep's data may not reuse them.
RESERVED_KEYS = frozenset({"status", "widget", "finish", "url", "connector", "label", "help"})


class FlowError(Exception):
    """A step failed; ``message`` is shown to the person as it is (never holds a secret).

    ``status``: 400 for what the person can retry, 401/403 for a flow that is not theirs.
    """

    def __init__(self, message: str, *, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


@dataclass(frozen=True)
class Cookie:
    """A cookie the answer sets (``value``) or clears (``value`` None). Always HttpOnly;
    Secure when the server was reached over https."""

    name: str
    value: str | None
    path: str
    max_age: int = 0
    same_site: Literal["lax", "strict"] = "lax"


@dataclass
class FlowContext:
    """What a flow step may use; built by the API for one request."""

    connector: str  # the connector's name, e.g. "notes"
    display_name: str  # "Notes": what people read
    user_id: str | None  # the signed-in user; None when nobody is (an OAuth callback)
    settings: ConnectorSettings
    http: httpx.AsyncClient  # the app's one outbound client
    fernet: MultiFernet  # the server's key ring: seal what the browser carries
    origin: str | None  # this server as the browser addressed it (scheme://host[:port])
    cookies: Mapping[str, str]  # the request's cookies
    accounts_of: Callable[[str], AccountLookup]  # a user's stored accounts, by user id
    cookies_out: list[Cookie] = field(default_factory=list)

    async def current_credentials(self, user_id: str | None = None) -> dict[str, Any] | None:
        """The live credentials this connector holds for the user (default: the signed-in
        one), e.g. to add a second bank to the first; None when there are none."""
        who = user_id if user_id is not None else self.user_id
        if who is None:
            return None
        return await live_credentials(self.accounts_of(who), self.connector)

    def set_cookie(self, name: str, value: str, *, path: str, max_age: int) -> None:
        self.cookies_out.append(Cookie(name, value, path, max_age))

    def clear_cookie(self, name: str, *, path: str) -> None:
        self.cookies_out.append(Cookie(name, None, path))


# ----------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Connected:
    """The account is connected: the API stores ``credentials`` (encrypted) and shows
    ``meta`` (never a secret: the address, the banks' names). ``user_id``: whose account,
    when the step had no signed-in user (an OAuth callback); ``message``: what the page
    the browser lands on says."""

    credentials: dict[str, Any]
    meta: dict[str, Any]
    user_id: str | None = None
    message: str = ""


@dataclass(frozen=True)
class Redirect:
    """Send the browser to ``url`` (the provider's sign-in page)."""

    url: str


@dataclass(frozen=True)
class ClientStep:
    """Run the client widget named ``widget`` in the browser with ``data`` (what it needs,
    e.g. a link token), then post its result to ``finish``.

    ``status`` is what the connect answer says; "client_step" unless a flow keeps an older
    documented one.
    """

    widget: str
    data: dict[str, Any]
    status: str = "client_step"

    def __post_init__(self) -> None:
        clash = RESERVED_KEYS & set(self.data)
        if clash:
            raise ValueError(f"ClientStep data may not use the keys {sorted(clash)}")


@dataclass(frozen=True)
class AskKey:
    """Ask the person for a key (``label``, with ``help`` saying where to find one)."""

    label: str
    help: str = ""


StartResult = Connected | Redirect | ClientStep | AskKey


# ----------------------------------------------------------------------------- flows


class AccountFlow:
    """The interface. Subclass it (or ``OAuthFlow``, ``ApiKeyFlow``, ``ConnectAtOnce``) and
    give an instance to ``Connector(account_flow=...)``.

    ``start`` runs on ``POST /api/connectors/{name}/connect``; ``finish`` on
    ``POST /api/connectors/{name}/finish`` with a JSON body validated as ``finish_model``
    (None: the flow has no such step); ``callback`` on the OAuth redirect back;
    ``forget`` on ``DELETE /api/connectors/{name}``, best effort (the credentials are
    deleted whatever it does).
    """

    kind: ClassVar[FlowKind] = "none"
    # The JSON body ``finish`` takes, and an example of it for error messages.
    finish_model: ClassVar[type[BaseModel] | None] = None
    finish_example: ClassVar[str] = "{}"
    # OAuth only: the callback is /oauth/<callback_name>/callback (None: the connector's name).
    callback_name: ClassVar[str | None] = None

    async def start(self, ctx: FlowContext) -> StartResult:
        raise NotImplementedError

    async def finish(self, ctx: FlowContext, body: BaseModel) -> Connected:
        raise FlowError(f"{ctx.connector} has no finish step: {self.describe_kind(ctx)}")

    async def callback(self, ctx: FlowContext, query: Mapping[str, str]) -> Connected:
        raise FlowError(f"{ctx.connector} has no sign-in callback: {self.describe_kind(ctx)}")

    async def forget(self, ctx: FlowContext, credentials: dict[str, Any]) -> None:
        """Revoke ``credentials`` at the provider. Default: nothing to revoke."""

    def describe_kind(self, ctx: FlowContext) -> str:
        """How this flow connects, for error messages."""
        connect = f"POST /api/connectors/{ctx.connector}/connect"
        return {
            "oauth": f"it connects by signing in at the provider ({connect}), which sends the "
            f"browser back to GET /oauth/{self.callback_name or ctx.connector}/callback",
            "client_widget": f"it connects through a client widget ({connect}), then "
            f"POST /api/connectors/{ctx.connector}/finish",
            "api_key": f"it connects with an API key posted to "
            f"POST /api/connectors/{ctx.connector}/finish",
            "none": f"it connects at once with {connect}",
        }[self.kind]


class ConnectAtOnce(AccountFlow):
    """Kind ``none``: a per-user account that needs no credentials (an opt-in)."""

    kind: ClassVar[FlowKind] = "none"

    async def start(self, ctx: FlowContext) -> StartResult:
        return Connected({}, {})


class ApiKeyBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    api_key: str = Field(min_length=1, max_length=4096)


class ApiKeyFlow(AccountFlow):
    """Kind ``api_key``: the person pastes a key; ``check_key`` proves it with the provider
    and returns what to store (raise ``FlowError`` for a key the provider refuses)."""

    kind: ClassVar[FlowKind] = "api_key"
    finish_model: ClassVar[type[BaseModel] | None] = ApiKeyBody
    finish_example: ClassVar[str] = '{"api_key": "…"}'
    label: ClassVar[str] = "API key"
    help: ClassVar[str] = ""

    async def start(self, ctx: FlowContext) -> StartResult:
        return AskKey(self.label, self.help)

    async def finish(self, ctx: FlowContext, body: BaseModel) -> Connected:
        if not isinstance(body, ApiKeyBody):
            raise TypeError(f"expected ApiKeyBody, got {type(body).__name__}")
        key = body.api_key.strip()
        if not key:
            raise FlowError("api_key: the key is empty; paste the whole key")
        return await self.check_key(ctx, key)

    async def check_key(self, ctx: FlowContext, key: str) -> Connected:
        raise NotImplementedError
