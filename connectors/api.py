"""The plug-in API: everything a connector imports from Switchboard, in one module.

A connector package writes ``from connectors.api import connector_tool, ChatContext, …``
and nothing else from ``connectors`` (its tests add the contract kit, ``connectors.testing``).
The modules behind these names are free to move; these names are kept, and a name leaves
this list only with a CHANGELOG entry. ``tests/unit/test_plugin_api.py`` pins the list.

What each group is for (docs/connectors.md walks through all of it):

- tools: ``connector_tool`` makes an async (or ``blocking=True``) function a tool;
  ``ToolError`` is the one way to fail with a message for the model and the person;
  ``NeedsAccount`` shows a "Connect" card from anywhere under a tool.
- results: ``ToolResponse`` and its kinds (text, JSON, a file, a link, an error, a window
  or tab to open, an account to connect).
- the turn: ``ChatContext``, what a tool is called with (``ctx.context``).
- side effects: an effect resolver returns an ``Effect`` (who receives, what is paid) that
  the person approves; the tool runs exactly that one, read back with ``effect_of(ctx)``.
- registration and settings: ``Connector``; ``ConnectorSettings`` and ``ConnectorOptions``
  with ``LIVE_REQUIRED`` and ``HttpUrlOption`` for a connector's own settings.
- the service's HTTP API: ``ServiceHttp`` (timeouts, retries, redaction), ``read_json``,
  ``shared_client``; ``ServiceError`` and ``RetryPolicy``.
- accounts: ``ApiKeyFlow``, ``OAuthFlow`` or ``ConnectAtOnce``, built on ``AccountFlow``
  with its steps (``AskKey``, ``ClientStep``, ``Redirect``, ``Connected``) and
  ``FlowContext`` / ``FlowError``.
- the offline demo model: ``OfflineHints``, ``ToolHints``, ``Clause``, ``Decline``.
"""

from connectors.account_flow import (
    AccountFlow,
    ApiKeyFlow,
    AskKey,
    ClientStep,
    ConnectAtOnce,
    Connected,
    FlowContext,
    FlowError,
    Redirect,
)
from connectors.context import ChatContext
from connectors.effects import Effect, effect_of
from connectors.oauth_flow import OAuthFlow
from connectors.offline_hints import Clause, Decline, OfflineHints, ToolHints
from connectors.options import LIVE_REQUIRED, ConnectorOptions, HttpUrlOption
from connectors.registry import Connector
from connectors.responses import (
    AccountNeeded,
    ErrorResponse,
    FileResponse,
    JsonResponse,
    LinkResponse,
    OpenTabResponse,
    OpenWindowResponse,
    TextResponse,
    ToolResponse,
)
from connectors.service_http import RetryPolicy, ServiceError, ServiceHttp, read_json, shared_client
from connectors.settings import ConnectorSettings
from connectors.tooling import NeedsAccount, ToolError, connector_tool

__all__ = [
    "LIVE_REQUIRED",
    "AccountFlow",
    "AccountNeeded",
    "ApiKeyFlow",
    "AskKey",
    "ChatContext",
    "Clause",
    "ClientStep",
    "ConnectAtOnce",
    "Connected",
    "Connector",
    "ConnectorOptions",
    "ConnectorSettings",
    "Decline",
    "Effect",
    "ErrorResponse",
    "FileResponse",
    "FlowContext",
    "FlowError",
    "HttpUrlOption",
    "JsonResponse",
    "LinkResponse",
    "NeedsAccount",
    "OAuthFlow",
    "OfflineHints",
    "OpenTabResponse",
    "OpenWindowResponse",
    "Redirect",
    "RetryPolicy",
    "ServiceError",
    "ServiceHttp",
    "TextResponse",
    "ToolError",
    "ToolHints",
    "ToolResponse",
    "connector_tool",
    "effect_of",
    "read_json",
    "shared_client",
]
