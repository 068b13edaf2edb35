"""Gmail tools: list, search, read, send and reply. Each returns a ToolResponse."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import cast

from agents import RunContextWrapper

from connectors.accounts import require_connection
from connectors.context import ChatContext
from connectors.effects import Effect, effect_of
from connectors.gmail.client import live_backend
from connectors.gmail.demo import DemoGmailBackend, GmailBackend, check_addresses
from connectors.gmail.effects import ReplyPlan, SendPlan, reply_effect, send_effect
from connectors.gmail.responses import GoogleAccountNeededResponse
from connectors.responses import ToolResponse
from connectors.tooling import ToolError, connector_tool

AGENT_NAME = "GMail"
CONNECTOR = "gmail"
TIMEOUT = 20.0  # seconds; the live Gmail API is usually well under a second
MAX_RESULTS = 50


async def backend(ctx: RunContextWrapper[ChatContext]) -> GmailBackend:
    """The live Gmail API or the demo mailbox; the connect card when not connected."""
    context = ctx.context
    credentials = await require_connection(context, CONNECTOR, GoogleAccountNeededResponse())
    if credentials is not None:
        return live_backend(context, credentials)
    return DemoGmailBackend(context.demo.namespace(CONNECTOR), datetime.now(UTC).date())


def _one_line(field: str, value: str) -> str:
    if "\n" in value or "\r" in value:
        raise ToolError(f"the {field} must be a single line")
    return value.strip()


def _limit(max_results: int) -> int:
    return max(1, min(max_results, MAX_RESULTS))


@connector_tool(agent_name=AGENT_NAME, timeout=TIMEOUT, side_effect=False)
async def google_email_inbox(
    ctx: RunContextWrapper[ChatContext], max_results: int = 10
) -> ToolResponse:
    """List the newest emails in the user's Gmail inbox.

    Args:
        max_results: How many emails to return (1-50).
    """
    service = await backend(ctx)
    messages = await service.inbox(_limit(max_results))
    return ToolResponse("google_email_inbox", AGENT_NAME, "Gmail inbox", messages)


@connector_tool(agent_name=AGENT_NAME, timeout=TIMEOUT, side_effect=False)
async def google_email_search(
    ctx: RunContextWrapper[ChatContext], query: str, max_results: int = 10
) -> ToolResponse:
    """Search the user's Gmail with Gmail search syntax.

    Args:
        query: A Gmail query, e.g. `from:alice subject:invoice is:unread`, `in:sent`, or words.
        max_results: How many emails to return (1-50).
    """
    if not query.strip():
        raise ToolError("the search query is empty; give words or operators like from:alice")
    service = await backend(ctx)
    messages = await service.search(query, _limit(max_results))
    return ToolResponse("google_email_search", AGENT_NAME, f"Searching Gmail for {query}", messages)


@connector_tool(agent_name=AGENT_NAME, timeout=TIMEOUT, side_effect=False)
async def google_email_search_from_email(
    ctx: RunContextWrapper[ChatContext], email: str
) -> ToolResponse:
    """List recent emails sent by one address.

    Args:
        email: The sender's email address, e.g. alice@example.com.
    """
    addresses = check_addresses("sender", [email])
    if not addresses:
        raise ToolError("no sender address given; ask the user whose emails to look for")
    address = addresses[0]
    service = await backend(ctx)
    messages = await service.search(f"from:{address}", 10)
    return ToolResponse(
        "google_email_search_from_email", AGENT_NAME, f"Emails from {address}", messages
    )


@connector_tool(agent_name=AGENT_NAME, timeout=TIMEOUT, side_effect=False)
async def read_google_email(ctx: RunContextWrapper[ChatContext], message_id: str) -> ToolResponse:
    """Open one email (full text) by its id, as listed by the inbox or a search.

    Args:
        message_id: The email's id.
    """
    service = await backend(ctx)
    message = await service.get(message_id)
    card = (
        f"**{message['subject']}**\n\nFrom: {message['from']}  \nTo: {message['to']}  \n"
        f"Date: {message['date']}\n\n{message['markdown']}"
    )
    return ToolResponse(
        "google_email_message",
        AGENT_NAME,
        f"Email: {message['subject']}",
        message,
        display_as=[
            {"type": "markdown", "content": card},
            {"type": "text", "content": message["text"]},
        ],
    )


async def resolve_send(
    ctx: RunContextWrapper[ChatContext],
    to: list[str],
    subject: str,
    body: str,
    cc: list[str] | None = None,
    bcc: list[str] | None = None,
) -> Effect:
    """The email as it will go out: checked addresses, the subject, the sending account."""
    recipients = check_addresses("to", to)
    if not recipients:
        raise ToolError("no recipient; ask the user who the email should go to")
    copies, blind = check_addresses("cc", cc or []), check_addresses("bcc", bcc or [])
    subject = _one_line("subject", subject)
    if not body.strip():
        raise ToolError("the email body is empty; write the message first")
    service = await backend(ctx)
    return send_effect(
        SendPlan(
            sender=await service.account(), to=recipients, cc=copies, bcc=blind, subject=subject
        )
    )


@connector_tool(agent_name=AGENT_NAME, timeout=TIMEOUT, side_effect=True, effect=resolve_send)
async def send_google_email(
    ctx: RunContextWrapper[ChatContext],
    to: list[str],
    subject: str,
    body: str,
    cc: list[str] | None = None,
    bcc: list[str] | None = None,
) -> ToolResponse:
    """Send an email from the user's Gmail account.

    Args:
        to: Recipient email addresses.
        subject: The subject line.
        body: The message body (plain text or simple markdown).
        cc: Optional CC addresses.
        bcc: Optional BCC addresses.
    """
    plan = cast(SendPlan, effect_of(ctx).plan)
    service = await backend(ctx)
    await service.send(plan["to"], plan["subject"], body, plan["cc"], plan["bcc"])
    return ToolResponse(
        "send_google_email",
        AGENT_NAME,
        "Sent Email",
        {
            "to": plan["to"],
            "cc": plan["cc"],
            "bcc": plan["bcc"],
            "subject": plan["subject"],
            "body": body,
        },
    )


async def resolve_reply(ctx: RunContextWrapper[ChatContext], message_id: str, body: str) -> Effect:
    """Who the reply goes to (the original's Reply-To or sender), its subject and thread."""
    if not body.strip():
        raise ToolError("the reply is empty; write the reply first")
    service = await backend(ctx)
    return reply_effect(await service.plan_reply(message_id))


@connector_tool(agent_name=AGENT_NAME, timeout=TIMEOUT, side_effect=True, effect=resolve_reply)
async def reply_to_google_email(
    ctx: RunContextWrapper[ChatContext], message_id: str, body: str
) -> ToolResponse:
    """Reply to an email (in the same thread) by its id.

    Args:
        message_id: The id of the email to reply to.
        body: The reply text.
    """
    plan = cast(ReplyPlan, effect_of(ctx).plan)
    service = await backend(ctx)
    sent = await service.reply(plan, body)
    return ToolResponse(
        "reply_to_google_email",
        AGENT_NAME,
        "Sent Reply",
        {
            "to": plan["to"],
            "cc": plan["cc"],
            "bcc": [],
            "subject": plan["subject"],
            "body": body,
            "in_reply_to": plan["original"]["id"],
            "thread_id": sent["thread_id"],
        },
    )


TOOLS = [
    google_email_inbox,
    google_email_search,
    google_email_search_from_email,
    read_google_email,
    send_google_email,
    reply_to_google_email,
]
TOOL_DESCRIPTIONS = {
    "google_email_inbox": "Checking your Gmail inbox",
    "google_email_search": "Searching Gmail",
    "google_email_search_from_email": "Finding emails from a sender",
    "read_google_email": "Opening an email",
    "send_google_email": "Sending an email",
    "reply_to_google_email": "Replying to an email",
}
RESPONSE_TYPES = (
    "google_email_inbox",
    "google_email_search",
    "google_email_search_from_email",
    "google_email_message",
    "send_google_email",
    "reply_to_google_email",
    "google_account_needed",
    "connect_google_account",
    "error",
)
