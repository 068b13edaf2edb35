"""What the offline demo model reads: the conversation since the latest prompt, and what
the calling agent was offered (tools and hand-offs). Also the decision types it answers with.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

# ----------------------------------------------------------------------------- the input

ROLE_TOOLS: dict[str, frozenset[str]] = {
    "gmail": frozenset(
        {
            "google_email_inbox",
            "google_email_search",
            "google_email_search_from_email",
            "read_google_email",
            "send_google_email",
            "reply_to_google_email",
        }
    ),
    "plaid": frozenset(
        {"get_accounts_at_plaid", "get_transactions_at_plaid", "get_spending_summary_at_plaid"}
    ),
    "yelp": frozenset(
        {"resolve_user_location", "search_businesses_at_yelp", "get_business_reviews_at_yelp"}
    ),
    "search": frozenset({"search_google"}),
}
TOOL_ROLE = {tool: role for role, tools in ROLE_TOOLS.items() for tool in tools}


@dataclass(frozen=True)
class PastCall:
    call_id: str
    name: str
    arguments: dict[str, Any]
    output: str | None  # None while no output item exists (should not happen in a turn)

    @property
    def is_handoff(self) -> bool:
        return self.name.startswith("transfer_to_")

    @property
    def failed(self) -> bool:
        return self.output is None or self.output.lstrip().startswith(("Error", "An error"))

    @property
    def not_run(self) -> bool:
        """The person declined the call, or its approval expired (websocket.pause)."""
        return (self.output or "").lstrip().startswith("Not run:")


@dataclass(frozen=True)
class Transcript:
    prompt: str  # the latest user message
    calls: tuple[PastCall, ...]  # function calls made since that message, in order
    size: int  # number of input items (makes ids unique within a run)


def _as_dict(item: Any) -> dict[str, Any]:
    if isinstance(item, dict):
        return item
    dump = getattr(item, "model_dump", None)
    return dump(exclude_none=True) if callable(dump) else {}


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(_as_dict(part).get("text", "")) for part in content).strip()
    return ""


def _output_text(output: Any) -> str:
    return output if isinstance(output, str) else _text_of(output)


def read_transcript(model_input: str | Sequence[Any]) -> Transcript:
    if isinstance(model_input, str):
        return Transcript(model_input, (), 1)
    items = [_as_dict(item) for item in model_input]
    start = 0
    prompt = ""
    for index, item in enumerate(items):
        if item.get("role") == "user" and item.get("type", "message") == "message":
            start, prompt = index + 1, _text_of(item.get("content"))
    outputs = {
        item.get("call_id"): _output_text(item.get("output"))
        for item in items[start:]
        if item.get("type") == "function_call_output"
    }
    calls = []
    for item in items[start:]:
        if item.get("type") != "function_call":
            continue
        try:
            arguments = json.loads(item.get("arguments") or "{}")
        except json.JSONDecodeError:
            arguments = {}
        calls.append(
            PastCall(
                str(item.get("call_id")),
                str(item.get("name")),
                arguments if isinstance(arguments, dict) else {},
                outputs.get(item.get("call_id")),
            )
        )
    return Transcript(prompt.strip(), tuple(calls), len(items))


# ----------------------------------------------------------------------------- decisions


@dataclass(frozen=True)
class CallTool:
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Say:
    text: str


Decision = CallTool | Say


@dataclass(frozen=True)
class Offer:
    """What the calling agent was given: its tools (name → JSON schema) and hand-offs."""

    tools: dict[str, dict[str, Any]]
    handoffs: dict[str, str]  # agent name → transfer tool name

    @property
    def roles(self) -> list[str]:
        return [role for role, tools in ROLE_TOOLS.items() if tools & self.tools.keys()]

    def handoff_for(self, role_or_agent: str) -> str | None:
        for agent, tool in self.handoffs.items():
            if agent.lower() == role_or_agent.lower():
                return tool
        return None
