"""Which connectors this server serves: the installed ones, then RAP (and MCP) servers,
all in one namespace, with the settings that name connectors checked against it."""

from __future__ import annotations

from app.settings import Settings, SettingsError
from connectors.mcp.runtime import McpRuntime
from connectors.rap.runtime import RapRuntime
from connectors.registry import Registration, register_connectors


def serve_connectors(
    settings: Settings, rap: RapRuntime | None, mcp: McpRuntime | None = None
) -> Registration:
    """The connectors to serve, and those refused (for the API and the CLI).

    A broken plug-in or a remote server whose names are taken is skipped with its reason;
    a typo in the connector modes or options stops the start, since it would otherwise
    be silently ignored.
    """
    registration = register_connectors(settings)
    if rap is not None:
        registration.admit_remote(rap.connectors(), "SWITCHBOARD_RAP_TOOLS")
    if mcp is not None:
        registration.admit_remote(mcp.connectors(), "SWITCHBOARD_MCP_SERVERS")
        mcp.guard(registration.namespace)
    problems = registration.unknown_names(settings, *configured_remote_names(settings))
    if problems:
        raise SettingsError("; ".join(problems))
    return registration


def configured_remote_names(settings: Settings) -> list[str]:
    """Connector names the settings define (servers not yet discovered still count)."""
    return [server.name for server in settings.rap_tools] + list(settings.mcp_servers)
