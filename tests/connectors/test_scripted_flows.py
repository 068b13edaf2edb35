"""The scripted model of connectors.testing: a multi-step flow (a hidden lookup feeding a
write tool that waits for approval) run offline through the real Agents SDK runner, the
real tools and the real approval pause and resume."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from agents import Agent, RunContextWrapper

from connectors.context import ChatContext
from connectors.registry import Connector
from connectors.responses import ToolResponse
from connectors.testing import ConnectorContract, Flow, call, harness, reply, run_script
from connectors.tooling import ToolError, connector_tool

CONTACTS = {"bob": {"id": "c-bob", "name": "Bob Stone"}, "ann": {"id": "c-ann", "name": "Ann Lee"}}


@connector_tool(agent_name="Messages", side_effect=False)
async def find_contact(ctx: RunContextWrapper[ChatContext], name: str) -> ToolResponse:
    """Look a contact up by first name (the result is for the model only).

    Args:
        name: The contact's first name, e.g. "Bob".
    """
    contact = CONTACTS.get(name.strip().lower())
    if contact is None:
        raise ToolError(f"no contact named {name!r}")
    return ToolResponse("contact", "Messages", "Contact", contact, display_response=False)


@connector_tool(agent_name="Messages", side_effect=True)
async def send_message(
    ctx: RunContextWrapper[ChatContext], contact_id: str, text: str
) -> ToolResponse:
    """Send a message to a contact.

    Args:
        contact_id: The contact's id, from find_contact.
        text: The message.
    """
    if contact_id not in {contact["id"] for contact in CONTACTS.values()}:
        raise ToolError(f"no contact with id {contact_id!r}; call find_contact first")
    sent = ctx.context.demo.namespace("messages").setdefault("sent", [])
    sent.append({"to": contact_id, "text": text})
    return ToolResponse("message_sent", "Messages", "Message sent", {"to": contact_id})


MESSAGES = Connector(
    name="messages",
    agent_name="Messages",
    display_name="Messages",
    build_agent=lambda settings: Agent[ChatContext](
        name="Messages",
        handoff_description="Sends messages to contacts.",
        tools=[find_contact, send_message],
    ),
    tool_descriptions={"find_contact": "Finding the contact", "send_message": "Sending"},
    response_types=("contact", "message_sent", "error"),
)


class TestMessagesContract(ConnectorContract):
    """The flow's connector is a well-made one: the kit passes it."""

    connector: ClassVar[Connector] = MESSAGES
    sample_arguments: ClassVar[dict[str, dict[str, Any]]] = {
        "find_contact": {"name": "Bob"},
        "send_message": {"contact_id": "c-bob", "text": "Hi"},
    }


def the_contact(flow: Flow) -> dict[str, Any]:
    return {"contact_id": flow.output("find_contact")["response"]["id"], "text": "Running late"}


SCRIPT = [call("find_contact", {"name": "Bob"}), call("send_message", the_contact)]


async def test_an_approved_write_runs_with_the_lookups_result() -> None:
    async with harness() as kit:
        context = kit.context()
        flow = await run_script(
            MESSAGES,
            [*SCRIPT, reply("Told Bob you are running late.")],
            prompt="tell Bob I'm running late",
            approve={"send_message": True},
            context=context,
        )
        sent = context.demo.namespace("messages")["sent"]
    assert flow.tools_called == ["find_contact", "send_message"]
    lookup, write = flow.calls
    assert lookup.hidden and lookup.response_type == "contact"
    assert write.arguments == {"contact_id": "c-bob", "text": "Running late"}
    assert write.response_type == "message_sent" and not write.hidden
    assert flow.asked == ["send_message"] and flow.approvals[0].approved is True
    assert flow.approvals[0].arguments == {"contact_id": "c-bob", "text": "Running late"}
    assert flow.final_text == "Told Bob you are running late."
    assert sent == [{"to": "c-bob", "text": "Running late"}]  # the real tool ran
    assert flow.paused is False


async def test_a_rejected_write_does_not_run_and_the_model_is_told() -> None:
    async with harness() as kit:
        context = kit.context()
        flow = await run_script(
            MESSAGES, [*SCRIPT, reply("I did not send it.")], approve=False, context=context
        )
        sent = context.demo.namespace("messages").get("sent")
    assert flow.tools_called == ["find_contact"]  # the write never ran
    assert sent is None
    assert flow.approvals[0].approved is False
    assert flow.final_text == "I did not send it."
    assert flow.model is not None and flow.model.last_call is not None
    outputs = [
        item.get("output")
        for item in flow.model.last_call.input
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]
    assert any("Not run: the user declined this call" in str(output) for output in outputs)


async def test_an_undecided_approval_leaves_the_run_paused() -> None:
    flow = await run_script(MESSAGES, SCRIPT)  # its own harness, demo mode
    assert flow.paused and flow.tools_called == ["find_contact"]
    assert [(a.tool, a.approved) for a in flow.approvals] == [("send_message", None)]
    assert flow.final_text is None


async def test_a_read_only_flow_asks_nothing() -> None:
    flow = await run_script(MESSAGES, [call("find_contact", {"name": "ann"}), reply("Found Ann.")])
    assert flow.asked == [] and flow.output("find_contact")["response"]["id"] == "c-ann"


async def test_a_script_calling_a_tool_the_agent_lacks_fails_naming_what_it_offers() -> None:
    with pytest.raises(AssertionError, match=r"'delete_contact', which the agent does not offer"):
        await run_script(MESSAGES, [call("delete_contact", {"id": "c-bob"}), reply("Done.")])


async def test_unused_steps_fail() -> None:
    with pytest.raises(AssertionError, match=r"1 scripted step\(s\) were not used"):
        await run_script(MESSAGES, [reply("Nothing to do."), reply("Again.")])


async def test_a_script_that_runs_out_fails_with_the_calls_that_ran() -> None:
    with pytest.raises(AssertionError) as raised:
        await run_script(MESSAGES, [call("find_contact", {"name": "Bob"})])
    message = str(raised.value)
    assert "the scripted run failed after 2 model call(s)" in message
    assert '"tool": "find_contact", "arguments": {"name": "Bob"}' in message


async def test_output_of_a_tool_that_did_not_run_fails_clearly() -> None:
    flow = await run_script(MESSAGES, [reply("Hello.")])
    with pytest.raises(AssertionError, match=r"send_message has not run; the calls that ran: \[\]"):
        flow.output("send_message")
