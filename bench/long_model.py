"""A model that answers every prompt with one long message: the streaming benchmark's load.

It speaks the Responses stream exactly as a real provider does (created, item added,
content part, one ``output_text.delta`` per word, done events, completed), so the SDK
and our pipeline do for each delta what they do for a real model's. ``pace`` (seconds)
is slept before each delta, as a model's tokens arrive one by one; 0 streams flat out.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, cast

from agents import Handoff, ModelSettings, Tool, Usage
from agents.agent_output import AgentOutputSchemaBase
from agents.items import ModelResponse, TResponseInputItem, TResponseStreamEvent
from agents.models.interface import Model, ModelProvider, ModelTracing
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseContentPartAddedEvent,
    ResponseContentPartDoneEvent,
    ResponseCreatedEvent,
    ResponseOutputItemAddedEvent,
    ResponseOutputItemDoneEvent,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseTextDeltaEvent,
    ResponseTextDoneEvent,
)

MESSAGE_ID = "msg_bench_long"


def words(count: int) -> list[str]:
    """The deltas: ``w0 w1 … w{count-1} `` (each word keeps its trailing space)."""
    return [f"w{index} " for index in range(count)]


class LongMessageModel(Model):
    def __init__(self, word_count: int, pace: float = 0.0) -> None:
        if word_count < 1:
            raise ValueError("word_count must be >= 1")
        if pace < 0:
            raise ValueError("pace must be >= 0")
        self.pace = pace
        self.deltas = words(word_count)
        self.text = "".join(self.deltas)

    def _message(self, status: str, text: str | None) -> ResponseOutputMessage:
        content = (
            []
            if text is None
            else [ResponseOutputText(type="output_text", text=text, annotations=[], logprobs=[])]
        )
        return ResponseOutputMessage(
            id=MESSAGE_ID,
            type="message",
            role="assistant",
            status=cast(Any, status),
            content=cast(Any, content),
        )

    def _response(self, status: str, output: list[Any]) -> Response:
        return Response(
            id="resp_bench_long",
            created_at=0,
            model="bench-long",
            object="response",
            output=output,
            tool_choice="auto",
            tools=[],
            top_p=None,
            parallel_tool_calls=False,
            status=cast(Any, status),
        )

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff],
        tracing: ModelTracing,
        **kwargs: Any,
    ) -> ModelResponse:
        return ModelResponse(
            output=[self._message("completed", self.text)],
            usage=Usage(requests=1, output_tokens=len(self.deltas)),
            response_id="resp_bench_long",
        )

    async def stream_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff],
        tracing: ModelTracing,
        **kwargs: Any,
    ) -> AsyncIterator[TResponseStreamEvent]:
        sequence = iter(range(1 << 62))
        done = self._message("completed", self.text)
        part = done.content[0]
        yield ResponseCreatedEvent(
            type="response.created",
            sequence_number=next(sequence),
            response=self._response("in_progress", []),
        )
        yield ResponseOutputItemAddedEvent(
            type="response.output_item.added",
            output_index=0,
            sequence_number=next(sequence),
            item=self._message("in_progress", None),
        )
        yield ResponseContentPartAddedEvent(
            type="response.content_part.added",
            item_id=MESSAGE_ID,
            output_index=0,
            content_index=0,
            sequence_number=next(sequence),
            part=ResponseOutputText(type="output_text", text="", annotations=[], logprobs=[]),
        )
        pace = self.pace
        for delta in self.deltas:
            if pace:
                await asyncio.sleep(pace)
            yield ResponseTextDeltaEvent(
                type="response.output_text.delta",
                item_id=MESSAGE_ID,
                output_index=0,
                content_index=0,
                delta=delta,
                logprobs=[],
                sequence_number=next(sequence),
            )
        yield ResponseTextDoneEvent(
            type="response.output_text.done",
            item_id=MESSAGE_ID,
            output_index=0,
            content_index=0,
            text=self.text,
            logprobs=[],
            sequence_number=next(sequence),
        )
        yield ResponseContentPartDoneEvent(
            type="response.content_part.done",
            item_id=MESSAGE_ID,
            output_index=0,
            content_index=0,
            part=cast(Any, part),
            sequence_number=next(sequence),
        )
        yield ResponseOutputItemDoneEvent(
            type="response.output_item.done",
            output_index=0,
            item=done,
            sequence_number=next(sequence),
        )
        yield ResponseCompletedEvent(
            type="response.completed",
            sequence_number=next(sequence),
            response=self._response("completed", [done]),
        )


class LongMessageProvider(ModelProvider):
    def __init__(self, word_count: int, pace: float = 0.0) -> None:
        self._model = LongMessageModel(word_count, pace)

    def get_model(self, model_name: str | None) -> Model:
        return self._model
