"""What a send or a reply will do, in the words of its approval card. Pure: no I/O.

The plans are what the tools execute after approval (``connectors.effects``): a reply's
recipients, subject and thread are looked up once, before the person is asked, and sent
exactly as shown.
"""

from __future__ import annotations

from typing import TypedDict

from connectors.effects import Effect


class Original(TypedDict):
    """The email a reply answers, as the person recognises it."""

    id: str
    sender: str
    subject: str
    date: str


class ReplyPlan(TypedDict):
    """Everything a reply needs but its text, resolved from the original email."""

    sender: str  # the account the reply is sent from ("" when the address is unknown)
    to: list[str]
    cc: list[str]
    subject: str
    thread_id: str
    in_reply_to: str | None  # the original's Message-ID header
    references: str | None
    original: Original


class SendPlan(TypedDict):
    sender: str
    to: list[str]
    cc: list[str]
    bcc: list[str]
    subject: str


def send_effect(plan: SendPlan) -> Effect:
    subject = plan["subject"] or "(no subject)"
    return Effect(
        f"send an email to {people(plan['to'])}",
        _headers(plan["sender"], plan["to"], plan["cc"], plan["bcc"], subject),
        dict(plan),
    )


def reply_effect(plan: ReplyPlan) -> Effect:
    original = plan["original"]
    subject = plan["subject"] or "(no subject)"
    answered = f'"{original["subject"] or "(no subject)"}" from {original["sender"] or "?"}'
    if original["date"]:
        answered += f", {original['date']}"
    return Effect(
        f"send a reply to {people(plan['to'])}",
        (
            *_headers(plan["sender"], plan["to"], plan["cc"], [], subject),
            ("In reply to", answered),
        ),
        dict(plan),
    )


def people(addresses: list[str]) -> str:
    """ "a", "a and b", "a and 2 others": the recipients in a summary line."""
    if len(addresses) <= 2:
        return " and ".join(addresses) or "nobody"
    return f"{addresses[0]} and {len(addresses) - 1} others"


def _headers(
    sender: str, to: list[str], cc: list[str], bcc: list[str], subject: str
) -> tuple[tuple[str, str], ...]:
    rows = [("From", sender or "your Google account"), ("To", ", ".join(to))]
    rows += [(label, ", ".join(value)) for label, value in (("Cc", cc), ("Bcc", bcc)) if value]
    rows.append(("Subject", subject))
    return tuple(rows)
