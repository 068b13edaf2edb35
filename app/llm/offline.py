"""The offline demo model: deterministic, no network, streams real Responses events.

It acts as whichever agent calls it (decided from the tools and hand-offs it is offered,
see ``offline_planner``), routes by each agent's description and its connector's offline
hints (``connectors.offline_hints``, handed to ``OfflineModelProvider``), calls tools with
arguments read from the prompt (``offline_generic``, or a connector's own planner), hands
off for multi-part requests and streams a short summary of the tool results, reporting
approximate token usage. What the demo cannot do (the hints' declines) it says so, in the
request's language (``offline_declines``); a long pasted text it does not search for
(``offline_long_text``); every call and answer is cut to size (``offline_bounds``). Knobs: ``delta_delay`` (seconds between streamed deltas, for
benchmarks) and ``words_per_delta``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import AsyncIterator, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, cast

from agents import FunctionTool, Handoff, ModelSettings, Tool, Usage
from agents.agent_output import AgentOutputSchemaBase
from agents.items import ModelResponse, TResponseInputItem, TResponseStreamEvent
from agents.models.interface import Model, ModelProvider, ModelTracing
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseContentPartAddedEvent,
    ResponseContentPartDoneEvent,
    ResponseCreatedEvent,
    ResponseFunctionCallArgumentsDeltaEvent,
    ResponseFunctionCallArgumentsDoneEvent,
    ResponseFunctionToolCall,
    ResponseInProgressEvent,
    ResponseOutputItemAddedEvent,
    ResponseOutputItemDoneEvent,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseTextDeltaEvent,
    ResponseTextDoneEvent,
    ResponseUsage,
)
from openai.types.responses.response_prompt_param import ResponsePromptParam
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

from app.llm.offline_bounds import bounded
from app.llm.offline_continue import continuation
from app.llm.offline_followups import offline_suggestions, offline_title
from app.llm.offline_knowledge import NO_KNOWLEDGE, OfflineKnowledge
from app.llm.offline_planner import decide
from app.llm.offline_transcript import (
    CallTool,
    Decision,
    Offer,
    OfferedHandoff,
    OfferedTool,
    Say,
    handoff_description,
    read_transcript,
)
from connectors.approvals import approval_required
from connectors.caller_tools import is_caller_tool
from connectors.registry import Connector

MODEL_NAME = "offline"
# Follow-ups and titles live in ``offline_followups``; importable from here as before.
__all__ = [
    "MODEL_NAME",
    "OfflineModel",
    "OfflineModelProvider",
    "offline_suggestions",
    "offline_title",
]
OutputItem = ResponseOutputMessage | ResponseFunctionToolCall


def _tokens(text: str) -> int:
    # Roughly four characters per token: the usual rule of thumb for English.
    return max(1, len(text) // 4)


def _digest(*parts: object) -> str:
    return hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:24]


def _offer(tools: Sequence[Tool], handoffs: Sequence[Handoff]) -> Offer:
    offered = {
        tool.name: OfferedTool(
            tool.name,
            tool.description or "",
            tool.params_json_schema,
            needs_approval=approval_required(tool),
            caller=is_caller_tool(tool),
        )
        for tool in tools
        if isinstance(tool, FunctionTool)
    }
    return Offer(
        offered,
        {
            handoff.agent_name: OfferedHandoff(
                handoff.agent_name, handoff.tool_name, handoff_description(handoff.tool_description)
            )
            for handoff in handoffs
        },
    )


class OfflineModel(Model):
    def __init__(
        self,
        delta_delay: float = 0.0,
        words_per_delta: int = 1,
        knowledge: OfflineKnowledge = NO_KNOWLEDGE,
    ) -> None:
        if delta_delay < 0:
            raise ValueError("delta_delay must be >= 0 seconds")
        if words_per_delta < 1:
            raise ValueError("words_per_delta must be >= 1")
        self.delta_delay = delta_delay
        self.words_per_delta = words_per_delta
        self.knowledge = knowledge

    # -------------------------------------------------------------- deciding

    def _respond(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        tools: Sequence[Tool],
        handoffs: Sequence[Handoff],
        tool_choice: object = None,
    ) -> tuple[OutputItem, Usage, str]:
        transcript = read_transcript(input)
        offer, today = _offer(tools, handoffs), datetime.now(UTC).date()
        choice = tool_choice if isinstance(tool_choice, str) else None
        decision: Decision = bounded(
            continuation(
                input, lambda before: decide(read_transcript(before), offer, today, self.knowledge)
            )
            or decide(transcript, offer, today, self.knowledge, choice)
        )
        key = _digest(transcript.size, transcript.prompt, decision)
        item: OutputItem
        if isinstance(decision, CallTool):
            arguments = json.dumps(decision.arguments, separators=(",", ":"), ensure_ascii=False)
            item = ResponseFunctionToolCall(
                id=f"fc_{key}",
                call_id=f"call_{key}",
                type="function_call",
                name=decision.name,
                arguments=arguments,
                status="completed",
            )
            produced = decision.name + arguments
        else:
            assert isinstance(decision, Say)
            item = ResponseOutputMessage(
                id=f"msg_{key}",
                type="message",
                role="assistant",
                status="completed",
                content=[
                    ResponseOutputText(
                        type="output_text", text=decision.text, annotations=[], logprobs=[]
                    )
                ],
            )
            produced = decision.text
        prompt_text = (system_instructions or "") + json.dumps(input, default=str)
        input_tokens, output_tokens = _tokens(prompt_text), _tokens(produced)
        usage = Usage(
            requests=1,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            total_tokens=input_tokens + output_tokens,
        )
        return item, usage, f"resp_{key}"

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None = None,
        conversation_id: str | None = None,
        prompt: ResponsePromptParam | None = None,
    ) -> ModelResponse:
        item, usage, response_id = self._respond(
            system_instructions, input, tools, handoffs, model_settings.tool_choice
        )
        return ModelResponse(output=[item], usage=usage, response_id=response_id)

    # -------------------------------------------------------------- streaming

    async def stream_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None = None,
        conversation_id: str | None = None,
        prompt: ResponsePromptParam | None = None,
    ) -> AsyncIterator[TResponseStreamEvent]:
        item, usage, response_id = self._respond(
            system_instructions, input, tools, handoffs, model_settings.tool_choice
        )
        stream = _EventStream(response_id)
        yield stream.created()
        yield stream.in_progress()
        yield stream.emit(
            ResponseOutputItemAddedEvent(
                type="response.output_item.added",
                output_index=0,
                sequence_number=0,
                item=_in_progress(item),
            )
        )
        if isinstance(item, ResponseOutputMessage):
            part = cast(ResponseOutputText, item.content[0])
            yield stream.emit(
                ResponseContentPartAddedEvent(
                    type="response.content_part.added",
                    item_id=item.id,
                    output_index=0,
                    content_index=0,
                    sequence_number=0,
                    part=ResponseOutputText(
                        type="output_text", text="", annotations=[], logprobs=[]
                    ),
                )
            )
            for delta in self._chunks(part.text):
                await self._pause()
                yield stream.emit(
                    ResponseTextDeltaEvent(
                        type="response.output_text.delta",
                        item_id=item.id,
                        output_index=0,
                        content_index=0,
                        delta=delta,
                        logprobs=[],
                        sequence_number=0,
                    )
                )
            yield stream.emit(
                ResponseTextDoneEvent(
                    type="response.output_text.done",
                    item_id=item.id,
                    output_index=0,
                    content_index=0,
                    text=part.text,
                    logprobs=[],
                    sequence_number=0,
                )
            )
            yield stream.emit(
                ResponseContentPartDoneEvent(
                    type="response.content_part.done",
                    item_id=item.id,
                    output_index=0,
                    content_index=0,
                    part=part,
                    sequence_number=0,
                )
            )
        else:
            for delta in _split_arguments(item.arguments):
                await self._pause()
                yield stream.emit(
                    ResponseFunctionCallArgumentsDeltaEvent(
                        type="response.function_call_arguments.delta",
                        item_id=item.id or "",
                        output_index=0,
                        delta=delta,
                        sequence_number=0,
                    )
                )
            # ``name`` is required by some openai versions and an allowed extra in others.
            yield stream.emit(
                ResponseFunctionCallArgumentsDoneEvent.model_validate(
                    {
                        "type": "response.function_call_arguments.done",
                        "item_id": item.id,
                        "output_index": 0,
                        "arguments": item.arguments,
                        "name": item.name,
                        "sequence_number": 0,
                    }
                )
            )
        yield stream.emit(
            ResponseOutputItemDoneEvent(
                type="response.output_item.done", output_index=0, item=item, sequence_number=0
            )
        )
        yield stream.completed(item, usage)

    def _chunks(self, text: str) -> list[str]:
        # Whitespace stays attached to the word before it, so the deltas join to ``text``.
        words = re.findall(r"\s*\S+\s*", text) or [text]
        size = self.words_per_delta
        return ["".join(words[i : i + size]) for i in range(0, len(words), size)]

    async def _pause(self) -> None:
        if self.delta_delay:
            await asyncio.sleep(self.delta_delay)


def _split_arguments(arguments: str, pieces: int = 3) -> list[str]:
    size = max(1, -(-len(arguments) // pieces))
    return [arguments[i : i + size] for i in range(0, len(arguments), size)] or [""]


def _in_progress(item: OutputItem) -> OutputItem:
    if isinstance(item, ResponseOutputMessage):
        return item.model_copy(update={"content": [], "status": "in_progress"})
    return item.model_copy(update={"arguments": "", "status": "in_progress"})


class _EventStream:
    """Builds one response's events with consecutive ``sequence_number``s."""

    def __init__(self, response_id: str) -> None:
        self._response_id = response_id
        self._sequence = 0

    def emit(self, event: Any) -> TResponseStreamEvent:
        event.sequence_number = self._sequence
        self._sequence += 1
        return cast(TResponseStreamEvent, event)

    def _response(self, output: list[Any], status: str, usage: ResponseUsage | None) -> Response:
        return Response(
            id=self._response_id,
            created_at=0,
            model=MODEL_NAME,
            object="response",
            output=output,
            tool_choice="auto",
            tools=[],
            top_p=None,
            parallel_tool_calls=False,
            status=cast(Any, status),
            usage=usage,
        )

    def created(self) -> TResponseStreamEvent:
        return self.emit(
            ResponseCreatedEvent(
                type="response.created",
                sequence_number=0,
                response=self._response([], "in_progress", None),
            )
        )

    def in_progress(self) -> TResponseStreamEvent:
        return self.emit(
            ResponseInProgressEvent(
                type="response.in_progress",
                sequence_number=0,
                response=self._response([], "in_progress", None),
            )
        )

    def completed(self, item: OutputItem, usage: Usage) -> TResponseStreamEvent:
        response_usage = ResponseUsage(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            total_tokens=usage.total_tokens,
            input_tokens_details=InputTokensDetails.model_validate(
                {"cached_tokens": 0, "cache_write_tokens": 0}
            ),  # field set varies by version
            output_tokens_details=OutputTokensDetails(reasoning_tokens=0),
        )
        return self.emit(
            ResponseCompletedEvent(
                type="response.completed",
                sequence_number=0,
                response=self._response([item], "completed", response_usage),
            )
        )


class OfflineModelProvider(ModelProvider):
    """Every model name maps to one shared ``OfflineModel`` (it keeps no per-run state).

    ``connectors``: the deployment's connectors, whose offline hints the model knows (a
    real model knows the world; this one knows what the connectors declare). Without
    them it still routes and calls tools from their descriptions alone.
    """

    def __init__(
        self,
        delta_delay: float = 0.0,
        words_per_delta: int = 1,
        connectors: Iterable[Connector] = (),
    ) -> None:
        self.knowledge = OfflineKnowledge.of(connectors)
        self._model = OfflineModel(
            delta_delay=delta_delay, words_per_delta=words_per_delta, knowledge=self.knowledge
        )

    def get_model(self, model_name: str | None) -> Model:
        return self._model
