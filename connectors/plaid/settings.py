"""Plaid's settings: the API keys and which Plaid environment to talk to.

Each option is read from its own ``SWITCHBOARD_<OPTION>`` variable (or from
``SWITCHBOARD_CONNECTOR_OPTIONS=plaid.<option>=…``).
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import SecretStr

from connectors.options import LIVE_REQUIRED, ConnectorOptions, HttpUrlOption


class PlaidSettings(ConnectorOptions):
    connector: ClassVar[str] = "plaid"
    env_prefix: ClassVar[str | None] = "SWITCHBOARD_"

    plaid_client_id: Annotated[str | None, LIVE_REQUIRED] = None
    plaid_secret: Annotated[SecretStr | None, LIVE_REQUIRED] = None
    plaid_environment: Literal["sandbox", "development", "production"] = "sandbox"
    # Default: the environment's own host.
    plaid_base_url: HttpUrlOption | None = None
