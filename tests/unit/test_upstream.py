"""app.llm.upstream's pure parts: what counts as a vendor item, and the model input filter
that keeps them from every model (for histories stored before they were dropped at the
source, and any other way one could get there)."""

from __future__ import annotations

from typing import Any, cast

from agents import Agent
from agents.items import TResponseInputItem
from agents.run_config import CallModelData, ModelInputData

from app.llm.upstream import drop_vendor_items, is_vendor_type


def test_vendor_types_are_the_prefixed_ones() -> None:
    assert is_vendor_type("acme:telemetry_chunk")
    assert is_vendor_type("switchboard:tool_call")
    for kind in ("message", "function_call", "reasoning", None, 3):
        assert not is_vendor_type(kind)


def test_no_model_is_sent_a_vendor_item() -> None:
    items = cast(
        "list[TResponseInputItem]",
        [
            {"role": "user", "content": "hello"},
            {"id": "acme_1", "type": "acme:telemetry_chunk", "chunk": "gpu=0.93"},
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "ok"},
        ],
    )
    data: CallModelData[Any] = CallModelData(
        model_data=ModelInputData(input=items, instructions="be brief"),
        agent=Agent(name="Switchboard"),
        context=None,
    )
    filtered = drop_vendor_items(data)
    assert filtered.instructions == "be brief"
    assert [i.get("type", "message") for i in filtered.input] == [  # type: ignore[union-attr]
        "message",
        "function_call",
        "function_call_output",
    ]
