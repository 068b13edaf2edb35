"""A ``RunAgentInput`` (the AG-UI request body) read into what to run.

A run is one of two things (docs/ag-ui.md):

- a **prompt**: the last message is the person's new ``user`` message. Its text becomes
  the turn's prompt and its id the turn's ``client_message_id``, so the same message never
  runs twice. The thread's history is the chat's own, kept by the server: the earlier
  messages a client sends along are its copy of it and are not read again.
- a **resume**: ``resume`` answers the interrupts that paused the thread's turn, one entry
  for each, ``resolved`` with ``{"approved": true|false, "reason"?}`` or ``cancelled`` (a
  rejection). The messages are not read.

What is wrong with the request itself is a 400 (``ApiError``) naming the field. A resume
payload that does not fit the interrupt's ``responseSchema`` is an ``InterruptError``,
which the endpoint answers with ``RUN_ERROR`` as the AG-UI interrupt rules ask.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any

from ag_ui.core import ResumeEntry, RunAgentInput, TextPart, UserMessage
from pydantic import BaseModel, ConfigDict, Field, ValidationError, WithJsonSchema

from app.errors import ApiError
from websocket.protocol import (
    CHAT_ID,
    CHAT_ID_PATTERN,
    MAX_APPROVAL_REASON,
    MAX_CLIENT_MESSAGE_ID,
    unstorable_at,
)

MAX_RUN_ID = 200  # echoed on RUN_STARTED and RUN_FINISHED, never stored
EXAMPLE = (
    '{"threadId": "t1", "runId": "r1", '
    '"messages": [{"id": "m1", "role": "user", "content": "find sushi in Boston"}]}'
)


class InterruptError(Exception):
    """A request that breaks the AG-UI interrupt rules (an unanswered, unknown, decided or
    expired interrupt, a payload that does not fit): answered with ``RUN_ERROR``.

    ``interrupts`` are the thread's open interrupts, when the client needs their ids to go
    on (``approval_required`` payloads)."""

    def __init__(
        self, code: str, message: str, interrupts: tuple[dict[str, Any], ...] = ()
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.interrupts = interrupts


@dataclass(frozen=True)
class Prompt:
    text: str
    message_id: str


@dataclass(frozen=True)
class Answer:
    """The person's decision on one interrupt (an approval id)."""

    interrupt_id: str
    approve: bool
    reason: str | None


@dataclass(frozen=True)
class RunRequest:
    thread_id: str
    run_id: str
    prompt: Prompt | None = None  # exactly one of prompt and answers
    answers: tuple[Answer, ...] = field(default=())


class ApprovalPayload(BaseModel):
    """The ``payload`` of a ``resolved`` resume entry: the interrupt's ``responseSchema``."""

    model_config = ConfigDict(strict=True, extra="forbid")

    approved: bool
    reason: str | None = Field(default=None, max_length=MAX_APPROVAL_REASON)


# The interrupt's responseSchema, as sent to clients (app.agui.events).
RESPONSE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approved": {"type": "boolean"},
        "reason": {
            "type": "string",
            "maxLength": MAX_APPROVAL_REASON,
            "description": "Why, when declining; the assistant is told.",
        },
    },
    "required": ["approved"],
    "additionalProperties": False,
}


class ServedRunAgentInput(RunAgentInput):
    """``RunAgentInput`` as ``/openapi.json`` describes it: with the ids this server takes
    (``parse_run`` checks them; parsing itself uses ``RunAgentInput``)."""

    thread_id: Annotated[
        str,
        WithJsonSchema(
            {
                "type": "string",
                "pattern": CHAT_ID_PATTERN,
                "description": "The chat's id (a UUID is a good choice)",
            }
        ),
    ]
    run_id: Annotated[
        str, WithJsonSchema({"type": "string", "minLength": 1, "maxLength": MAX_RUN_ID})
    ]


def _bad(message: str) -> ApiError:
    return ApiError(400, "invalid_request", message)


def _first_problem(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "body"
    return f"{where}: {first['msg']}"


def parse_run(data: object, max_prompt_chars: int) -> RunRequest:
    """The run a decoded JSON body asks for; raises ``ApiError`` (400) or
    ``InterruptError`` (a resume payload that does not fit)."""
    if not isinstance(data, dict):
        raise _bad(f"the body must be a JSON object (a RunAgentInput) like {EXAMPLE}")
    messages = data.get("messages")
    if isinstance(messages, list):
        # AG-UI's ActivityMessage has a default role, "activity", which its schema leaves
        # out and its union needs to tell the kinds apart: supplied as the schema says.
        data = {
            **data,
            "messages": [
                {"role": "activity", **m}
                if isinstance(m, dict) and "role" not in m and "activityType" in m
                else m
                for m in messages
            ],
        }
    try:
        run = RunAgentInput.model_validate(data)
    except ValidationError as exc:
        raise _bad(
            f"{_first_problem(exc)} (the body must be a RunAgentInput like {EXAMPLE})"
        ) from None
    if not isinstance(run.thread_id, str) or not CHAT_ID.fullmatch(run.thread_id):
        raise _bad(
            f"threadId must match {CHAT_ID_PATTERN}: it is the id of the chat "
            "(a UUID is a good choice)"
        )
    if not isinstance(run.run_id, str) or not 1 <= len(run.run_id) <= MAX_RUN_ID:
        raise _bad(f"runId must be a string of 1..{MAX_RUN_ID} characters")
    if run.resume:
        return RunRequest(run.thread_id, run.run_id, answers=_answers(run.resume))
    return RunRequest(run.thread_id, run.run_id, prompt=_prompt(run, max_prompt_chars))


def _prompt(run: RunAgentInput, max_prompt_chars: int) -> Prompt:
    if not run.messages:
        raise _bad(
            "messages is empty: end it with the person's new message "
            '({"id": ..., "role": "user", "content": "..."})'
        )
    last = run.messages[-1]
    if not isinstance(last, UserMessage):
        role = getattr(last, "role", "?")
        hint = (
            " (Switchboard's tools run on the server; there is no client tool to answer)"
            if role == "tool"
            else ""
        )
        raise _bad(
            f"the last message must be the person's new message (role 'user'), not "
            f"'{role}'{hint}; to answer the interrupts of a paused run send `resume`"
        )
    where = f"messages[{len(run.messages) - 1}]"
    if not 1 <= len(last.id) <= MAX_CLIENT_MESSAGE_ID:
        raise _bad(f"{where}.id must be 1..{MAX_CLIENT_MESSAGE_ID} characters")
    text = _text(last, where)
    if not text.strip():
        raise _bad(f"{where}.content is empty: say something")
    if len(text) > max_prompt_chars:
        raise _bad(
            f"{where}.content is {len(text)} characters; the limit is {max_prompt_chars} "
            "(SWITCHBOARD_MAX_PROMPT_CHARS)"
        )
    unstorable = unstorable_at({"content": text, "id": last.id})
    if unstorable is not None:
        raise _bad(f"{where}.{unstorable[0]} {unstorable[1]}")
    return Prompt(text, last.id)


def _text(message: UserMessage, where: str) -> str:
    if isinstance(message.content, str):
        return message.content
    parts = []
    for index, part in enumerate(message.content):
        if not isinstance(part, TextPart):
            kind = getattr(part, "type", type(part).__name__)
            raise _bad(
                f"{where}.content[{index}] is a {kind!r} part; the agents read text only: "
                "send the message as text parts"
            )
        parts.append(part.text)
    return "\n".join(parts)


def _answers(entries: list[ResumeEntry]) -> tuple[Answer, ...]:
    answers: list[Answer] = []
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        where = f"resume[{index}]"
        if entry.interrupt_id in seen:
            raise InterruptError(
                "invalid_resume", f"{where}: interrupt {entry.interrupt_id!r} is answered twice"
            )
        seen.add(entry.interrupt_id)
        if entry.status == "cancelled":
            answers.append(Answer(entry.interrupt_id, approve=False, reason=None))
            continue
        answers.append(Answer(entry.interrupt_id, *_decision(entry.payload, where)))
    return tuple(answers)


def _decision(payload: Any, where: str) -> tuple[bool, str | None]:
    if isinstance(payload, dict) and "editedArgs" in payload:
        raise InterruptError(
            "invalid_resume",
            f"{where}.payload.editedArgs: a call runs only exactly as the person was "
            "shown it; decline it (approved: false, with a reason) and ask for the change",
        )
    try:
        decision = ApprovalPayload.model_validate(payload)
    except ValidationError as exc:
        raise InterruptError(
            "invalid_resume",
            f"{where}.payload: {_first_problem(exc)}; a resolved entry's payload is "
            '{"approved": true} or {"approved": false, "reason": "..."}',
        ) from None
    reason = (decision.reason or "").strip() or None
    unstorable = unstorable_at(reason)
    if unstorable is not None:
        raise InterruptError("invalid_resume", f"{where}.payload.reason {unstorable[1]}")
    return decision.approved, reason
