"""A connector's own typed settings, read from ``SWITCHBOARD_CONNECTOR_OPTIONS``.

A plug-in declares a model and hands it to its ``Connector(options=...)``::

    class WeatherOptions(ConnectorOptions):
        connector: ClassVar[str] = "weather"
        base_url: str = "https://api.open-meteo.com"
        api_key: Annotated[SecretStr | None, LIVE_REQUIRED] = None

and its tools read ``WeatherOptions.read(ctx.context.settings)``. The operator sets
``SWITCHBOARD_CONNECTOR_OPTIONS=weather.api_key=…,weather.base_url=…`` (or JSON). The
server checks the options when it registers the connector, so a misspelt option, a value
of the wrong type or a key missing in live mode is refused at start-up, naming the
variable, instead of reaching a person as an error card.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, SecretStr, ValidationError

from connectors.settings import ConnectorSettings

VARIABLE = "SWITCHBOARD_CONNECTOR_OPTIONS"


class LiveRequired:
    """Marks an option that must be set when the connector runs in live mode."""

    def __repr__(self) -> str:
        return "LIVE_REQUIRED"


LIVE_REQUIRED = LiveRequired()


class ConnectorOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    connector: ClassVar[str]

    @classmethod
    def read(cls, settings: ConnectorSettings) -> Self:
        """This connector's options (checked at start-up, so this does not fail then)."""
        return cls.model_validate(settings.connector_options.get(cls.connector, {}))

    @classmethod
    def problems(cls, settings: ConnectorSettings) -> list[str]:
        """What is wrong with the options for the connector's mode, naming the variable;
        never an option's value (it may be a key)."""
        try:
            options = cls.read(settings)
        except ValidationError as exc:
            return [_problem(cls.connector, error) for error in exc.errors(include_url=False)]
        if settings.connector_mode(cls.connector) != "live":
            return []
        return [
            f"{VARIABLE} must set {cls.connector}.{name} when {cls.connector} runs in live "
            f"mode (SWITCHBOARD_CONNECTOR_MODES={cls.connector}=live)"
            for name, info in cls.model_fields.items()
            if any(isinstance(mark, LiveRequired) for mark in info.metadata)
            and not _is_set(getattr(options, name))
        ]


def _problem(connector: str, error: Any) -> str:
    option = ".".join(map(str, error["loc"]))
    if error["type"] == "extra_forbidden":
        return f"{VARIABLE} sets {connector}.{option}, which is not an option of {connector}"
    return f"{VARIABLE}: {connector}.{option}: {error['msg']}"


def _is_set(value: object) -> bool:
    if isinstance(value, SecretStr):
        value = value.get_secret_value()
    return value is not None and (not isinstance(value, str) or bool(value.strip()))
