"""Gmail's settings: the Google OAuth client and the API's addresses.

Each option is read from its own ``SWITCHBOARD_<OPTION>`` variable (or from
``SWITCHBOARD_CONNECTOR_OPTIONS=gmail.<option>=…``).
"""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import SecretStr

from connectors.options import LIVE_REQUIRED, ConnectorOptions, HttpUrlOption


class GmailSettings(ConnectorOptions):
    connector: ClassVar[str] = "gmail"
    env_prefix: ClassVar[str | None] = "SWITCHBOARD_"

    google_client_id: Annotated[str | None, LIVE_REQUIRED] = None
    google_client_secret: Annotated[SecretStr | None, LIVE_REQUIRED] = None
    # Default: this server's own /oauth/google/callback as the browser reached it.
    google_redirect_uri: HttpUrlOption | None = None
    google_auth_url: HttpUrlOption = "https://accounts.google.com/o/oauth2/v2/auth"
    google_oauth_base_url: HttpUrlOption = "https://oauth2.googleapis.com"
    gmail_base_url: HttpUrlOption = "https://gmail.googleapis.com"
