"""``POST /v1/responses`` bodies: validated at the edge, turned into what a turn runs.

Pure: no I/O. What Switchboard does with each field (docs/open-responses.md):

- ``input``: a string (one user message) or items: messages (``user``, ``assistant``,
  ``system``, ``developer``; text, image and file parts), ``function_call`` /
  ``function_call_output`` pairs, ``function_call_output`` items answering the caller's
  calls a previous response ended with, Switchboard's own items sent back
  (``switchboard:tool_call``, or its ``mcp_call`` view; ``switchboard:approval_request``)
  and ``compaction`` items
  from ``/v1/responses/compact``. The last user message is the turn's prompt (what the
  chat history shows). Or, to answer a response that asked for approval, only
  ``switchboard:approval_response`` items (``approval_decisions``).
- ``instructions``: added to every agent's instructions for this response only (they are
  not carried over by ``previous_response_id``, as in the spec).
- ``tools``: the caller's own function tools (the model may call them; the caller runs
  them), and ``switchboard:tool`` entries naming some of Switchboard's tools to keep only
  those; ``tool_choice`` steers both (see ``app.openresponses.agents``).
- ``temperature``, ``top_p``, ``max_output_tokens``, ``parallel_tool_calls``: passed to the
  model on every agent. ``metadata``, ``user``, ``model``, ``prompt_cache_key``: echoed.
- ``store``: false keeps the response out of storage (``GET`` and ``previous_response_id``
  do not find it), except on the WebSocket that made it.

Types are strict (``"stream": "yes"`` or ``"temperature": "0.5"`` are refused, not
coerced). Unknown fields are ignored (forward compatibility), except in approval
responses (a decision is refused rather than half read); known fields with a wrong shape,
and features this server does not offer (``background``, ``conversation``, structured
``text`` formats, hosted tools), are refused with a 400 that names the field.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    WithJsonSchema,
)
from pydantic_core import ErrorDetails

from app.api_models import NOT_BLANK_TEXT
from app.openresponses.errors import OpenResponsesError, invalid
from app.openresponses.files import pending_upload
from storage.approvals import NOT_RUN
from websocket.protocol import MAX_APPROVAL_ID, MAX_APPROVAL_REASON, unstorable_at

MAX_BODY_BYTES = 8 * 1024 * 1024  # room for a few inline images
MAX_INSTRUCTIONS = 32_000
MAX_ITEMS = 1000
MAX_TOOLS = 128
MAX_ENCRYPTED = 8 * 1024 * 1024
TOOL_NAME = r"^[A-Za-z0-9_-]{1,64}$"


class _Strict(BaseModel):
    """Strict types: a string is not a number, nor ``"yes"`` a boolean."""

    model_config = ConfigDict(extra="ignore", strict=True)


class InputText(_Strict):
    type: Literal["input_text"]
    text: str


class OutputText(_Strict):
    type: Literal["output_text"]
    text: str


class Refusal(_Strict):
    type: Literal["refusal"]
    refusal: str


# What the document says of inline content: what files.py takes (a data: URL for an
# image; base64 with a filename for a file; never a URL or a file_id). The fields stay
# open here, so that files.py refuses the rest with a message that says what to send.
_NOTHING = {"type": "null"}


class InputImage(_Strict):
    type: Literal["input_image"]
    image_url: Annotated[
        str | None, WithJsonSchema({"type": "string", "pattern": "^data:[^,]*;base64,"})
    ] = None
    file_id: Annotated[str | None, WithJsonSchema(_NOTHING)] = None
    detail: Literal["low", "high", "auto"] = "auto"

    model_config = ConfigDict(json_schema_extra={"required": ["type", "image_url"]})


class InputFile(_Strict):
    type: Literal["input_file"]
    file_data: Annotated[str | None, WithJsonSchema({"type": "string", "minLength": 1})] = None
    file_url: Annotated[str | None, WithJsonSchema(_NOTHING)] = None
    file_id: Annotated[str | None, WithJsonSchema(_NOTHING)] = None
    filename: Annotated[str | None, WithJsonSchema({"type": "string", "minLength": 1})] = None

    model_config = ConfigDict(json_schema_extra={"required": ["type", "file_data", "filename"]})


ContentPart = Annotated[
    InputText | OutputText | Refusal | InputImage | InputFile, Field(discriminator="type")
]


class MessageItem(_Strict):
    type: Literal["message"] = "message"
    role: Literal["user", "assistant", "system", "developer"]
    content: str | list[ContentPart]


class FunctionCallItem(_Strict):
    type: Literal["function_call"]
    call_id: str = Field(min_length=1, max_length=200)
    name: str = Field(min_length=1, max_length=200)
    arguments: str


class FunctionCallOutputItem(_Strict):
    type: Literal["function_call_output"]
    call_id: str = Field(min_length=1, max_length=200)
    output: str | list[ContentPart]


TOOL_CALL = "switchboard:tool_call"
APPROVAL_REQUEST = "switchboard:approval_request"
APPROVAL_RESPONSE = "switchboard:approval_response"
SWITCHBOARD_TOOL = "switchboard:tool"
# The Responses API's item for a tool the provider ran: how a client that asked for it
# sees Switchboard's tool calls (``app.openresponses.views``), and may send them back.
MCP_CALL = "mcp_call"
SERVER_LABEL = "switchboard"
CALL_ITEM_PREFIX = "sbc_"  # a switchboard:tool_call item's id: this, then its call_id


class ToolCallItem(_Strict):
    """A ``switchboard:tool_call`` output item sent back as input: one of Switchboard's
    own calls with what it returned (the spec wants provider items to round-trip)."""

    type: Literal["switchboard:tool_call"]
    call_id: str = Field(min_length=1, max_length=200)
    name: str = Field(min_length=1, max_length=200)
    arguments: str
    output: str | None = None  # None: the call did not finish


class McpCallItem(_Strict):
    """A ``switchboard:tool_call`` as the ``mcp`` view showed it (an ``mcp_call`` of the
    server ``switchboard``), sent back as input: read as that item. A call of another MCP
    server never ran here, so it is refused."""

    type: Literal["mcp_call"]
    id: str = Field(min_length=1, max_length=200)
    server_label: Literal["switchboard"]
    call_id: str | None = Field(None, min_length=1, max_length=200)
    name: str = Field(min_length=1, max_length=200)
    arguments: str
    output: str | None = None  # None: the call did not finish

    def as_tool_call(self) -> ToolCallItem:
        # Our items carry call_id; a client that dropped it still has the id it came from.
        call_id = self.call_id or self.id.removeprefix(CALL_ITEM_PREFIX)
        return ToolCallItem(
            type="switchboard:tool_call",
            call_id=call_id,
            name=self.name,
            arguments=self.arguments,
            output=self.output,
        )


class ApprovalRequestItem(_Strict):
    """A ``switchboard:approval_request`` output item sent back as input (a client that
    keeps its own history): the spec wants provider items to round-trip."""

    type: Literal["switchboard:approval_request"]
    approval_id: str = Field(min_length=1, max_length=MAX_APPROVAL_ID)
    call_id: str = Field(min_length=1, max_length=200)
    name: str = Field(min_length=1, max_length=200)
    arguments: str


class ApprovalResponseItem(_Strict):
    """The person's decision on one ``switchboard:approval_request`` (the Responses API's
    ``mcp_approval_response``, vendor-prefixed). Unknown fields are refused, unlike other
    items: a misspelt field of a decision that sends an email must not pass unnoticed."""

    model_config = ConfigDict(extra="forbid", strict=True)

    type: Literal["switchboard:approval_response"]
    approval_id: str = Field(min_length=1, max_length=MAX_APPROVAL_ID)
    approve: bool
    reason: str | None = Field(None, max_length=MAX_APPROVAL_REASON)
    id: str | None = Field(None, max_length=200)  # optional, as on mcp_approval_response


class CompactionItem(_Strict):
    """A ``compaction`` item of ``/v1/responses/compact``'s output, sent back as input."""

    type: Literal["compaction"]
    encrypted_content: str = Field(min_length=1, max_length=MAX_ENCRYPTED)


APPROVAL_RESPONSE_FIELDS = "type, approval_id, approve and reason"


def _item_kind(value: Any) -> object:
    # A message may leave out its type ({"role": "user", "content": "hi"}). The tag is what
    # the client sent, whatever its type: pydantic reports one that names no item type.
    if isinstance(value, dict):
        return value.get("type", "message")
    return getattr(value, "type", None)


# What an input item's "type" may be, as a client reads it in an error message
# (item_reference items are read before validation: app.openresponses.references).
_ITEM_TYPES = (
    "message",
    "function_call",
    "function_call_output",
    "item_reference",
    TOOL_CALL,
    MCP_CALL,
    APPROVAL_REQUEST,
    APPROVAL_RESPONSE,
    "compaction",
)

InputItem = Annotated[
    Annotated[MessageItem, Tag("message")]
    | Annotated[FunctionCallItem, Tag("function_call")]
    | Annotated[FunctionCallOutputItem, Tag("function_call_output")]
    | Annotated[ToolCallItem, Tag(TOOL_CALL)]
    | Annotated[McpCallItem, Tag(MCP_CALL)]
    | Annotated[ApprovalRequestItem, Tag(APPROVAL_REQUEST)]
    | Annotated[ApprovalResponseItem, Tag(APPROVAL_RESPONSE)]
    | Annotated[CompactionItem, Tag("compaction")],
    Discriminator(_item_kind),
]


class FunctionToolParam(_Strict):
    """A function tool of the caller's: the model may call it, the caller runs it."""

    type: Literal["function"]
    name: str = Field(pattern=TOOL_NAME)
    description: str | None = Field(None, max_length=8000)
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class SwitchboardTool(_Strict):
    """One of Switchboard's own tools, named to keep it (and drop those not named)."""

    type: Literal["switchboard:tool"]
    name: str = Field(min_length=1, max_length=200)


Tool = Annotated[FunctionToolParam | SwitchboardTool, Field(discriminator="type")]


class FunctionChoice(_Strict):
    type: Literal["function"]
    name: str = Field(min_length=1, max_length=200)


class SwitchboardChoice(_Strict):
    type: Literal["switchboard:tool"]
    name: str = Field(min_length=1, max_length=200)


NamedTool = Annotated[FunctionChoice | SwitchboardChoice, Field(discriminator="type")]


class AllowedTools(_Strict):
    type: Literal["allowed_tools"]
    mode: Literal["auto", "required"] = "auto"
    tools: list[NamedTool] = Field(min_length=1, max_length=256)


ToolChoice = (
    Literal["auto", "none", "required"]
    | Annotated[FunctionChoice | SwitchboardChoice | AllowedTools, Field(discriminator="type")]
)


class TextFormat(_Strict):
    type: Literal["text"] = "text"


class TextConfig(_Strict):
    format: TextFormat = Field(default_factory=TextFormat)


class CreateResponse(_Strict):
    """The request body. Unknown fields are ignored."""

    model: str = Field(min_length=1, max_length=200)
    # The list's cap is on items; a string is one message, capped by the prompt length.
    # The document says a message has text (the request checks that, in its own words).
    input: (
        Annotated[
            str, WithJsonSchema({"type": "string", "minLength": 1, "pattern": NOT_BLANK_TEXT})
        ]
        | Annotated[list[InputItem], Field(max_length=MAX_ITEMS, json_schema_extra={"minItems": 1})]
    )
    instructions: str | None = Field(None, max_length=MAX_INSTRUCTIONS)
    previous_response_id: str | None = Field(None, min_length=1, max_length=64)
    tools: list[Tool] | None = Field(None, max_length=MAX_TOOLS)
    tool_choice: ToolChoice = "auto"
    stream: bool = False
    store: bool = True
    metadata: dict[str, Annotated[str, Field(max_length=512)]] | None = Field(None, max_length=16)
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, ge=0, le=1)
    max_output_tokens: int | None = Field(None, ge=16, le=1_000_000)
    parallel_tool_calls: bool = True
    user: str | None = Field(None, max_length=256)
    prompt_cache_key: str | None = Field(None, max_length=64)
    text: TextConfig | None = None
    truncation: Literal["auto", "disabled"] = "disabled"
    # Strictly a boolean (0 is not false), and false: refused by parse_request otherwise.
    background: Annotated[bool, WithJsonSchema({"type": "boolean", "const": False})] = False
    conversation: None = None

    @property
    def caller_tools(self) -> list[FunctionToolParam]:
        return [tool for tool in self.tools or () if isinstance(tool, FunctionToolParam)]

    @property
    def kept_tools(self) -> list[str] | None:
        """The Switchboard tools ``tools`` names (None: it names none, so all are kept)."""
        named = [tool.name for tool in self.tools or () if isinstance(tool, SwitchboardTool)]
        return named or None


class CompactRequest(_Strict):
    """``POST /v1/responses/compact``: a conversation (``input`` and/or the chain of
    ``previous_response_id``) to compact."""

    # One of the two at least (parse_compact says so in words).
    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [
                {
                    "required": [name],
                    "properties": {name: {"not": {"type": "null"}}},
                }
                for name in ("input", "previous_response_id")
            ]
        }
    )

    model: str = Field(min_length=1, max_length=200)
    input: str | Annotated[list[InputItem], Field(max_length=MAX_ITEMS)] | None = None
    previous_response_id: str | None = Field(None, min_length=1, max_length=64)
    instructions: str | None = Field(None, max_length=MAX_INSTRUCTIONS)
    prompt_cache_key: str | None = Field(None, max_length=64)


# Fields of the body whose refusal deserves a message of its own.
_UNSUPPORTED = {
    "background": "background responses are not supported: omit background or set it to "
    "false, and use stream: true for long answers",
    "conversation": "conversation objects are not supported: chain responses with "
    "previous_response_id instead",
    "text": 'only plain text output is supported (text.format.type "text")',
}
_TOOL_TYPES = (
    'tools may hold function tools ({"type": "function", "name", "description", '
    '"parameters"}), which you run, and {"type": "switchboard:tool", "name"} entries '
    "naming Switchboard's own tools to keep; hosted tools of other providers are not "
    "offered"
)


_TYPE_BRANCHES = frozenset({"str", "int", "float", "bool", "dict", "list", "none"})
# The ``type`` values of discriminated unions: pydantic puts the one it tried in the
# error's location (``tools[0].function.name``); the client's path has none of them.
_TAGS = frozenset(
    {
        "message",
        "function_call",
        "function_call_output",
        TOOL_CALL,
        MCP_CALL,
        APPROVAL_REQUEST,
        APPROVAL_RESPONSE,
        "compaction",
        "input_text",
        "output_text",
        "refusal",
        "input_image",
        "input_file",
        "function",
        SWITCHBOARD_TOOL,
        "allowed_tools",
    }
)


def _param(loc: tuple[Any, ...]) -> str:
    """A pydantic error location as the body path (``input[2].content[0]``): union branch
    names and discriminator tags are pydantic's, not the client's, and are left out."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
            continue
        text = str(part)
        if "[" in text or text in _TYPE_BRANCHES or text in _TAGS:
            continue
        out += f".{text}" if out else text
    return out or "body"


def _required(body: object, names: Sequence[tuple[str, str]]) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise invalid("the body must be a JSON object", code="invalid_json")
    for name, message in names:
        if name not in body:
            raise invalid(message, name, "missing_required_parameter")
    return body


_MODEL_REQUIRED = (
    "model",
    'model is required (any name, e.g. "switchboard": the server\'s configured models answer)',
)


_JSON_TYPES = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    for kind, name in _JSON_TYPES.items():
        if isinstance(value, kind):
            return name
    return "a number"


def _specific(error: ErrorDetails) -> tuple[int, bool]:
    # A union reports one error per branch; the most specific (longest path) says most,
    # and of two as long, a rule the value broke says more than "not a <branch's type>"
    # (a list of 1,001 items is too long, not "not a string").
    return len(error["loc"]), not error["type"].endswith("_type")


def _message(error: ErrorDetails, param: str) -> str:
    """What the client reads: the rule broken, in words (not pydantic's wording)."""
    context = error.get("ctx") or {}
    if error["type"] == "too_long" and isinstance(context.get("max_length"), int):
        actual = context.get("actual_length")
        has = f"has {actual:,} items" if isinstance(actual, int) else "has too many items"
        return f"{param} {has}; at most {context['max_length']:,} are taken"
    if param == "input" and error["type"].endswith("_type"):
        return (
            "input is a string (one user message) or an array of input items, "
            f"not {_json_type(error['input'])}"
        )
    if error["type"] == "union_tag_not_found":
        return (
            f"{param}: an input item is a JSON object, not {_json_type(error['input'])}: "
            'a message ({"role": "user", "content": "…"}) or an item with a "type" '
            f"({', '.join(_ITEM_TYPES)}); a single message may also be sent as "
            "input itself, a string"
        )
    return f"{param}: {error['msg']}"


def _validated(model: type[_Strict], body: dict[str, Any]) -> Any:
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        first = max(exc.errors(), key=_specific)
        param = _param(first["loc"])
        top = param.split(".")[0].split("[")[0]
        message = _UNSUPPORTED.get(top)
        if message is None and first["type"] == "extra_forbidden":
            # Only approval responses forbid extra fields (see ApprovalResponseItem).
            message = (
                f"unknown field {str(first['loc'][-1])!r} in a {APPROVAL_RESPONSE} "
                f"item; its fields are {APPROVAL_RESPONSE_FIELDS}"
            )
            raise invalid(message, param, "unknown_parameter") from None
        if message is None and first["type"] == "union_tag_invalid":
            context = first.get("ctx") or {}
            message = (
                f"{param}: type {context.get('tag')!r} is not supported here; "
                f"expected {context.get('expected_tags')}"
            )
            if top == "tools":
                message = f"{param}: type {context.get('tag')!r} is not supported: {_TOOL_TYPES}"
        if message is None:
            message = _message(first, param)
        raise invalid(message, param) from None


def _storable(request: _Strict) -> None:
    # Refused before anything runs: it would reach the database as a prompt, an id to
    # look up, or inside the stored response (which echoes instructions and metadata).
    unstorable = unstorable_at(request.model_dump())
    if unstorable is not None:
        where, problem = unstorable
        field = where.rsplit(".", 1)[-1].split("[")[0]  # param says where; this says what
        raise invalid(f"{field} {problem}", where)


def parse_request(body: object) -> CreateResponse:
    """The validated request; ``OpenResponsesError`` (400) naming the first bad field."""
    fields = _required(
        body,
        [
            _MODEL_REQUIRED,
            ("input", "input is required: a string or a list of input items"),
        ],
    )
    request: CreateResponse = _validated(CreateResponse, fields)
    if request.background:
        raise invalid(_UNSUPPORTED["background"], "background")
    _storable(request)
    names = [tool.name for tool in request.caller_tools]
    for index, name in enumerate(names):
        if name in names[:index]:
            raise invalid(f"two tools are named {name!r}", f"tools[{index}].name")
    return request


def parse_compact(body: object) -> CompactRequest:
    """A validated ``/v1/responses/compact`` body; ``OpenResponsesError`` (400)."""
    request: CompactRequest = _validated(CompactRequest, _required(body, [_MODEL_REQUIRED]))
    _storable(request)
    if request.input is None and request.previous_response_id is None:
        raise invalid(
            "give the conversation to compact: input, previous_response_id, or both",
            "input",
            "missing_required_parameter",
        )
    return request


# ----------------------------------------------------------------------------- approvals


@dataclass(frozen=True)
class Decision:
    """One ``switchboard:approval_response``: ``param`` is where it is in the body."""

    approval_id: str
    approve: bool
    reason: str | None
    param: str


def approval_decisions(request: CreateResponse) -> list[Decision]:
    """The request's approval responses, in order; [] when it has none.

    A request that answers approvals does only that: the paused run goes on from where it
    stopped, so there is no new prompt to add, and the agents it resumes with must be the
    ones that paused (``tool_choice`` / ``tools`` cannot change them).
    """
    if isinstance(request.input, str):
        return []
    answers = [
        (index, item)
        for index, item in enumerate(request.input)
        if isinstance(item, ApprovalResponseItem)
    ]
    if not answers:
        return []
    others = [
        index
        for index, item in enumerate(request.input)
        if not isinstance(item, ApprovalResponseItem)
    ]
    if others:
        raise invalid(
            f"{APPROVAL_RESPONSE} items must be the whole input: they resume the "
            "paused response as it was; send other items in the next request",
            f"input[{others[0]}]",
        )
    if request.previous_response_id is None:
        raise invalid(
            f"{APPROVAL_RESPONSE} items answer the approval requests of a "
            "response: set previous_response_id to that response's id",
            "previous_response_id",
            "missing_required_parameter",
        )
    if request.tools is not None:
        raise invalid(
            "tools cannot be given while answering approvals: the paused run "
            "goes on with the tools it had; send tools in the next request",
            "tools",
        )
    if request.tool_choice != "auto":
        raise invalid(
            "tool_choice cannot be given while answering approvals: the paused "
            "run goes on with the tools it had; send tool_choice in the next "
            "request",
            "tool_choice",
        )
    decisions: list[Decision] = []
    seen: set[str] = set()
    for index, item in answers:
        assert isinstance(item, ApprovalResponseItem)
        where = f"input[{index}]"
        if item.approval_id in seen:
            raise invalid(
                f"approval {item.approval_id!r} is answered twice; send one "
                f"{APPROVAL_RESPONSE} per approval",
                f"{where}.approval_id",
                "duplicate_approval_response",
            )
        seen.add(item.approval_id)
        reason = (item.reason or "").strip() or None
        decisions.append(Decision(item.approval_id, item.approve, reason, where))
    return decisions


def check_decisions(decisions: Sequence[Decision], asked: Sequence[str], response_id: str) -> None:
    """Every decision answers one of ``asked`` (the approval ids ``response_id`` asked
    for), and every one of them is answered: the paused run goes on only once all are
    decided, so a partial answer could not produce a response."""
    for decision in decisions:
        if decision.approval_id not in asked:
            hint = (
                f"its approval requests are {', '.join(map(repr, asked))}"
                if asked
                else "it asked for no approval"
            )
            raise invalid(
                f"response {response_id!r} has no approval request "
                f"{decision.approval_id!r}: {hint}",
                f"{decision.param}.approval_id",
                "unknown_approval",
            )
    answered = {decision.approval_id for decision in decisions}
    missing = [approval_id for approval_id in asked if approval_id not in answered]
    if missing:
        raise invalid(
            f"answer every approval request of {response_id!r} in one request: "
            f"no {APPROVAL_RESPONSE} for {', '.join(map(repr, missing))}",
            "input",
            "missing_approval_response",
        )


# ----------------------------------------------------------------------------- to a turn


@dataclass(frozen=True)
class TurnInput:
    prompt: str  # the last user message's text: the turn's prompt in the chat history
    items: list[dict[str, Any]]  # the model input items for the SDK


# A compaction item's content → the model input items it stands for (``where``: its param).
Expand = Callable[[str, str], list[dict[str, Any]]]
# What the model reads for one of Switchboard's calls sent back unfinished.
UNFINISHED = "Not completed: this call did not finish, so it may or may not have run."


def _text_of(content: str | list[ContentPart]) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(part.text for part in content if isinstance(part, InputText | OutputText))


def _part(part: ContentPart, role: str, where: str) -> dict[str, Any]:
    if isinstance(part, InputText | OutputText):
        return {"type": "input_text", "text": part.text}
    if isinstance(part, Refusal):
        return {"type": "input_text", "text": part.refusal}
    if role != "user":
        raise invalid(f"{role} messages may only contain text", "input")
    # An image or a file: decoded here, stored as an attachment before the turn starts.
    return pending_upload(part.model_dump(exclude_none=True), where)


def _no_expand(content: str, where: str) -> list[dict[str, Any]]:
    raise invalid("compaction items are not accepted here", where)


class _Pairs:
    """The function calls of an input and their outputs, checked as they come."""

    def __init__(self, pending: Mapping[str, str]) -> None:
        self.pending = dict(pending)  # the previous response's calls of the caller's tools
        self.called: set[str] = set()
        self.answered: set[str] = set()
        self.answers: list[dict[str, Any]] = []  # outputs for ``pending`` calls

    def call(self, call_id: str, where: str, what: str = "function_call") -> None:
        if call_id in self.called or call_id in self.pending:
            raise invalid(f"{what} {call_id!r} appears twice", where)
        self.called.add(call_id)

    def output(self, item: FunctionCallOutputItem, where: str) -> dict[str, Any] | None:
        """The output's model item, in place (None: it answers a pending call, and goes
        first, right after the call it answers)."""
        call_id = item.call_id
        if call_id in self.answered:
            raise invalid(f"function_call {call_id!r} has a second output", where)
        text = item.output if isinstance(item.output, str) else _text_of(item.output)
        answer = {"type": "function_call_output", "call_id": call_id, "output": text}
        if call_id in self.called:
            self.answered.add(call_id)
            return answer
        if call_id in self.pending:
            self.answered.add(call_id)
            self.answers.append(answer)
            return None
        waiting = ", ".join(repr(c) for c in self.pending)
        hint = (
            f"the previous response waits for the results of {waiting}"
            if waiting
            else "no function_call with that call_id comes before it in input, and "
            "previous_response_id names no response that waits for it"
        )
        raise invalid(
            f"function_call_output for {call_id!r} answers no call: {hint}",
            f"{where}.call_id",
            "unknown_call_id",
        )

    def check(self) -> None:
        unanswered = sorted(self.called - self.answered)
        if unanswered:
            raise invalid(
                f"function_call {unanswered[0]!r} has no function_call_output in input; "
                "send each replayed call with its output",
                "input",
            )
        missing = [call_id for call_id in self.pending if call_id not in self.answered]
        if missing:
            names = ", ".join(f"{self.pending[c]} ({c!r})" for c in missing)
            raise invalid(
                f"the previous response ended with calls of your tools that need their "
                f"results: send a function_call_output for each of {names}",
                "input",
                "missing_function_call_output",
            )


def _converted(
    source: str | list[Any], pairs: _Pairs, expand: Expand
) -> tuple[list[dict[str, Any]], str | None]:
    """Input items → model input items, and the last user message's text."""
    items = [MessageItem(role="user", content=source)] if isinstance(source, str) else source
    out: list[dict[str, Any]] = []
    prompt: str | None = None
    for index, item in enumerate(items):
        where = f"input[{index}]"
        if isinstance(item, MessageItem):
            if item.role == "user":
                prompt = _text_of(item.content)
            if isinstance(item.content, str) or item.role == "assistant":
                # Assistant turns go back as plain text: every provider accepts that.
                out.append(
                    {"type": "message", "role": item.role, "content": _text_of(item.content)}
                )
            else:
                try:
                    parts = [
                        _part(part, item.role, f"{where}.content[{n}]")
                        for n, part in enumerate(item.content)
                    ]
                except OpenResponsesError as exc:
                    exc.param = exc.param if exc.param != "input" else f"{where}.content"
                    raise
                out.append({"type": "message", "role": item.role, "content": parts})
        elif isinstance(item, FunctionCallItem):
            pairs.call(item.call_id, where)
            out.append(_call(item.call_id, item.name, item.arguments))
        elif isinstance(item, ToolCallItem | McpCallItem):
            # One of Switchboard's own calls with its result, as the response showed it.
            if isinstance(item, McpCallItem):
                item = item.as_tool_call()
            pairs.call(item.call_id, where, TOOL_CALL)
            pairs.answered.add(item.call_id)
            output = item.output if item.output is not None else UNFINISHED
            out += [
                _call(item.call_id, item.name, item.arguments),
                {"type": "function_call_output", "call_id": item.call_id, "output": output},
            ]
        elif isinstance(item, ApprovalRequestItem):
            # A replayed request that was never answered in this conversation: the model
            # reads the call and that it did not run (a model API refuses a call without
            # an output), as after a paused turn that was superseded.
            pairs.call(item.call_id, where, "the call of this approval request")
            pairs.answered.add(item.call_id)
            out += [
                _call(item.call_id, item.name, item.arguments),
                {"type": "function_call_output", "call_id": item.call_id, "output": NOT_RUN},
            ]
        elif isinstance(item, CompactionItem):
            for expanded in expand(item.encrypted_content, where):
                kind = expanded.get("type", "message")
                call_id = str(expanded.get("call_id"))
                if kind == "message" and expanded.get("role") == "user":
                    prompt = _model_text(expanded.get("content"))
                elif kind == "function_call":
                    pairs.call(call_id, where)
                elif kind == "function_call_output":
                    pairs.answered.add(call_id)
                out.append(expanded)
        elif isinstance(item, ApprovalResponseItem):
            raise invalid(f"{APPROVAL_RESPONSE} items must be the whole input", where)
        else:
            answer = pairs.output(item, where)
            if answer is not None:
                out.append(answer)
    return out, prompt


def turn_input(
    request: CreateResponse,
    max_prompt_chars: int,
    pending: Mapping[str, str] | None = None,
    expand: Expand = _no_expand,
) -> TurnInput:
    """The SDK input items and the prompt; ``OpenResponsesError`` for what cannot run.

    ``pending``: call_id → tool name of the caller's calls the previous response ended
    with; each must be answered by a ``function_call_output`` here. ``expand`` opens a
    ``compaction`` item."""
    pairs = _Pairs(pending or {})
    out, prompt = _converted(request.input, pairs, expand)
    pairs.check()
    if pairs.answers and prompt is None:
        # Only the results of the caller's calls: the turn goes on from them.
        names = ", ".join(dict.fromkeys(pairs.pending[a["call_id"]] for a in pairs.answers))
        return TurnInput(prompt=f"(results of {names})", items=pairs.answers + out)
    if prompt is None or not prompt.strip():
        raise invalid(
            "input must contain a user message with text: it is the new turn's prompt", "input"
        )
    if len(prompt) > max_prompt_chars:
        raise invalid(
            f"the user message is over {max_prompt_chars} characters",
            "input",
            "string_above_max_length",
        )
    return TurnInput(prompt=prompt, items=pairs.answers + out)


def window_items(
    source: str | list[Any], pending: Mapping[str, str] | None, expand: Expand
) -> list[dict[str, Any]]:
    """Input items as model items, for a conversation to compact: a call may be left
    without its output (the next request gives it), and no prompt is needed."""
    pairs = _Pairs(pending or {})
    out, _ = _converted(source, pairs, expand)
    return pairs.answers + out


def _call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments}


def _model_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text", "")) for part in content if isinstance(part, dict)
        ).strip()
    return ""
