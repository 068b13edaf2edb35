"""What the model reads for the Gmail connector's results (connectors.rendering). Pure.

Email text is written by its senders: fenced as data, except our own sent confirmation.
"""

from __future__ import annotations

from typing import Any

from connectors.rendering import Part, Rendering, Unreadable, items, numbered, register_type
from connectors.text import SNIPPET_CHARS, one_line

EMAIL_LIST_TYPES = ("google_email_inbox", "google_email_search", "google_email_search_from_email")


def render_email_list(data: dict[str, Any]) -> Rendering:
    empty = f"{one_line(data.get('friendly_name')) or 'Email'}: no emails found."
    return numbered(data, items(data), "email", empty, _email_line)


def _email_line(mail: dict[str, Any]) -> str:
    line = (
        f"From {one_line(mail.get('from'), 120) or 'unknown sender'}"
        f" — Subject {one_line(mail.get('subject'), 160) or '(no subject)'}"
    )
    date = one_line(mail.get("date"), 40)
    if date:
        line += f" — {date}"
    if mail.get("unread"):
        line += " (unread)"
    if mail.get("id") not in (None, ""):
        line += f" id={one_line(mail.get('id'))}"
    snippet = next(
        (
            mail[key]
            for key in ("snippet", "markdown", "text", "body")
            if isinstance(mail.get(key), str) and mail[key].strip()
        ),
        "",
    )
    if snippet:
        line += f": {one_line(snippet, SNIPPET_CHARS)}"
    return line


def render_email_sent(data: dict[str, Any]) -> Rendering:
    mail = data.get("response")
    if not isinstance(mail, dict):
        raise Unreadable
    fields = [f"to {one_line(mail.get('to')) or '(no recipient)'}"]
    for key in ("cc", "bcc"):
        if one_line(mail.get(key)):
            fields.append(f"{key}: {one_line(mail.get(key))}")
    fields.append(f"subject: {one_line(mail.get('subject'), 160) or '(no subject)'}")
    sent_id = f"id={one_line(mail.get('id'))}" if mail.get("id") not in (None, "") else ""
    body = one_line(mail.get("body"), SNIPPET_CHARS)
    body = f"Body: {body}" if body else ""
    if data.get("response_type") != "reply_to_google_email":
        text = "Email sent " + "; ".join([*fields, sent_id] if sent_id else fields) + "."
        return f"{text}\n{body}" if body else text
    # A reply goes to the original sender, under the original subject: third-party text.
    return [
        Part("Reply sent" + (f"; {sent_id}" if sent_id else "") + ":"),
        Part("; ".join(fields), "email"),
        Part(body),
    ]


register_type(*EMAIL_LIST_TYPES, render=render_email_list, source="emails")
register_type("google_email_message", source="email")
register_type("send_google_email", render=render_email_sent, source=None)
register_type("reply_to_google_email", render=render_email_sent, source="email")
