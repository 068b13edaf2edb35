"""Gmail API messages ↔ the seed-000 email dict, and RFC 2822 messages to send. Pure.

A ``format=full`` message has a MIME tree in ``payload``: each part has ``mimeType``,
``headers``, ``body.data`` (base64url of the part's bytes, transfer encoding already
undone, still in the part's charset) and ``parts``. Attachments have a ``filename`` and a
``body.attachmentId`` instead of data.
"""

from __future__ import annotations

import base64
import binascii
import html
import re
from datetime import UTC, datetime
from email.header import decode_header, make_header
from email.message import EmailMessage
from email.policy import SMTP
from email.utils import formataddr, formatdate, getaddresses, parseaddr, parsedate_to_datetime
from typing import Any

from connectors.gmail.html_text import html_to_markdown, html_to_text

Email = dict[str, Any]
LIST_BODY_CHARS = 4000  # per message in a listing: enough to summarise, not a newsletter
READ_BODY_CHARS = 50_000
_CHARSET = re.compile(r"charset=\"?([\w.:-]+)\"?", re.I)


def b64url_decode(data: str) -> bytes:
    """Gmail's base64url, with or without padding."""
    return base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))


def decode_header_value(value: str) -> str:
    """A header as text, RFC 2047 encoded-words (``=?utf-8?q?…?=``) decoded."""
    if "=?" not in value:
        return value
    try:
        return str(make_header(decode_header(value)))
    except (LookupError, ValueError, binascii.Error):
        return value


def headers_of(part: dict[str, Any]) -> dict[str, str]:
    """Header name (lower case) → value; the first one wins, as mail readers show."""
    found: dict[str, str] = {}
    for header in part.get("headers") or []:
        name = str(header.get("name", "")).lower()
        if name and name not in found:
            found[name] = decode_header_value(str(header.get("value", "")))
    return found


def _charset(part: dict[str, Any]) -> str:
    content_type = headers_of(part).get("content-type", "")
    match = _CHARSET.search(content_type)
    return match.group(1) if match else "utf-8"


def _part_text(part: dict[str, Any]) -> str | None:
    data = (part.get("body") or {}).get("data")
    if not data:
        return None
    try:
        raw = b64url_decode(str(data))
    except (binascii.Error, ValueError):
        return None
    try:
        return raw.decode(_charset(part), errors="replace")
    except LookupError:  # an unknown charset name
        return raw.decode("utf-8", errors="replace")


def _walk(part: dict[str, Any]) -> list[dict[str, Any]]:
    parts = [part]
    for child in part.get("parts") or []:
        parts.extend(_walk(child))
    return parts


def bodies(payload: dict[str, Any]) -> tuple[str | None, str | None]:
    """The first text/plain and text/html bodies that are not attachments."""
    plain: str | None = None
    rich: str | None = None
    for part in _walk(payload):
        if (
            part.get("filename")
            or "attachment" in headers_of(part).get("content-disposition", "").lower()
        ):
            continue
        mime_type = str(part.get("mimeType", "")).lower()
        if mime_type == "text/plain" and plain is None:
            plain = _part_text(part)
        elif mime_type == "text/html" and rich is None:
            rich = _part_text(part)
    return plain, rich


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def addresses(value: str) -> list[str]:
    return [address for _name, address in getaddresses([value]) if address]


def _date(message: dict[str, Any], headers: dict[str, str]) -> str:
    internal = message.get("internalDate")
    if isinstance(internal, str | int) and str(internal).isdigit():
        moment = datetime.fromtimestamp(int(internal) / 1000, UTC)
    else:
        try:
            moment = parsedate_to_datetime(headers.get("date", "")).astimezone(UTC)
        except (TypeError, ValueError, IndexError):
            moment = datetime.now(UTC)
    return moment.replace(microsecond=0).isoformat()


def to_email(message: dict[str, Any], body_chars: int = LIST_BODY_CHARS) -> Email:
    """A Gmail API message (``format=full``) as the seed-000 email dict."""
    payload = message.get("payload") or {}
    headers = headers_of(payload)
    plain, rich = bodies(payload)
    snippet = html.unescape(str(message.get("snippet", "")))
    # The model reads what the person sees: the HTML part when there is one (a plain part
    # beside it can say something else, which no mail client shows).
    shown = html_to_text(rich).strip() if rich else ""
    text = shown or (plain if plain and plain.strip() else snippet)
    markdown = html_to_markdown(rich) if rich else text
    labels = message.get("labelIds") or []
    return {
        "subject": headers.get("subject", "(no subject)"),
        "from": headers.get("from", ""),
        "to": headers.get("to", ""),
        "markdown": _shorten(markdown.strip(), body_chars),
        "text": _shorten(text.strip(), body_chars),
        "unread": "UNREAD" in labels,
        "id": str(message.get("id", "")),
        "thread_id": str(message.get("threadId", "")),
        "reply_to_id": headers.get("message-id", ""),
        "cc": addresses(headers.get("cc", "")),
        "bcc": addresses(headers.get("bcc", "")),
        "date": _date(message, headers),
    }


def sender_address(value: str) -> str:
    return parseaddr(value)[1]


def addresses_in(header: str) -> list[str]:
    """Every mailbox of an address header ("Ann <a@x>, b@y"), each as a header value."""
    return [formataddr((name, address)) for name, address in getaddresses([header]) if address]


def build_raw(
    *,
    sender: str | None,
    to: list[str],
    subject: str,
    body: str,
    cc: list[str] | None = None,
    bcc: list[str] | None = None,
    in_reply_to: str | None = None,
    references: str | None = None,
) -> str:
    """An RFC 2822 message (CRLF line ends, UTF-8 text/plain) as Gmail's base64url ``raw``.

    Header values with line breaks are refused by ``EmailMessage`` (``ValueError``), which
    is what stops header injection through a subject or an address.
    """
    message = EmailMessage()
    if sender:
        message["From"] = sender
    message["To"] = ", ".join(to)
    if cc:
        message["Cc"] = ", ".join(cc)
    if bcc:
        # Gmail delivers to Bcc recipients and removes the header from the sent copy.
        message["Bcc"] = ", ".join(bcc)
    message["Subject"] = subject
    message["Date"] = formatdate(usegmt=True)
    if in_reply_to:
        message["In-Reply-To"] = in_reply_to
        message["References"] = f"{references} {in_reply_to}".strip() if references else in_reply_to
    message.set_content(body)
    return base64.urlsafe_b64encode(message.as_bytes(policy=SMTP)).decode("ascii")


def reply_subject(subject: str) -> str:
    return subject if subject.lower().startswith("re:") else f"Re: {subject}"
