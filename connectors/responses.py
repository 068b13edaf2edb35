"""The ToolResponse family: what every connector tool returns (docs/connectors.md).

Tools return ``SomeResponse(...).to_dict()`` so the value is plain JSON for the Agents SDK,
the socket and chat storage alike. Pure: no I/O.

Validation happens once, when a response is built (``__post_init__``):

- ``response_type``, ``agent_name``, ``friendly_name``: non-empty strings;
  ``display_response``: a bool; ``error_message``: a string or None.
- ``response``: a dict, list or str. ``debug_info``: a dict or None.
- ``display_as``: a list of ``{"type": str, "content": ...}`` render hints (docs/rap.md;
  ``text`` and ``markdown`` content must be a string).
- ``content_chunks``: a list of citations ``{"id": str | int, "title": str,
  "url": str | None, "snippet": str}`` (docs/connectors.md).
- every one of ``response``, ``display_as``, ``content_chunks`` and ``debug_info`` must be
  strict JSON (dicts with string keys, lists/tuples, str, int, finite float, bool, None),
  so that what is persisted is exactly what is read back.

Wrong types raise ``TypeError``, missing keys or empty names raise ``ValueError``; every
message names the field (and the path inside it), e.g.
``ToolResponse.response['items'][2] is not JSON-serialisable (set)``.
"""

from __future__ import annotations

import base64
import math
from dataclasses import dataclass, fields
from typing import Any, ClassVar

JSONPayload = dict[str, Any] | list[Any] | str

# The ToolResponse keys (docs/connectors.md), always present in ``to_dict()``, in this order.
CORE_KEYS = ("response_type", "agent_name", "friendly_name", "response", "display_response")
# Present in ``to_dict()`` only when set (not None); ``debug_info`` only with include_debug.
OPTIONAL_KEYS = ("display_as", "content_chunks", "error_message")

# display_as segment types whose content must be a string.
TEXT_SEGMENT_TYPES = frozenset({"text", "markdown"})
CHUNK_KEYS = ("id", "title", "url", "snippet")

_MAX_JSON_DEPTH = 100


def _find_non_json(value: object, path: str, active: set[int], depth: int = 0) -> str | None:
    """Describe the first part of ``value`` that is not strict JSON, or None if it all is."""
    if value is None or isinstance(value, str | bool | int):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{path} is {value!r}, which JSON cannot hold"
    if not isinstance(value, dict | list | tuple):
        return f"{path} is not JSON-serialisable ({type(value).__name__})"
    if depth >= _MAX_JSON_DEPTH:
        return f"{path} is nested more than {_MAX_JSON_DEPTH} levels deep"
    if id(value) in active:
        return f"{path} contains a circular reference"
    active.add(id(value))
    try:
        if isinstance(value, dict):
            for key, item in value.items():
                if not isinstance(key, str):
                    return f"{path} has a non-string key {key!r} ({type(key).__name__})"
                problem = _find_non_json(item, f"{path}[{key!r}]", active, depth + 1)
                if problem:
                    return problem
        else:
            for index, item in enumerate(value):
                problem = _find_non_json(item, f"{path}[{index}]", active, depth + 1)
                if problem:
                    return problem
    finally:
        active.discard(id(value))
    return None


def _check_json(name: str, value: object) -> None:
    problem = _find_non_json(value, f"ToolResponse.{name}", set())
    if problem:
        raise TypeError(problem)


def _check_display_as(segments: object) -> None:
    if segments is None:
        return
    if not isinstance(segments, list):
        raise TypeError(
            "ToolResponse.display_as must be a list of {type, content} segments, "
            f"got {type(segments).__name__}"
        )
    for index, segment in enumerate(segments):
        where = f"ToolResponse.display_as[{index}]"
        if not isinstance(segment, dict):
            raise TypeError(
                f"{where} must be a dict with 'type' and 'content', got {type(segment).__name__}"
            )
        if "type" not in segment:
            raise ValueError(f"{where} is missing 'type'")
        if not isinstance(segment["type"], str):
            raise TypeError(
                f"{where}['type'] must be a string, got {type(segment['type']).__name__}"
            )
        if not segment["type"]:
            raise ValueError(f"{where}['type'] must not be empty")
        if "content" not in segment:
            raise ValueError(f"{where} is missing 'content'")
        if segment["type"] in TEXT_SEGMENT_TYPES and not isinstance(segment["content"], str):
            raise TypeError(
                f"{where}['content'] must be a string for a {segment['type']!r} "
                f"segment, got {type(segment['content']).__name__}"
            )


def _check_content_chunks(chunks: object) -> None:
    if chunks is None:
        return
    if not isinstance(chunks, list):
        raise TypeError(
            "ToolResponse.content_chunks must be a list of "
            f"{{id, title, url, snippet}} dicts, got {type(chunks).__name__}"
        )
    for index, chunk in enumerate(chunks):
        where = f"ToolResponse.content_chunks[{index}]"
        if not isinstance(chunk, dict):
            raise TypeError(
                f"{where} must be a dict with {', '.join(CHUNK_KEYS)}, got {type(chunk).__name__}"
            )
        missing = [key for key in CHUNK_KEYS if key not in chunk]
        if missing:
            raise ValueError(f"{where} is missing {', '.join(repr(k) for k in missing)}")
        chunk_id = chunk["id"]
        if isinstance(chunk_id, bool) or not isinstance(chunk_id, str | int):
            raise TypeError(f"{where}['id'] must be a string or int, got {type(chunk_id).__name__}")
        for key in ("title", "snippet"):
            if not isinstance(chunk[key], str):
                raise TypeError(
                    f"{where}[{key!r}] must be a string, got {type(chunk[key]).__name__}"
                )
        if chunk["url"] is not None and not isinstance(chunk["url"], str):
            raise TypeError(
                f"{where}['url'] must be a string or None, got {type(chunk['url']).__name__}"
            )


@dataclass
class ToolResponse:
    response_type: str
    agent_name: str
    friendly_name: str
    response: JSONPayload
    display_response: bool = True
    display_as: list[dict[str, Any]] | None = None
    content_chunks: list[dict[str, Any]] | None = None
    debug_info: dict[str, Any] | None = None
    error_message: str | None = None

    def __post_init__(self) -> None:
        for name in ("response_type", "agent_name", "friendly_name"):
            value = getattr(self, name)
            if not isinstance(value, str):
                raise TypeError(
                    f"ToolResponse.{name} must be a non-empty string, got {type(value).__name__}"
                )
            if not value:
                raise ValueError(f"ToolResponse.{name} must be a non-empty string")
        if not isinstance(self.display_response, bool):
            raise TypeError(
                "ToolResponse.display_response must be a bool, "
                f"got {type(self.display_response).__name__}"
            )
        if not isinstance(self.response, dict | list | str):
            raise TypeError(
                "ToolResponse.response must be a dict, list or str, "
                f"got {type(self.response).__name__}"
            )
        if self.debug_info is not None and not isinstance(self.debug_info, dict):
            raise TypeError(
                "ToolResponse.debug_info must be a dict or None, "
                f"got {type(self.debug_info).__name__}"
            )
        if self.error_message is not None and not isinstance(self.error_message, str):
            raise TypeError(
                "ToolResponse.error_message must be a string or None, "
                f"got {type(self.error_message).__name__}"
            )
        _check_display_as(self.display_as)
        _check_content_chunks(self.content_chunks)
        for name in ("response", "display_as", "content_chunks", "debug_info"):
            _check_json(name, getattr(self, name))

    def to_dict(self, *, include_debug: bool = False) -> dict[str, Any]:
        """The wire/storage form: the seed-000 keys, then the optional keys that are set.

        ``debug_info`` is added only with ``include_debug=True`` (persisted, never sent on
        the socket). Values are not copied.
        """
        data: dict[str, Any] = {key: getattr(self, key) for key in CORE_KEYS}
        for key in OPTIONAL_KEYS:
            value = getattr(self, key)
            if value is not None:
                data[key] = value
        if include_debug and self.debug_info is not None:
            data["debug_info"] = self.debug_info
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolResponse:
        """Rebuild a response from ``to_dict()`` output (with or without debug_info).

        Returns the built-in subclass registered for ``data["response_type"]`` (e.g.
        ``ErrorResponse`` for ``"error"``), else a plain ``ToolResponse``, so
        ``from_dict(r.to_dict(include_debug=True)) == r`` for every built-in response.
        Unknown keys are ignored; ``display_response`` defaults to True. Raises
        ``TypeError``/``ValueError`` (see the module docstring) for anything invalid.
        """
        if not isinstance(data, dict):
            raise TypeError(f"expected a ToolResponse dict, got {type(data).__name__}")
        missing = [key for key in CORE_KEYS if key not in data and key != "display_response"]
        if missing:
            raise ValueError(f"not a ToolResponse dict: missing {', '.join(missing)}")
        known = {f.name for f in fields(ToolResponse)}
        kwargs = {key: value for key, value in data.items() if key in known}
        target = (
            RESPONSE_CLASSES.get(data["response_type"], ToolResponse)
            if isinstance(data["response_type"], str)
            else ToolResponse
        )
        instance = object.__new__(target)
        # The subclasses' own __init__ take convenience arguments; the dataclass __init__
        # of ToolResponse sets every field and runs the validation.
        ToolResponse.__init__(instance, **kwargs)
        return instance

    @staticmethod
    def is_tool_response(value: object) -> bool:
        """True for a dict with the required seed-000 keys (names as strings)."""
        return (
            isinstance(value, dict)
            and all(
                isinstance(value.get(key), str)
                for key in ("response_type", "agent_name", "friendly_name")
            )
            and "response" in value
        )


@dataclass(init=False)
class AccountNeeded(ToolResponse):
    """The user must connect an account for ``connector`` before the tool can run."""

    response_type_name: ClassVar[str] = "account_needed"

    def __init__(
        self,
        agent_name: str,
        connector: str,
        message: str | None = None,
        friendly_name: str | None = None,
    ) -> None:
        super().__init__(
            response_type=self.response_type_name,
            agent_name=agent_name,
            friendly_name=friendly_name or f"Connect your {agent_name} account",
            response={
                "connector": connector,
                "message": message or f"Connect your {agent_name} account to continue.",
            },
        )


@dataclass(init=False)
class GoogleAccountNeededResponse(AccountNeeded):
    response_type_name: ClassVar[str] = "google_account_needed"

    def __init__(self, agent_name: str = "GMail", message: str | None = None) -> None:
        super().__init__(
            agent_name,
            "gmail",
            message or "Connect your Google account so I can read and send email.",
            friendly_name="Connect your Google account",
        )


@dataclass(init=False)
class ConnectGoogleAccount(AccountNeeded):
    response_type_name: ClassVar[str] = "connect_google_account"

    def __init__(self, agent_name: str = "GMail", message: str | None = None) -> None:
        super().__init__(
            agent_name,
            "gmail",
            message or "Connect your Google account to continue.",
            friendly_name="Connect your Google account",
        )


@dataclass(init=False)
class ConnectPlaidAccountResponse(AccountNeeded):
    response_type_name: ClassVar[str] = "connect_plaid_account"

    def __init__(self, agent_name: str = "Plaid", message: str | None = None) -> None:
        super().__init__(
            agent_name,
            "plaid",
            message or "Connect a bank account so I can see balances and transactions.",
            friendly_name="Connect your bank",
        )


@dataclass(init=False)
class OpenWindowResponse(ToolResponse):
    response_type_name: ClassVar[str] = "open_window"

    def __init__(self, agent_name: str, url: str, friendly_name: str | None = None) -> None:
        if not isinstance(url, str) or not url:
            raise TypeError(f"{type(self).__name__} url must be a non-empty string")
        super().__init__(
            response_type=self.response_type_name,
            agent_name=agent_name,
            friendly_name=friendly_name or f"Open {url}",
            response={"url": url},
        )


@dataclass(init=False)
class OpenTabResponse(OpenWindowResponse):
    response_type_name: ClassVar[str] = "open_tab"


@dataclass(init=False)
class ErrorResponse(ToolResponse):
    """A failed tool call: the model sees ``Error: <message>``, the UI shows an error card."""

    response_type_name: ClassVar[str] = "error"

    def __init__(
        self,
        agent_name: str,
        message: str,
        friendly_name: str | None = None,
        debug_info: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(
            response_type=self.response_type_name,
            agent_name=agent_name,
            friendly_name=friendly_name or f"{agent_name} error",
            response=message,
            error_message=message,
            debug_info=debug_info,
        )


# Generic kinds (docs/connectors.md): shapes a connector can return without a response_type of its own.


@dataclass(init=False)
class TextResponse(ToolResponse):
    response_type_name: ClassVar[str] = "text"

    def __init__(
        self,
        agent_name: str,
        text: str,
        friendly_name: str | None = None,
        display_response: bool = True,
    ) -> None:
        super().__init__(
            response_type=self.response_type_name,
            agent_name=agent_name,
            friendly_name=friendly_name or agent_name,
            response=text,
            display_response=display_response,
        )


@dataclass(init=False)
class JsonResponse(ToolResponse):
    response_type_name: ClassVar[str] = "json"

    def __init__(
        self,
        agent_name: str,
        data: dict[str, Any] | list[Any],
        friendly_name: str | None = None,
        display_response: bool = True,
    ) -> None:
        if not isinstance(data, dict | list):
            raise TypeError(f"JsonResponse data must be a dict or list, got {type(data).__name__}")
        super().__init__(
            response_type=self.response_type_name,
            agent_name=agent_name,
            friendly_name=friendly_name or agent_name,
            response=data,
            display_response=display_response,
        )


@dataclass(init=False)
class FileResponse(ToolResponse):
    """A file, inline (bytes, stored base64 with its ``size``) or by URL."""

    response_type_name: ClassVar[str] = "file"

    def __init__(
        self,
        agent_name: str,
        name: str,
        mime_type: str,
        *,
        data: bytes | None = None,
        url: str | None = None,
        friendly_name: str | None = None,
    ) -> None:
        if (data is None) == (url is None):
            raise ValueError("FileResponse needs exactly one of data or url")
        for label, value in (("name", name), ("mime_type", mime_type)):
            if not isinstance(value, str) or not value:
                raise TypeError(f"FileResponse {label} must be a non-empty string")
        payload: dict[str, Any] = {"name": name, "mime_type": mime_type}
        if data is not None:
            if not isinstance(data, bytes | bytearray | memoryview):
                raise TypeError(f"FileResponse data must be bytes, got {type(data).__name__}")
            raw = bytes(data)
            payload["size"] = len(raw)
            payload["data_base64"] = base64.b64encode(raw).decode("ascii")
        else:
            if not isinstance(url, str) or not url:
                raise TypeError("FileResponse url must be a non-empty string")
            payload["url"] = url
        super().__init__(
            response_type=self.response_type_name,
            agent_name=agent_name,
            friendly_name=friendly_name or name,
            response=payload,
        )


@dataclass(init=False)
class LinkResponse(ToolResponse):
    response_type_name: ClassVar[str] = "link"

    def __init__(
        self,
        agent_name: str,
        url: str,
        title: str | None = None,
        description: str | None = None,
        friendly_name: str | None = None,
    ) -> None:
        payload: dict[str, Any] = {"url": url, "title": title or url}
        if description:
            payload["description"] = description
        super().__init__(
            response_type=self.response_type_name,
            agent_name=agent_name,
            friendly_name=friendly_name or (title or url),
            response=payload,
        )


#: response_type -> the built-in subclass ``ToolResponse.from_dict`` rebuilds.
RESPONSE_CLASSES: dict[str, type[ToolResponse]] = {
    cls.response_type_name: cls
    for cls in (
        AccountNeeded,
        GoogleAccountNeededResponse,
        ConnectGoogleAccount,
        ConnectPlaidAccountResponse,
        OpenWindowResponse,
        OpenTabResponse,
        ErrorResponse,
        TextResponse,
        JsonResponse,
        FileResponse,
        LinkResponse,
    )
}
