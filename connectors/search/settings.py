"""Web search's settings: Google Programmable Search or a SearXNG instance.

Each option is read from its own ``SWITCHBOARD_<OPTION>`` variable (or from
``SWITCHBOARD_CONNECTOR_OPTIONS=search.<option>=…``).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import SecretStr

from connectors.options import ConnectorOptions, HttpUrlOption


class SearchSettings(ConnectorOptions):
    connector: ClassVar[str] = "search"
    env_prefix: ClassVar[str | None] = "SWITCHBOARD_"

    search_provider: Literal["google", "searxng"] = "google"
    google_search_api_key: SecretStr | None = None
    google_search_engine_id: str | None = None
    google_search_base_url: HttpUrlOption = "https://www.googleapis.com"
    searxng_base_url: HttpUrlOption | None = None

    def live_required(self) -> tuple[str, ...]:
        if self.search_provider == "google":
            return ("google_search_api_key", "google_search_engine_id")
        return ("searxng_base_url",)
