"""The ToolResponse schema: what every connector tool returns and a ``tool_output`` event
carries (docs/protocol.md §3, docs/connectors.md). Pure: it imports only pydantic and
typing_extensions; in ``wire`` because storage and the socket carry it as well.

``ToolResponseData`` is the one definition. ``connectors.responses.ToolResponse`` adds
the connector-facing constructors to it, and a ``tool_output`` event can take it as the
type of its ``output``: an instance is validated once, when it is built (pydantic does
not validate a model instance again when it is put into another model).

The rules (strict: no coercion, except that a tuple is a JSON array):

- ``response_type``, ``agent_name``, ``friendly_name``: non-empty strings;
  ``display_response``: a bool; ``error_message``: a string or None; ``truncated``: True
  when the tool's result was over the size cap and was cut (``connectors.result_size``),
  else absent.
- ``response``: a dict, list or str; ``debug_info``: a dict or None.
- ``display_as``: render hints ``{"type", "content", ...}`` with a non-empty ``type``:
  one of ``DISPLAY_TYPES`` (docs/protocol.md) or a connector's own, which a client that
  does not know it skips; ``text`` and ``markdown`` content is a string; ``link`` content
  is an ``http(s)://`` URL or an object whose ``url`` is one (clients put it in a page as
  it is: a ``javascript:`` link would run there).
- ``content_chunks``: citations ``{"id": str | int, "title": str, "url": str | None,
  "snippet": str, ...}``.
- everything in ``response``, ``display_as``, ``content_chunks`` and ``debug_info`` is
  strict JSON (string keys; str, int, finite float, bool, None; no cycles; at most
  ``MAX_JSON_DEPTH`` levels), so what is persisted is exactly what is read back.

A broken rule raises pydantic's ``ValidationError`` (a ``ValueError``) whose location
names the field and the path inside it, e.g. ``response.object.items.array.2`` (the
``object``/``array`` steps say what kind of value the path went through).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    SerializerFunctionWrapHandler,
    Strict,
    StringConstraints,
    Tag,
    model_serializer,
    with_config,
)
from typing_extensions import TypeAliasType, TypedDict

# The ToolResponse keys (docs/connectors.md), always present in the wire form, in this order.
CORE_KEYS = ("response_type", "agent_name", "friendly_name", "response", "display_response")
# Present in the wire form only when set; ``debug_info`` is persisted, never sent.
OPTIONAL_KEYS = ("display_as", "content_chunks", "error_message", "truncated")

# The display_as hint types of docs/protocol.md §3. A client renders the first hint it
# supports and falls back to ``text`` (docs/rap.md: unknown types are skipped), so other
# types are valid too. Text hints hold a string, the others any JSON.
TextHintType = Literal["text", "markdown"]
DISPLAY_TYPES: tuple[str, ...] = (*get_args(TextHintType), "json", "diff", "link", "card")

# Deeper JSON than this is refused: serialisers give up not far above it (orjson at 255).
MAX_JSON_DEPTH = 100


def _json_kind(value: object) -> str | None:
    """The JSON kind of ``value``, or None when JSON cannot hold it.

    By ``isinstance``, so subclasses (a ``str`` enum, an ``int`` enum) count as their base;
    ``bool`` is tested before ``int``, of which it is a subclass.
    """
    if value is None:
        return "null"
    for kind, name in ((bool, "boolean"), (str, "string"), (int, "integer"), (float, "number")):
        if isinstance(value, kind):
            return name
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    return None


if TYPE_CHECKING:
    # What type checkers see (they do not follow the validator below).
    Json: TypeAlias = "list[Json] | dict[str, Json] | str | bool | int | float | None"
else:
    # Strict JSON. Like pydantic's ``JsonValue``, but a tuple is an array (Python code
    # builds them; ``Strict(False)`` lets the array branch take one), and NaN/infinity are
    # refused by the models' ``allow_inf_nan=False``.
    Json = TypeAliasType(
        "Json",
        Annotated[
            Annotated[list["Json"], Tag("array"), Strict(False)]
            | Annotated[dict[str, "Json"], Tag("object")]
            | Annotated[str, Tag("string")]
            | Annotated[bool, Tag("boolean")]
            | Annotated[int, Tag("integer")]
            | Annotated[float, Tag("number")]
            | Annotated[None, Tag("null")],
            Discriminator(
                _json_kind,
                custom_error_type="not_json",
                custom_error_message="is not JSON-serialisable",
            ),
        ],
    )


def _payload_kind(value: object) -> str | None:
    kind = _json_kind(value)
    return kind if kind in ("object", "array", "string") else None


def _within_depth(value: Any) -> Any:
    """``value`` unchanged, if no more than ``MAX_JSON_DEPTH`` containers deep."""
    level = [value]
    for _ in range(MAX_JSON_DEPTH):
        level = [
            child
            for item in level
            if isinstance(item, dict | list)
            for child in (item.values() if isinstance(item, dict) else item)
        ]
        if not level:
            return value
    if any(isinstance(item, dict | list) for item in level):
        raise ValueError(f"nested more than {MAX_JSON_DEPTH} levels deep")
    return value


_Shallow = AfterValidator(_within_depth)

# A tool's result for the UI: an object, an array or a text.
Payload = Annotated[
    Annotated[dict[str, Json], Tag("object")]
    | Annotated[list[Json], Tag("array"), Strict(False)]
    | Annotated[str, Tag("string")],
    Discriminator(
        _payload_kind,
        custom_error_type="payload_type",
        custom_error_message="must be a dict, list or str",
    ),
    _Shallow,
]

NonEmptyStr = Annotated[str, StringConstraints(min_length=1)]


# Hints and citations are TypedDicts, so a validated response holds plain dicts, exactly the
# JSON it is stored and sent as. Extra keys are kept (a client ignores what it does not know).
# A TypedDict's config replaces the model's, so it repeats the strict rules.
_OPEN_STRICT = ConfigDict(extra="allow", strict=True, allow_inf_nan=False)


@with_config(_OPEN_STRICT)
class TextHint(TypedDict, extra_items=Json):  # type: ignore[call-arg]  # PEP 728
    type: TextHintType
    content: str


@with_config(_OPEN_STRICT)
class DataHint(TypedDict, extra_items=Json):  # type: ignore[call-arg]
    type: NonEmptyStr
    content: Json


# Where a link may lead: a web page. Not javascript:, data:, file: or a custom scheme.
_WEB_URL = re.compile(r"https?://[^\s/?#]+\S*", re.IGNORECASE)
_SCHEME = re.compile(r"\s*([A-Za-z][A-Za-z0-9+.-]{0,19}):")


def is_web_url(value: str) -> bool:
    """Whether ``value`` may be a link's URL: an http(s) page, nothing a browser would run."""
    return _WEB_URL.fullmatch(value) is not None


def _web_url(value: str) -> str:
    if not is_web_url(value):
        # Named by its scheme only: the rest of a URL may hold anything.
        found = _SCHEME.match(value)
        scheme = found.group(1).lower() if found else "http"
        problem = f"not {scheme}:" if scheme not in ("http", "https") else "with a host, no spaces"
        raise ValueError(f"a link must be an http:// or https:// URL, {problem}")
    return value


WebUrl = Annotated[str, AfterValidator(_web_url)]


@with_config(_OPEN_STRICT)
class LinkTarget(TypedDict, extra_items=Json):  # type: ignore[call-arg]
    """A ``link`` hint's object form: ``url`` and, e.g., ``title`` and ``description``."""

    url: WebUrl


def _link_kind(value: object) -> str | None:
    return "url" if isinstance(value, str) else "object" if isinstance(value, dict) else None


@with_config(_OPEN_STRICT)
class LinkHint(TypedDict, extra_items=Json):  # type: ignore[call-arg]
    type: Literal["link"]
    content: Annotated[
        Annotated[WebUrl, Tag("url")] | Annotated[LinkTarget, Tag("object")],
        Discriminator(
            _link_kind,
            custom_error_type="link_type",
            custom_error_message="must be a URL or an object with a url",
        ),
    ]


def _hint_kind(value: object) -> str | None:
    if not isinstance(value, dict):
        return None
    kind = value.get("type")
    return "text" if kind in get_args(TextHintType) else "link" if kind == "link" else "data"


DisplayHint = Annotated[
    Annotated[TextHint, Tag("text")]
    | Annotated[LinkHint, Tag("link")]
    | Annotated[DataHint, Tag("data")],
    Discriminator(
        _hint_kind,
        custom_error_type="hint_type",
        custom_error_message="must be a {type, content} object",
    ),
]


@with_config(_OPEN_STRICT)
class ContentChunk(TypedDict, extra_items=Json):  # type: ignore[call-arg]
    """A source the response drew on; the model cites it as ``[n]``."""

    id: str | int
    title: str
    url: str | None
    snippet: str


class ToolResponseData(BaseModel):
    """A ToolResponse as it is built, stored and sent.

    Assigning a field validates the new value (``validate_assignment``), so an instance is
    always valid. ``model_dump()`` is the stored form: the optional keys that are unset
    are left out, as ``connectors.responses.ToolResponse.to_dict`` leaves them out.
    """

    model_config = ConfigDict(
        strict=True,
        extra="forbid",
        allow_inf_nan=False,
        validate_assignment=True,
    )

    response_type: NonEmptyStr
    agent_name: NonEmptyStr
    friendly_name: NonEmptyStr
    response: Payload
    display_response: bool = True
    display_as: Annotated[list[DisplayHint] | None, _Shallow] = None
    content_chunks: Annotated[list[ContentChunk] | None, _Shallow] = None
    error_message: str | None = None
    # Set (True) only by the size cap: what is stored and sent is the first part of the result.
    truncated: Literal[True] | None = None
    # Persisted for the chat's owner; stripped before sending (storage.records).
    debug_info: Annotated[dict[str, Json] | None, _Shallow] = None

    @model_serializer(mode="wrap")
    def _without_unset(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        return {
            key: value
            for key, value in data.items()
            if value is not None or key not in (*OPTIONAL_KEYS, "debug_info")
        }
