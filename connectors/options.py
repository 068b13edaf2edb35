"""A connector's own typed settings, read from ``SWITCHBOARD_CONNECTOR_OPTIONS``.

A connector declares a model and hands it to its ``Connector(options=...)``::

    class WeatherOptions(ConnectorOptions):
        connector: ClassVar[str] = "weather"
        base_url: HttpUrlOption = "https://api.open-meteo.com"
        api_key: Annotated[SecretStr | None, LIVE_REQUIRED] = None

and its tools read ``WeatherOptions.read(ctx.context.settings)``. The operator sets
``SWITCHBOARD_CONNECTOR_OPTIONS=weather.api_key=…,weather.base_url=…`` (or JSON). A model
with ``env_prefix = "SWITCHBOARD_"`` also reads each option from its own variable
(``SWITCHBOARD_API_KEY``), as the built-in connectors do for the names operators know.
The server checks the options when it registers the connector, so a misspelt option, a
value of the wrong type or a key missing in live mode is refused at start-up, naming the
variable, instead of reaching a person as an error card.
"""

from __future__ import annotations

import os
from typing import Annotated, Any, ClassVar, Self

from pydantic import AfterValidator, BaseModel, ConfigDict, SecretStr, ValidationError

from connectors.settings import ConnectorSettings

VARIABLE = "SWITCHBOARD_CONNECTOR_OPTIONS"


class LiveRequired:
    """Marks an option that must be set when the connector runs in live mode."""

    def __repr__(self) -> str:
        return "LIVE_REQUIRED"


LIVE_REQUIRED = LiveRequired()


def check_http_url(value: str) -> str:
    value = value.strip()
    if not value.startswith(("http://", "https://")) or len(value) < 10:
        raise ValueError("must be an http:// or https:// URL")
    return value.rstrip("/")


# A service's base URL: every one is configurable so that tests point clients at fakes.
HttpUrlOption = Annotated[str, AfterValidator(check_http_url)]


class ConnectorOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    connector: ClassVar[str]
    # "SWITCHBOARD_": each option is also read from SWITCHBOARD_<OPTION>; a value in
    # SWITCHBOARD_CONNECTOR_OPTIONS wins over it.
    env_prefix: ClassVar[str | None] = None

    @classmethod
    def read(cls, settings: ConnectorSettings) -> Self:
        """This connector's options (checked at start-up, so this does not fail then).

        Read once per settings object: tools call this on every call.
        """
        return settings.remembered(cls, lambda: cls.model_validate(cls._values(settings)[0]))

    @classmethod
    def problems(cls, settings: ConnectorSettings) -> list[str]:
        """What is wrong with the options for the connector's mode, naming the variable;
        never an option's value (it may be a key)."""
        values, from_env = cls._values(settings)
        try:
            options = cls.model_validate(values)
        except ValidationError as exc:
            return [cls._problem(error, from_env) for error in exc.errors(include_url=False)]
        # The explicit mode only: a remote server of the same name is refused at start-up
        # (connectors.registry), not taken for this connector in live mode.
        if settings.connector_modes.get(cls.connector) != "live":
            return []
        missing = [name for name in options.live_required() if not _is_set(getattr(options, name))]
        if not missing:
            return []
        when = (
            f"when {cls.connector} runs in live mode "
            f"(SWITCHBOARD_CONNECTOR_MODES={cls.connector}=live)"
        )
        if cls.env_prefix is not None:
            return [f"{' and '.join(map(cls.env_name, missing))} must be set {when}"]
        return [f"{VARIABLE} must set {cls.connector}.{name} {when}" for name in missing]

    def live_required(self) -> tuple[str, ...]:
        """The options live mode needs: those marked ``LIVE_REQUIRED`` (override when it
        depends on another option, e.g. which search provider is chosen)."""
        return tuple(
            name
            for name, info in type(self).model_fields.items()
            if any(isinstance(mark, LiveRequired) for mark in info.metadata)
        )

    @classmethod
    def env_name(cls, option: str) -> str:
        return f"{cls.env_prefix or ''}{option}".upper()

    @classmethod
    def _values(cls, settings: ConnectorSettings) -> tuple[dict[str, Any], set[str]]:
        """The raw values, and which options came from their own environment variable."""
        values: dict[str, Any] = {}
        if cls.env_prefix is not None:
            # Case-insensitive, as pydantic-settings reads the server's own variables.
            environ = {key.upper(): value for key, value in os.environ.items()}
            for name in cls.model_fields:
                if cls.env_name(name) in environ:
                    values[name] = environ[cls.env_name(name)]
        from_env = set(values)
        given = settings.connector_options.get(cls.connector, {})
        values.update(given)
        return values, from_env - set(given)

    @classmethod
    def _problem(cls, error: Any, from_env: set[str]) -> str:
        option = ".".join(map(str, error["loc"]))
        if error["type"] == "extra_forbidden":
            return f"{VARIABLE} sets {cls.connector}.{option}, which is not an option of {cls.connector}"
        if error["loc"] and error["loc"][0] in from_env:
            return f"{cls.env_name(str(error['loc'][0]))}: {error['msg']}"
        return f"{VARIABLE}: {cls.connector}.{option}: {error['msg']}"


def _is_set(value: object) -> bool:
    if isinstance(value, SecretStr):
        value = value.get_secret_value()
    return value is not None and (not isinstance(value, str) or bool(value.strip()))
