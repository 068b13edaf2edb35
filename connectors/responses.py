"""The ToolResponse family: what every connector tool returns (docs/connectors.md).

Tools return ``SomeResponse(...)`` (or its ``to_dict()``) so the value is plain JSON for
the Agents SDK, the socket and chat storage alike. Pure: no I/O.

``ToolResponse`` is the schema of ``wire.tool_response`` (the rules, and the
``ValidationError`` a broken one raises, are described there) with the constructors
connectors use: positional fields, and one subclass per built-in ``response_type`` whose
arguments are what that kind needs. A response is validated once, when it is built.
"""

from __future__ import annotations

import base64
from typing import Any, ClassVar

from pydantic import ValidationError

from wire.tool_response import (
    CORE_KEYS,
    DISPLAY_TYPES,
    OPTIONAL_KEYS,
    ContentChunk,
    DisplayHint,
    ToolResponseData,
    is_web_url,
)

__all__ = [
    "CORE_KEYS",
    "DISPLAY_TYPES",
    "OPTIONAL_KEYS",
    "RESPONSE_CLASSES",
    "AccountNeeded",
    "DisplayHint",
    "ErrorResponse",
    "FileResponse",
    "JsonResponse",
    "LinkResponse",
    "OpenTabResponse",
    "OpenWindowResponse",
    "TextResponse",
    "ToolResponse",
    "ToolResponseData",
    "describe_problems",
    "is_web_url",
    "register_response_class",
]

JSONPayload = dict[str, Any] | list[Any] | str

_FIELDS = frozenset(ToolResponseData.model_fields)


class ToolResponse(ToolResponseData):
    """``ToolResponse(response_type, agent_name, friendly_name, response, ...)``."""

    def __init__(
        self,
        response_type: str,
        agent_name: str,
        friendly_name: str,
        response: JSONPayload,
        display_response: bool = True,
        display_as: list[DisplayHint] | list[dict[str, Any]] | None = None,
        content_chunks: list[ContentChunk] | list[dict[str, Any]] | None = None,
        debug_info: dict[str, Any] | None = None,
        error_message: str | None = None,
    ) -> None:
        fields: dict[str, Any] = {
            "response_type": response_type,
            "agent_name": agent_name,
            "friendly_name": friendly_name,
            "response": response,
            "display_response": display_response,
            "display_as": display_as,
            "content_chunks": content_chunks,
            "debug_info": debug_info,
            "error_message": error_message,
        }
        super().__init__(**fields)

    def to_dict(self, *, include_debug: bool = False) -> dict[str, Any]:
        """The wire/storage form: the seed-000 keys, then the optional keys that are set.

        ``debug_info`` is added only with ``include_debug=True`` (persisted, never sent on
        the socket). The values are the validated ones, not copied again.
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
        ``TypeError`` for a non-dict, ``ValidationError`` for anything invalid.
        """
        if not isinstance(data, dict):
            raise TypeError(f"expected a ToolResponse dict, got {type(data).__name__}")
        response_type = data.get("response_type")
        target = (
            RESPONSE_CLASSES.get(response_type, ToolResponse)
            if isinstance(response_type, str)
            else ToolResponse
        )
        known = {key: value for key, value in data.items() if key in _FIELDS}
        # Validated by the schema, then given the class without a second validation: the
        # subclasses' __init__ take their convenience arguments, not the fields.
        valid = ToolResponseData.model_validate(known)
        return target.model_construct(valid.model_fields_set, **dict(valid))

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


def describe_problems(error: ValidationError) -> str:
    """A broken response's problems on one line, for logs and ``debug_info``: where and
    what, with the offending value's type but never the value (it may be private)."""
    return "; ".join(_problem(problem) for problem in error.errors(include_url=False))


def _problem(problem: Any) -> str:
    where = ".".join(map(str, problem["loc"])) or "response"
    got = "" if problem["type"] == "missing" else f" (got {type(problem.get('input')).__name__})"
    return f"{where}: {problem['msg']}{got}"


class AccountNeeded(ToolResponse):
    """The user must connect an account for ``connector`` before the tool can run."""

    response_type_name: ClassVar[str] = "account_needed"
    # What the model is told is missing ("bank account"); None: "<agent_name> account".
    account_label: ClassVar[str | None] = None

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


class OpenTabResponse(OpenWindowResponse):
    response_type_name: ClassVar[str] = "open_tab"


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


#: response_type -> the subclass ``ToolResponse.from_dict`` rebuilds: the generic kinds
#: here, and each connector's own (its connect card) once it registered them.
RESPONSE_CLASSES: dict[str, type[ToolResponse]] = {
    cls.response_type_name: cls
    for cls in (
        AccountNeeded,
        OpenWindowResponse,
        OpenTabResponse,
        ErrorResponse,
        TextResponse,
        JsonResponse,
        FileResponse,
        LinkResponse,
    )
}


def register_response_class(cls: type[ToolResponse]) -> None:
    """Let ``from_dict`` rebuild ``cls`` for its ``response_type_name`` (a connector's
    connect card, from its own folder). A type already taken by another class is refused:
    a plug-in cannot change how a built-in response comes back from storage."""
    name = getattr(cls, "response_type_name", None)
    if not isinstance(name, str) or not name:
        raise TypeError(f"{cls.__name__} has no response_type_name to register it under")
    held = RESPONSE_CLASSES.setdefault(name, cls)
    if held is not cls:
        raise ValueError(
            f"response type {name!r} is already {held.__module__}.{held.__qualname__}; "
            f"{cls.__module__}.{cls.__qualname__} needs a name of its own"
        )
