"""Yelp's settings: the server's Fusion API key and where "near me" is without a location.

Each option is read from its own ``SWITCHBOARD_<OPTION>`` variable (or from
``SWITCHBOARD_CONNECTOR_OPTIONS=yelp.<option>=…``).
"""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import SecretStr

from connectors.options import LIVE_REQUIRED, ConnectorOptions, HttpUrlOption


class YelpSettings(ConnectorOptions):
    connector: ClassVar[str] = "yelp"
    env_prefix: ClassVar[str | None] = "SWITCHBOARD_"

    yelp_api_key: Annotated[SecretStr | None, LIVE_REQUIRED] = None
    yelp_base_url: HttpUrlOption = "https://api.yelp.com"
    yelp_default_location: str | None = None
