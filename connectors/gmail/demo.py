"""The Gmail backend interface and its demo implementation (fixture mailbox + per-user state).

The live client (``client.py``) implements ``GmailBackend`` over the Gmail API; the tools
only ever talk to this interface.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from email.utils import format_datetime
from typing import Any, Protocol

from connectors.demo_ids import stable_id
from connectors.gmail.demo_mailbox import ME, build_mailbox
from connectors.gmail.effects import Original, ReplyPlan
from connectors.gmail.mime import addresses_in, reply_subject
from connectors.tooling import ToolError

Email = dict[str, Any]
EMAIL_RE = re.compile(r"^[A-Za-z0-9._%+'-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}$")
# from:alice  subject:"project update"  "exact phrase"  -excluded  word
_TOKEN_RE = re.compile(r'(-?)(?:(\w+):)?(?:"([^"]*)"|(\S+))')


class GmailBackend(Protocol):
    async def inbox(self, max_results: int) -> list[Email]: ...

    async def search(self, query: str, max_results: int) -> list[Email]: ...

    async def get(self, message_id: str) -> Email: ...

    async def send(
        self, to: list[str], subject: str, body: str, cc: list[str], bcc: list[str]
    ) -> Email: ...

    async def account(self) -> str:
        """The address mail is sent from ("" when it is not known)."""
        ...

    async def plan_reply(self, message_id: str) -> ReplyPlan:
        """Who a reply to ``message_id`` goes to, its subject and thread: shown to the
        person before anything is sent, then sent exactly so (``reply``)."""
        ...

    async def reply(self, plan: ReplyPlan, body: str) -> Email: ...


def check_addresses(field: str, addresses: list[str]) -> list[str]:
    cleaned = [address.strip() for address in addresses if address.strip()]
    for address in cleaned:
        if not EMAIL_RE.match(address):
            raise ToolError(
                f"{field} address {address!r} is not a valid email address; "
                "ask the user for the full address"
            )
    return cleaned


class DemoGmailBackend:
    """The fixture mailbox plus this user's sent mail and read flags (in ``state``)."""

    def __init__(self, state: dict[str, Any], today: date) -> None:
        self._sent: list[Email] = state.setdefault("sent", [])
        self._read: set[str] = state.setdefault("read", set())
        self._today = today

    def _all(self) -> list[Email]:
        messages = build_mailbox(self._today) + list(self._sent)
        for message in messages:
            if message["id"] in self._read:
                message["unread"] = False
        messages.sort(key=lambda message: message["date"], reverse=True)
        return messages

    async def inbox(self, max_results: int) -> list[Email]:
        return [m for m in self._all() if m["from"] != ME][:max_results]

    async def search(self, query: str, max_results: int) -> list[Email]:
        matches = [m for m in self._all() if _matches(m, query)]
        return matches[:max_results]

    async def get(self, message_id: str) -> Email:
        message = self._find(message_id)
        self._read.add(message["id"])  # opening a message marks it read, as in Gmail
        return message

    def _find(self, message_id: str) -> Email:
        for message in self._all():
            if message["id"] == message_id.strip():
                return message
        raise ToolError(
            f"no email with id {message_id!r}; list or search the mailbox to find the message id"
        )

    async def account(self) -> str:
        return ME

    async def send(
        self, to: list[str], subject: str, body: str, cc: list[str], bcc: list[str]
    ) -> Email:
        message_id = stable_id("sent", len(self._sent), subject, *to)
        message = self._message(message_id, message_id, to, subject, body, cc, bcc)
        self._sent.append(message)
        return message

    async def plan_reply(self, message_id: str) -> ReplyPlan:
        original = self._find(message_id)
        to = addresses_in(original["to"] if original["from"] == ME else original["from"])
        return ReplyPlan(
            sender=ME,
            to=to,
            cc=[],
            subject=reply_subject(original["subject"]),
            thread_id=original["thread_id"],
            in_reply_to=original["reply_to_id"] or None,
            references=None,
            original=Original(
                id=original["id"],
                sender=original["from"],
                subject=original["subject"],
                # As a Date header reads (the live backend shows the header itself).
                date=format_datetime(datetime.fromisoformat(original["date"])),
            ),
        )

    async def reply(self, plan: ReplyPlan, body: str) -> Email:
        new_id = stable_id("reply", len(self._sent), plan["original"]["id"])
        message = self._message(
            new_id, plan["thread_id"], plan["to"], plan["subject"], body, plan["cc"], []
        )
        self._sent.append(message)
        return message

    def _message(
        self,
        message_id: str,
        thread_id: str,
        to: list[str],
        subject: str,
        body: str,
        cc: list[str],
        bcc: list[str],
    ) -> Email:
        return {
            "subject": subject,
            "from": ME,
            "to": ", ".join(to),
            "markdown": body,
            "text": body,
            "unread": False,
            "id": message_id,
            "thread_id": thread_id,
            "reply_to_id": f"<{message_id}@mail.example.com>",
            "cc": cc,
            "bcc": bcc,
            "date": datetime.now(UTC).replace(microsecond=0).isoformat(),
        }


def _matches(message: Email, query: str) -> bool:
    """A subset of Gmail's search syntax: from: to: cc: subject: is: in: "phrases" -negation."""
    folder = "anywhere"
    for negate, operator, quoted, bare in _TOKEN_RE.findall(query):
        value = (quoted if quoted else bare).lower()
        operator = operator.lower()
        if operator == "in":
            folder = value
            continue
        hit = _token_hit(message, operator, value)
        if hit is None:
            continue
        if hit == bool(negate):
            return False
    if folder == "sent":
        return bool(message["from"] == ME)
    if folder == "inbox":
        return bool(message["from"] != ME)
    return True


def _token_hit(message: Email, operator: str, value: str) -> bool | None:
    """Does one search term match? None for terms that do not filter (unknown is: values)."""
    if operator == "from":
        return value in message["from"].lower()
    if operator == "to":
        return value in message["to"].lower() or any(value in c.lower() for c in message["cc"])
    if operator == "cc":
        return any(value in c.lower() for c in message["cc"])
    if operator == "subject":
        return value in message["subject"].lower()
    if operator == "is":
        if value == "unread":
            return bool(message["unread"])
        if value == "read":
            return not message["unread"]
        return None
    term = f"{operator}:{value}" if operator else value
    haystack = " ".join(
        (message["subject"], message["text"], message["from"], message["to"])
    ).lower()
    return term in haystack
