"""``POST /v1/responses`` bodies: validated at the edge, turned into what a turn runs.

Pure: no I/O. What Switchboard does with each field (docs/open-responses.md):

- ``input``: a string (one user message) or items: messages (``user``, ``assistant``,
  ``system``, ``developer``; text, image and file parts), and ``function_call`` /
  ``function_call_output`` pairs and ``switchboard:approval_request`` items round-tripped
  from an earlier output. The last user message is the turn's prompt (what the chat
  history shows). Or, to answer a response that asked for approval, only
  ``switchboard:approval_response`` items (``approval_decisions``).
- ``instructions``: added to every agent's instructions for this response only (they are
  not carried over by ``previous_response_id``, as in the spec).
- ``tools`` / ``tool_choice``: the model may only use Switchboard's own tools; ``tools``
  (function tools naming some of them) and ``allowed_tools`` restrict them, ``none``,
  ``required`` and a named function steer the agents (see ``app.openresponses.agents``).
- ``temperature``, ``top_p``, ``max_output_tokens``, ``parallel_tool_calls``: passed to the
  model on every agent. ``metadata``, ``user``, ``model``: echoed.

Unknown fields are ignored (forward compatibility), except in approval responses (a
decision is refused rather than half read); known fields with a wrong shape, and
features this server does not offer (``background``, ``conversation``, structured
``text`` formats, hosted tools), are refused with a 400 that names the field.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StrictBool,
    Tag,
    ValidationError,
)

from app.openresponses.errors import OpenResponsesError, invalid
from storage.approvals import NOT_RUN
from websocket.protocol import MAX_APPROVAL_ID, MAX_APPROVAL_REASON, unstorable_at

MAX_INSTRUCTIONS = 32_000
MAX_ITEMS = 1000


class _Part(BaseModel):
    model_config = ConfigDict(extra="ignore")


class InputText(_Part):
    type: Literal["input_text"]
    text: str


class OutputText(_Part):
    type: Literal["output_text"]
    text: str


class Refusal(_Part):
    type: Literal["refusal"]
    refusal: str


class InputImage(_Part):
    type: Literal["input_image"]
    image_url: str | None = None
    file_id: str | None = None
    detail: Literal["low", "high", "auto"] = "auto"


class InputFile(_Part):
    type: Literal["input_file"]
    file_data: str | None = None
    file_url: str | None = None
    file_id: str | None = None
    filename: str | None = None


ContentPart = Annotated[
    InputText | OutputText | Refusal | InputImage | InputFile, Field(discriminator="type")
]


class MessageItem(BaseModel):
    model_config = ConfigDict(extra="ignore")

    type: Literal["message"] = "message"
    role: Literal["user", "assistant", "system", "developer"]
    content: str | list[ContentPart]


class FunctionCallItem(BaseModel):
    model_config = ConfigDict(extra="ignore")

    type: Literal["function_call"]
    call_id: str = Field(min_length=1, max_length=200)
    name: str = Field(min_length=1, max_length=200)
    arguments: str


class FunctionCallOutputItem(BaseModel):
    model_config = ConfigDict(extra="ignore")

    type: Literal["function_call_output"]
    call_id: str = Field(min_length=1, max_length=200)
    output: str | list[ContentPart]


APPROVAL_REQUEST = "switchboard:approval_request"
APPROVAL_RESPONSE = "switchboard:approval_response"


class ApprovalRequestItem(BaseModel):
    """A ``switchboard:approval_request`` output item sent back as input (a client that
    keeps its own history): the spec wants provider items to round-trip."""

    model_config = ConfigDict(extra="ignore")

    type: Literal["switchboard:approval_request"]
    approval_id: str = Field(min_length=1, max_length=MAX_APPROVAL_ID)
    call_id: str = Field(min_length=1, max_length=200)
    name: str = Field(min_length=1, max_length=200)
    arguments: str


class ApprovalResponseItem(BaseModel):
    """The person's decision on one ``switchboard:approval_request`` (the Responses API's
    ``mcp_approval_response``, vendor-prefixed). Unknown fields are refused, unlike other
    items: a misspelt field of a decision that sends an email must not pass unnoticed."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["switchboard:approval_response"]
    approval_id: str = Field(min_length=1, max_length=MAX_APPROVAL_ID)
    approve: StrictBool
    reason: str | None = Field(None, max_length=MAX_APPROVAL_REASON)
    id: str | None = Field(None, max_length=200)  # optional, as on mcp_approval_response


APPROVAL_RESPONSE_FIELDS = "type, approval_id, approve and reason"


def _item_kind(value: Any) -> object:
    # A message may leave out its type ({"role": "user", "content": "hi"}). The tag is what
    # the client sent, whatever its type: pydantic reports one that names no item type.
    if isinstance(value, dict):
        return value.get("type", "message")
    return getattr(value, "type", None)


InputItem = Annotated[
    Annotated[MessageItem, Tag("message")]
    | Annotated[FunctionCallItem, Tag("function_call")]
    | Annotated[FunctionCallOutputItem, Tag("function_call_output")]
    | Annotated[ApprovalRequestItem, Tag(APPROVAL_REQUEST)]
    | Annotated[ApprovalResponseItem, Tag(APPROVAL_RESPONSE)],
    Discriminator(_item_kind),
]


class FunctionToolRef(BaseModel):
    model_config = ConfigDict(extra="ignore")

    type: Literal["function"]
    name: str = Field(min_length=1, max_length=200)


class AllowedTools(BaseModel):
    model_config = ConfigDict(extra="ignore")

    type: Literal["allowed_tools"]
    mode: Literal["auto", "required"] = "auto"
    tools: list[FunctionToolRef] = Field(min_length=1, max_length=256)


ToolChoice = (
    Literal["auto", "none", "required"]
    | Annotated[FunctionToolRef | AllowedTools, Field(discriminator="type")]
)


class TextFormat(BaseModel):
    model_config = ConfigDict(extra="ignore")

    type: Literal["text"] = "text"


class TextConfig(BaseModel):
    model_config = ConfigDict(extra="ignore")

    format: TextFormat = Field(default_factory=TextFormat)


class CreateResponse(BaseModel):
    """The request body. Unknown fields are ignored."""

    model_config = ConfigDict(extra="ignore")

    model: str = Field(min_length=1, max_length=200)
    input: str | list[InputItem] = Field(max_length=MAX_ITEMS)
    instructions: str | None = Field(None, max_length=MAX_INSTRUCTIONS)
    previous_response_id: str | None = Field(None, min_length=1, max_length=64)
    tools: list[FunctionToolRef] | None = Field(None, max_length=256)
    tool_choice: ToolChoice = "auto"
    stream: bool = False
    store: bool = True
    metadata: dict[str, Annotated[str, Field(max_length=512)]] | None = Field(None, max_length=16)
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, ge=0, le=1)
    max_output_tokens: int | None = Field(None, ge=16, le=1_000_000)
    parallel_tool_calls: bool = True
    user: str | None = Field(None, max_length=256)
    text: TextConfig | None = None
    truncation: Literal["auto", "disabled"] = "disabled"
    background: Literal[False] = False
    conversation: None = None


# Fields of the body whose refusal deserves a message of its own.
_UNSUPPORTED = {
    "background": "background responses are not supported: omit background or set it to "
    "false, and use stream: true for long answers",
    "conversation": "conversation objects are not supported: chain responses with "
    "previous_response_id instead",
    "text": 'only plain text output is supported (text.format.type "text")',
    "tools": "Switchboard runs its own tools (its connectors): tools may only list some of "
    'them as {"type": "function", "name": …}, to restrict the model to those',
}


_TYPE_BRANCHES = frozenset({"str", "int", "float", "bool", "dict", "list", "none"})


def _param(loc: tuple[Any, ...]) -> str:
    """A pydantic error location as the body path (``input[2].content[0]``): union branch
    names and discriminator tags are pydantic's, not the client's, and are left out."""
    out, skip_tag = "", False
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
            continue
        text = str(part)
        if "[" in text or text in _TYPE_BRANCHES:
            skip_tag = skip_tag or "tagged-union" in text
            continue
        if skip_tag:
            skip_tag = False
            continue
        out += f".{text}" if out else text
    return out or "body"


def parse_request(body: object) -> CreateResponse:
    """The validated request; ``OpenResponsesError`` (400) naming the first bad field."""
    if not isinstance(body, dict):
        raise invalid("the body must be a JSON object", code="invalid_json")
    if "model" not in body:
        raise invalid(
            'model is required (any name, e.g. "switchboard": the server\'s '
            "configured models answer)",
            "model",
            "missing_required_parameter",
        )
    if "input" not in body:
        raise invalid(
            "input is required: a string or a list of input items",
            "input",
            "missing_required_parameter",
        )
    try:
        request = CreateResponse.model_validate(body)
    except ValidationError as exc:
        errors = exc.errors()
        # A union reports one error per branch; the most specific (longest path) says most.
        first = max(errors, key=lambda e: len(e["loc"]))
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
        if message is None:
            message = f"{param}: {first['msg']}"
        raise invalid(message, param) from None
    # Refused before anything runs: it would reach the database as a prompt, an id to
    # look up, or inside the stored response (which echoes instructions and metadata).
    unstorable = unstorable_at(request.model_dump())
    if unstorable is not None:
        where, problem = unstorable
        field = where.rsplit(".", 1)[-1].split("[")[0]  # param says where; this says what
        raise invalid(f"{field} {problem}", where)
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


def _text_of(content: str | list[ContentPart]) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(part.text for part in content if isinstance(part, InputText | OutputText))


def _part(part: ContentPart, role: str) -> dict[str, Any]:
    if isinstance(part, InputText | OutputText):
        return {"type": "input_text", "text": part.text}
    if isinstance(part, Refusal):
        return {"type": "input_text", "text": part.refusal}
    if role != "user":
        raise invalid(f"{role} messages may only contain text", "input")
    return part.model_dump(exclude_none=True)


def turn_input(request: CreateResponse, max_prompt_chars: int) -> TurnInput:
    """The SDK input items and the prompt; ``OpenResponsesError`` for what cannot run."""
    items = (
        [MessageItem(role="user", content=request.input)]
        if isinstance(request.input, str)
        else list(request.input)
    )
    called: set[str] = set()
    answered: set[str] = set()
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
                    parts = [_part(part, item.role) for part in item.content]
                except OpenResponsesError as exc:
                    exc.param = f"{where}.content"
                    raise
                out.append({"type": "message", "role": item.role, "content": parts})
        elif isinstance(item, FunctionCallItem):
            if item.call_id in called:
                raise invalid(f"function_call {item.call_id!r} appears twice", where)
            called.add(item.call_id)
            out.append(
                {
                    "type": "function_call",
                    "call_id": item.call_id,
                    "name": item.name,
                    "arguments": item.arguments,
                }
            )
        elif isinstance(item, ApprovalRequestItem):
            # A replayed request that was never answered in this conversation: the model
            # reads the call and that it did not run (a model API refuses a call without
            # an output), as after a paused turn that was superseded.
            if item.call_id in called:
                raise invalid(
                    f"the call {item.call_id!r} of this approval request appears twice", where
                )
            called.add(item.call_id)
            answered.add(item.call_id)
            out += [
                {
                    "type": "function_call",
                    "call_id": item.call_id,
                    "name": item.name,
                    "arguments": item.arguments,
                },
                {"type": "function_call_output", "call_id": item.call_id, "output": NOT_RUN},
            ]
        elif isinstance(item, ApprovalResponseItem):
            raise invalid(f"{APPROVAL_RESPONSE} items must be the whole input", where)
        else:
            if item.call_id not in called:
                raise invalid(
                    f"function_call_output for {item.call_id!r} has no function_call "
                    "before it in input: Switchboard runs its tools itself, so no "
                    "call ever waits for a client's result",
                    where,
                )
            if item.call_id in answered:
                raise invalid(f"function_call {item.call_id!r} has a second output", where)
            answered.add(item.call_id)
            output = item.output if isinstance(item.output, str) else _text_of(item.output)
            out.append({"type": "function_call_output", "call_id": item.call_id, "output": output})
    unanswered = sorted(called - answered)
    if unanswered:
        raise invalid(
            f"function_call {unanswered[0]!r} has no function_call_output in input; "
            "send each replayed call with its output",
            "input",
        )
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
    return TurnInput(prompt=prompt, items=out)
