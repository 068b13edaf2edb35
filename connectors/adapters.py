"""Adapters around ToolResponse dicts (seeds 001, 003, 004). Pure: no I/O.

- ``to_plain_text``: what the *model* reads for a tool result: short readable lines per
  ``response_type`` (never a dump of everything, never ``debug_info``), citations numbered
  ``[n]`` from ``content_chunks``, capped at ``max_chars``. Text written by third parties
  (emails, web results, Yelp listings and reviews, plug-in and remote tools' results) is
  fenced as data (``connectors.untrusted``); our own headings, counts and notes stay outside
  the fence. The ToolResponse dicts themselves (what the UI shows) are never changed.
- ``to_function_call_output``: the OpenAI Responses ``function_call_output`` input item.
- ``pick_display_segment``: which ``display_as`` hint a client renders (docs/rap.md).
- ``coerce_tool_output``: turn *any* tool output into a valid ToolResponse dict, so the
  stream translator never fails a turn on an odd output.

None of these raise on odd payloads: a renderer that cannot read its payload falls back to
compact JSON.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from connectors.responses import (
    ErrorResponse,
    JsonResponse,
    TextResponse,
    ToolResponse,
    describe_problems,
)
from connectors.untrusted import FENCE_CLOSE, defuse_markers, fence, fence_open, strip_invisible

__all__ = [
    "MAX_TEXT_CHARS",
    "OWN_TYPES",
    "coerce_tool_output",
    "pick_display_segment",
    "source_of",
    "to_function_call_output",
    "to_plain_text",
]

#: Default cap on ``to_plain_text`` output (characters).
MAX_TEXT_CHARS = 8000
_MIN_MAX_CHARS = 200
_SNIPPET_CHARS = 240
_REPR_CHARS = 4000
_NOTE_RESERVE = 80

EMAIL_LIST_TYPES = frozenset(
    {"google_email_inbox", "google_email_search", "google_email_search_from_email"}
)
EMAIL_SENT_TYPES = frozenset({"send_google_email", "reply_to_google_email"})
ACCOUNT_NEEDED_TYPES = frozenset(
    {"account_needed", "google_account_needed", "connect_google_account", "connect_plaid_account"}
)
# Results that hold only what we or the user's own bank wrote: never fenced. Every other
# response type, including plug-ins' and unknown ones, is third-party text. Transactions
# are: a merchant's name or a transfer's memo is written by whoever sent the money.
OWN_TYPES = ACCOUNT_NEEDED_TYPES | {
    "send_google_email",
    "plaid_accounts_response",
    "plaid_spending_summary",
    "user_location",
    "open_window",
    "open_tab",
    "error",
}
# What the fence says third-party text is; any other type is a "tool result".
_SOURCES = {
    **dict.fromkeys(EMAIL_LIST_TYPES, "emails"),
    "google_email_message": "email",
    "reply_to_google_email": "email",
    "yelp_search_results": "businesses",
    "yelp_reviews": "reviews",
    "google_search_results": "web results",
    "rap_result": "remote tool",
    "plaid_transactions_response": "transactions",
}
# What the Agents SDK sends the model when a tool raises and no failure function is set.
SDK_TOOL_ERROR_PREFIX = "An error occurred while running the tool"
_ERROR_PREFIX = re.compile(r"Error\b")
_WS = re.compile(r"\s+")


class _Unreadable(Exception):
    """A typed renderer cannot read its payload: fall back to compact JSON."""


_PLAIN = object()  # a _Part's ``value`` when it is plain text, not JSON


@dataclass(frozen=True)
class _Part:
    """A piece of what the model reads. With a ``source`` it is third-party text, fenced as
    data from there; ``value`` is the JSON ``text`` shows, so a cut keeps whole items."""

    text: str
    source: str | None = None
    value: object = _PLAIN


_Rendering = str | list[_Part]


def source_of(response_type: str) -> str | None:
    """What the fence calls a response type's text; None for our own results."""
    return None if response_type in OWN_TYPES else _SOURCES.get(response_type, "tool result")


# --------------------------------------------------------------------------- helpers


def _json_default(value: object) -> str:
    return repr(value)


def _dumps(value: object) -> str:
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=_json_default)
    except (TypeError, ValueError, RecursionError):  # non-str keys, cycles: still readable
        return repr(value)


def _one_line(value: object, limit: int | None = None) -> str:
    """A value as one line of text: whitespace collapsed, optionally shortened with '…'."""
    if value is None:
        return ""
    if isinstance(value, str):
        text = value
    elif isinstance(value, list | tuple):
        text = ", ".join(_one_line(item) for item in value if item not in (None, ""))
    elif isinstance(value, dict):
        if "email" in value or "name" in value:  # {"name": ..., "email": ...}
            name, email = _one_line(value.get("name")), _one_line(value.get("email"))
            text = f"{name} <{email}>" if name and email else (name or email)
        else:
            text = _dumps(value)
    else:
        text = str(value)
    text = _WS.sub(" ", text).strip()
    if limit is not None and len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return text


def _money(amount: object, currency: object) -> str:
    if isinstance(amount, bool) or not isinstance(amount, int | float):
        return _one_line(amount) or "?"
    text = f"{amount:,.2f}"
    return f"{text} {currency}" if isinstance(currency, str) and currency else text


def _size(num: object) -> str:
    if isinstance(num, bool) or not isinstance(num, int | float) or num < 0:
        return ""
    if num < 1024:
        return f"{int(num)} bytes"
    for unit in ("KB", "MB", "GB"):
        num /= 1024
        if num < 1024 or unit == "GB":
            return f"{num:.1f} {unit}"
    return ""  # pragma: no cover


def _plural(count: int, word: str) -> str:
    if count == 1:
        return f"{count} {word}"
    return f"{count} {word}{'es' if word.endswith(('s', 'x', 'ch', 'sh')) else 's'}"


def _items(data: dict[str, Any]) -> list[Any]:
    items = data.get("response")
    if not isinstance(items, list):
        raise _Unreadable
    return items


def _header(data: dict[str, Any], count: int, word: str) -> str:
    name = _one_line(data.get("friendly_name")) or _one_line(data.get("agent_name")) or "Result"
    return f"{name} ({_plural(count, word)}):"


def _compact_json(value: object, budget: int | None) -> str:
    """Compact JSON; over ``budget`` keep whole leading items/keys and say what is left out."""
    head, note = _cut_json(value, budget)
    return f"{head}\n{note}" if note else head


def _cut_json(value: object, budget: int | None) -> tuple[str, str]:
    """``_compact_json`` as the kept JSON and the note saying what is left out ("" if none)."""
    text = _dumps(value)
    if budget is None or len(text) <= budget:
        return text, ""
    room = max(budget - _NOTE_RESERVE, 0)
    if isinstance(value, list | dict) and value:
        entries = (
            [_dumps(item) for item in value]
            if isinstance(value, list)
            else [f"{_dumps(key)}:{_dumps(item)}" for key, item in value.items()]
        )
        kept: list[str] = []
        used = 2
        for entry in entries:
            if used + len(entry) + 1 > room:
                break
            kept.append(entry)
            used += len(entry) + 1
        if kept:
            open_, close = ("[", "]") if isinstance(value, list) else ("{", "}")
            unit = "items" if isinstance(value, list) else "keys"
            return (
                f"{open_}{','.join(kept)}{close}",
                f"[truncated: showing {len(kept)} of {len(entries)} {unit}]",
            )
    return f"{text[:room]}…", f"[truncated: showing {room} of {len(text)} characters]"


def _truncate(text: str, budget: int | None) -> str:
    """Cut ``text`` to ``budget`` chars, at a line break when one is near, with a note."""
    head, note = _cut_text(text, budget)
    return f"{head}\n{note}"[:budget] if note else head


def _cut_text(text: str, budget: int | None) -> tuple[str, str]:
    """``_truncate`` as the kept text and the note saying what is left out ("" if none)."""
    if budget is None or len(text) <= budget:
        return text, ""
    if budget <= _NOTE_RESERVE:
        return text[:budget], ""
    room = budget - _NOTE_RESERVE
    cut = text.rfind("\n", 0, room + 1)
    at_line = cut >= room // 2
    if not at_line:
        cut = room
    omitted = text[cut:].strip("\n") if at_line else text[cut:]
    if at_line:
        lines = omitted.count("\n") + 1
        note = f"[truncated: {_plural(lines, 'more line')}, {len(omitted)} characters not shown]"
    else:
        note = f"[truncated: {len(omitted)} more characters not shown]"
    head = text[:cut].rstrip() if at_line else text[:cut] + "…"
    return head, note


def _within(head: str, note: str, budget: int) -> tuple[str, str]:
    """``head`` and ``note`` shortened so that ``head + "\n" + note`` fits ``budget``."""
    head = head[:budget]
    return head, note[: max(0, budget - len(head) - 1)] if note else ""


# --------------------------------------------------------------------------- fencing


def _clean(value: object, depth: int = 0, active: frozenset[int] = frozenset()) -> object:
    """A JSON value with invisible characters taken out of every string, keys included.

    Raises ``_Unreadable`` on a cycle or absurd nesting, which JSON cannot show anyway.
    """
    if isinstance(value, str):
        return strip_invisible(value)
    if not isinstance(value, list | tuple | dict):
        return value
    if id(value) in active or depth > 200:
        raise _Unreadable
    inner = active | {id(value)}
    if isinstance(value, dict):
        return {
            strip_invisible(key) if isinstance(key, str) else key: _clean(item, depth + 1, inner)
            for key, item in value.items()
        }
    return [_clean(item, depth + 1, inner) for item in value]


def _merged(parts: list[_Part]) -> list[_Part]:
    """Empty parts dropped, neighbouring own plain-text parts joined into one, and every
    text cleaned of invisible characters (before it is measured against a budget)."""
    merged: list[_Part] = []
    for part in parts:
        if not part.text:
            continue
        plain = part.value is _PLAIN
        if plain:
            part = _Part(strip_invisible(part.text), part.source)
        else:
            try:
                value = _clean(part.value)
            except _Unreadable:  # shown as its repr, cleaned as text
                part = _Part(strip_invisible(part.text), part.source)
            else:
                part = _Part(_dumps(value), part.source, value)
        last = merged[-1] if merged else None
        if last and plain and last.value is _PLAIN and last.source is None and part.source is None:
            merged[-1] = _Part(f"{last.text}\n{part.text}")
        else:
            merged.append(part)
    return merged


def _cut(part: _Part, budget: int) -> tuple[str, str]:
    if part.value is _PLAIN:
        return _within(*_cut_text(part.text, budget), budget)
    return _within(*_cut_json(part.value, budget), budget)


def _show(part: _Part, budget: int | None) -> str:
    """One part in at most ``budget`` characters. Third-party text is fenced, and a cut
    keeps the fence whole: the note saying what was left out follows the closing marker."""
    if part.source is None:
        if budget is None or len(part.text) <= budget:
            return defuse_markers(part.text)
        head, note = _cut(part, budget)
        return defuse_markers(f"{head}\n{note}" if note else head)
    whole = fence(part.text, part.source)
    if budget is None or len(whole) <= budget:
        return whole
    room = budget - len(fence_open(part.source)) - len(FENCE_CLOSE) - 2
    if room <= _NOTE_RESERVE // 4:  # no room for any of it: only say so
        return _truncate(f"[truncated: {len(part.text)} characters not shown]", budget)
    head, note = _cut(part, room)
    return fence(head, part.source) + (f"\n{note}" if note else "")


def _fit(parts: list[_Part], budget: int | None) -> str:
    """The parts one per line, in at most ``budget`` characters (later parts cut first)."""
    shown: list[str] = []
    left = budget
    for part in parts:
        if left is not None:
            left -= 1 if shown else 0  # the line break before this part
            if left <= 0:
                break
        text = _show(part, left)
        if text:
            shown.append(text)
            left = None if left is None else left - len(text)
    return "\n".join(shown)


# --------------------------------------------------------------------------- renderers


def _numbered(
    data: dict[str, Any],
    items: list[Any],
    noun: str,
    empty: str,
    describe: Callable[[dict[str, Any]], str],
) -> _Rendering:
    """A header, then one numbered line per item; an item that is not an object as JSON.

    The lines are fenced when the response type's items come from third parties.
    """
    if not items:
        return empty
    lines = []
    for number, item in enumerate(items, 1):
        body = describe(item) if isinstance(item, dict) else _one_line(_dumps(item), _SNIPPET_CHARS)
        lines.append(f"{number}. {body}")
    return [
        _Part(_header(data, len(items), noun)),
        _Part("\n".join(lines), source_of(str(data.get("response_type")))),
    ]


def _render_email_list(data: dict[str, Any]) -> _Rendering:
    empty = f"{_one_line(data.get('friendly_name')) or 'Email'}: no emails found."
    return _numbered(data, _items(data), "email", empty, _email_line)


def _email_line(mail: dict[str, Any]) -> str:
    line = (
        f"From {_one_line(mail.get('from'), 120) or 'unknown sender'}"
        f" — Subject {_one_line(mail.get('subject'), 160) or '(no subject)'}"
    )
    date = _one_line(mail.get("date"), 40)
    if date:
        line += f" — {date}"
    if mail.get("unread"):
        line += " (unread)"
    if mail.get("id") not in (None, ""):
        line += f" id={_one_line(mail.get('id'))}"
    snippet = next(
        (
            mail[key]
            for key in ("snippet", "markdown", "text", "body")
            if isinstance(mail.get(key), str) and mail[key].strip()
        ),
        "",
    )
    if snippet:
        line += f": {_one_line(snippet, _SNIPPET_CHARS)}"
    return line


def _render_email_sent(data: dict[str, Any]) -> _Rendering:
    mail = data.get("response")
    if not isinstance(mail, dict):
        raise _Unreadable
    fields = [f"to {_one_line(mail.get('to')) or '(no recipient)'}"]
    for key in ("cc", "bcc"):
        if _one_line(mail.get(key)):
            fields.append(f"{key}: {_one_line(mail.get(key))}")
    fields.append(f"subject: {_one_line(mail.get('subject'), 160) or '(no subject)'}")
    sent_id = f"id={_one_line(mail.get('id'))}" if mail.get("id") not in (None, "") else ""
    body = _one_line(mail.get("body"), _SNIPPET_CHARS)
    body = f"Body: {body}" if body else ""
    if data.get("response_type") != "reply_to_google_email":
        text = "Email sent " + "; ".join([*fields, sent_id] if sent_id else fields) + "."
        return f"{text}\n{body}" if body else text
    # A reply goes to the original sender, under the original subject: third-party text.
    return [
        _Part("Reply sent" + (f"; {sent_id}" if sent_id else "") + ":"),
        _Part("; ".join(fields), source_of("reply_to_google_email")),
        _Part(body),
    ]


def _account_list(payload: object) -> list[Any]:
    """Plaid accounts from a list of accounts, of balance responses, or one response."""
    if isinstance(payload, dict):
        payload = [payload]
    if not isinstance(payload, list):
        raise _Unreadable
    accounts: list[Any] = []
    for entry in payload:
        if isinstance(entry, dict) and isinstance(entry.get("accounts"), list):
            accounts.extend(entry["accounts"])
        else:
            accounts.append(entry)
    return accounts


def _render_accounts(data: dict[str, Any]) -> _Rendering:
    return _numbered(
        data,
        _account_list(data.get("response")),
        "account",
        "No bank accounts found.",
        _account_line,
    )


def _account_line(account: dict[str, Any]) -> str:
    name = _one_line(account.get("name") or account.get("official_name"), 80) or "Account"
    kind = "/".join(
        _one_line(account.get(key)) for key in ("type", "subtype") if _one_line(account.get(key))
    )
    mask = _one_line(account.get("mask"))
    detail = " ".join(part for part in (kind, f"••{mask}" if mask else "") if part)
    line = name + (f" ({detail})" if detail else "")
    balances = account.get("balances")
    if isinstance(balances, dict):
        currency = balances.get("iso_currency_code") or balances.get("unofficial_currency_code")
        amounts = [
            f"{key} {_money(balances[key], currency)}"
            for key in ("current", "available", "limit")
            if balances.get(key) is not None
        ]
        line += ": " + (", ".join(amounts) if amounts else "balance unknown")
    if account.get("account_id") not in (None, ""):
        line += f" id={_one_line(account.get('account_id'))}"
    return line


def _transaction_line(txn: object) -> str:
    if not isinstance(txn, dict):
        return f"  - {_one_line(_dumps(txn), _SNIPPET_CHARS)}"
    date = _one_line(txn.get("date") or txn.get("authorized_date"))
    if re.match(r"\d{4}-\d{2}-\d{2}T00:00:00", date):
        date = date[:10]
    name = _one_line(txn.get("name") or txn.get("merchant_name"), 100) or "(no description)"
    currency = txn.get("iso_currency_code") or txn.get("unofficial_currency_code")
    line = "  - " + " ".join(
        part for part in (date, name, _money(txn.get("amount"), currency)) if part
    )
    category = txn.get("category")
    if isinstance(category, list) and category:
        line += f" [{' > '.join(_one_line(c) for c in category)}]"
    elif isinstance(txn.get("personal_finance_category"), dict):
        primary = _one_line(txn["personal_finance_category"].get("primary"))
        if primary:
            line += f" [{primary}]"
    if txn.get("pending"):
        line += " (pending)"
    return line


def _render_transactions(data: dict[str, Any]) -> _Rendering:
    payload = data.get("response")
    if isinstance(payload, list):
        payload = {"": {"transactions": payload}}
    if not isinstance(payload, dict):
        raise _Unreadable
    if not payload:
        return "No transactions found."
    lines: list[str] = []
    for account_id, account in payload.items():
        if not isinstance(account, dict) or not isinstance(account.get("transactions"), list):
            raise _Unreadable
        txns = account["transactions"]
        name = _one_line(account.get("account_name") or account.get("account_official_name"), 80)
        title = name or "Transactions"
        if account_id:
            title += f" (id={account_id})"
        lines.append(f"{title}: {_plural(len(txns), 'transaction')}")
        lines.extend(_transaction_line(txn) for txn in txns)
    # Merchant names and memos are written by whoever took or sent the money.
    return [_Part("\n".join(lines), "transactions")]


def _render_businesses(data: dict[str, Any]) -> _Rendering:
    empty = f"{_one_line(data.get('friendly_name')) or 'Search'}: no businesses found."
    return _numbered(data, _items(data), "business", empty, _business_line)


def _business_line(biz: dict[str, Any]) -> str:
    facts: list[str] = []
    if biz.get("rating") is not None:
        rating = f"rating {_one_line(biz.get('rating'))}"
        count = biz.get("review_count")
        if isinstance(count, int) and not isinstance(count, bool):
            rating += f" ({_plural(count, 'review')})"
        facts.append(rating)
    if _one_line(biz.get("price")):
        facts.append(_one_line(biz.get("price")))
    categories = biz.get("categories")
    if isinstance(categories, list) and categories:
        facts.append(
            ", ".join(_one_line(c.get("title") if isinstance(c, dict) else c) for c in categories)
        )
    if biz.get("is_closed") is True:
        facts.append("closed")
    line = _one_line(biz.get("name"), 100) or "(unnamed)"
    if facts:
        line += " — " + ", ".join(facts)
    location = biz.get("location")
    address = ""
    if isinstance(location, dict):
        address = _one_line(location.get("display_address")) or _one_line(
            [location.get(key) for key in ("address1", "city", "state", "zip_code")]
        )
    elif location:
        address = _one_line(location)
    address = address or _one_line(biz.get("address"))
    if address:
        line += f" — {address}"
    phone = _one_line(biz.get("display_phone") or biz.get("phone"))
    if phone:
        line += f" — {phone}"
    if biz.get("id") not in (None, ""):
        line += f" id={_one_line(biz.get('id'))}"
    return line


def _render_reviews(data: dict[str, Any]) -> _Rendering:
    return _numbered(data, _items(data), "review", "No reviews found.", _review_line)


def _review_line(review: dict[str, Any]) -> str:
    user = review.get("user")
    author = _one_line(user.get("name") if isinstance(user, dict) else user) or "anonymous"
    line = f"rating {_one_line(review.get('rating')) or '?'} by {author}"
    created = _one_line(review.get("time_created"))
    if created:
        line += f" ({created[:10]})"
    return line + f": {_one_line(review.get('text'), 600) or '(no text)'}"


def _citations(chunks: list[Any]) -> list[str]:
    lines = []
    for number, chunk in enumerate(chunks, 1):
        if not isinstance(chunk, dict):
            lines.append(f"[{number}] {_one_line(_dumps(chunk), _SNIPPET_CHARS)}")
            continue
        title = _one_line(chunk.get("title"), 160) or "(untitled)"
        url = _one_line(chunk.get("url"))
        line = f"[{number}] {title}" + (f" — {url}" if url else "")
        snippet = _one_line(chunk.get("snippet"), _SNIPPET_CHARS * 2)
        lines.append(f"{line}\n    {snippet}" if snippet else line)
    return lines


def _render_search(data: dict[str, Any]) -> _Rendering:
    chunks = data.get("content_chunks")
    if isinstance(chunks, list) and chunks:
        return []  # the numbered content_chunks are the body (added by to_plain_text)
    items = _items(data)
    if not items:
        return "No search results."
    results = [
        {
            "title": item.get("title"),
            "url": item.get("url") or item.get("link"),
            "snippet": item.get("snippet") or item.get("description"),
        }
        if isinstance(item, dict)
        else item
        for item in items
    ]
    name = _one_line(data.get("friendly_name")) or "Search results"
    return [
        _Part(f"{name} (cite as [n]):"),
        _Part("\n".join(_citations(results)), source_of("google_search_results")),
    ]


def _render_account_needed(data: dict[str, Any]) -> str:
    payload = data.get("response")
    connector = _one_line(payload.get("connector")) if isinstance(payload, dict) else ""
    card = _one_line(data.get("friendly_name")) or "Connect account"
    agent = _one_line(data.get("agent_name")) or connector or "service"
    what = {"gmail": "Google account", "google": "Google account", "plaid": "bank account"}.get(
        connector.lower(), f"{agent} account"
    )
    return (
        f"The user has not connected their {what} yet, so this cannot be done now. "
        f'A "{card}" card with a connect button is shown to them in the chat: ask them '
        "to connect the account there, then try again."
    )


def _render_open_url(data: dict[str, Any]) -> str:
    payload = data.get("response")
    url = _one_line(payload.get("url")) if isinstance(payload, dict) else _one_line(payload)
    if not url:
        raise _Unreadable
    if data.get("response_type") == "open_tab":
        return f"Opened {url} in a new browser tab for the user."
    return f"Offered the user a link to open {url}."


def _error_message(data: dict[str, Any]) -> str:
    payload = data.get("response")
    message = data.get("error_message")
    if not isinstance(message, str) or not message.strip():
        if isinstance(payload, str):
            message = payload
        elif isinstance(payload, dict) and isinstance(payload.get("message"), str):
            message = payload["message"]
        else:
            message = _dumps(payload) if payload not in (None, "", [], {}) else "unknown error"
    message = message.strip() or "unknown error"
    return message if _ERROR_PREFIX.match(message) else f"Error: {message}"


def _render_error(data: dict[str, Any]) -> str:
    return _error_message(data)


def _render_file(data: dict[str, Any]) -> _Rendering:
    payload = data.get("response")
    if not isinstance(payload, dict):
        raise _Unreadable
    name = _one_line(payload.get("name"), 200) or "(unnamed)"
    details = [
        part for part in (_one_line(payload.get("mime_type")), _size(payload.get("size"))) if part
    ]
    text = f"File: {name}" + (f" ({', '.join(details)})" if details else "")
    if _one_line(payload.get("url")):
        text += f" at {_one_line(payload.get('url'))}"
    return [_Part(text, source_of(str(data.get("response_type"))))]


def _render_link(data: dict[str, Any]) -> _Rendering:
    payload = data.get("response")
    if not isinstance(payload, dict) or not _one_line(payload.get("url")):
        raise _Unreadable
    url, title = _one_line(payload["url"]), _one_line(payload.get("title"), 200)
    text = f"Link: {title} — {url}" if title and title != url else f"Link: {url}"
    description = _one_line(payload.get("description"), 500)
    text = f"{text}\n{description}" if description else text
    return [_Part(text, source_of(str(data.get("response_type"))))]


def _render_text(data: dict[str, Any]) -> _Rendering:
    payload = data.get("response")
    if not isinstance(payload, str):
        raise _Unreadable
    return [_Part(payload, source_of(str(data.get("response_type"))))]


_RENDERERS: dict[str, Callable[[dict[str, Any]], _Rendering]] = {
    **dict.fromkeys(EMAIL_LIST_TYPES, _render_email_list),
    **dict.fromkeys(EMAIL_SENT_TYPES, _render_email_sent),
    **dict.fromkeys(ACCOUNT_NEEDED_TYPES, _render_account_needed),
    "plaid_accounts_response": _render_accounts,
    "plaid_transactions_response": _render_transactions,
    "yelp_search_results": _render_businesses,
    "yelp_reviews": _render_reviews,
    "google_search_results": _render_search,
    "open_window": _render_open_url,
    "open_tab": _render_open_url,
    "error": _render_error,
    "file": _render_file,
    "link": _render_link,
    "text": _render_text,
}


def _as_dict(response: object) -> dict[str, Any]:
    if isinstance(response, ToolResponse):
        return response.to_dict()
    if ToolResponse.is_tool_response(response):
        return response  # type: ignore[return-value]
    if isinstance(response, dict):  # not ToolResponse-shaped: its data, without debug_info
        return {
            "response_type": "json",
            "response": {key: value for key, value in response.items() if key != "debug_info"},
        }
    return coerce_tool_output(response, "Tool")


def to_plain_text(
    response: ToolResponse | dict[str, Any], *, max_chars: int | None = MAX_TEXT_CHARS
) -> str:
    """What the model sees for a tool result. Never includes ``debug_info``.

    Never raises on an odd payload (only on a ``max_chars`` below 200).

    Known ``response_type``s get short numbered lines (ids included so the model can act
    on them); ``content_chunks`` are always listed as ``[n]`` citations; other payloads
    become compact JSON. The result is at most ``max_chars`` long (None: no cap), cut at
    whole lines/items with a ``[truncated: …]`` note.

    Third-party text is fenced (``<external source="emails">`` … ``</external>``; see
    ``OWN_TYPES`` for what is not), one fence per block rather than per field, and a cut
    never drops a closing marker. All text is cleaned of invisible characters, and nothing
    outside a fence can read as a marker.
    """
    if max_chars is not None and max_chars < _MIN_MAX_CHARS:
        raise ValueError(f"max_chars must be at least {_MIN_MAX_CHARS}")
    data = _as_dict(response)
    response_type = str(data.get("response_type"))

    sources: list[_Part] = []
    chunks = data.get("content_chunks")
    if isinstance(chunks, list) and chunks:
        title = "Sources"
        if response_type == "google_search_results":
            title = _one_line(data.get("friendly_name")) or "Search results"
        label = "web results" if response_type == "google_search_results" else "sources"
        sources = _merged(
            [_Part(f"{title} (cite as [n]):"), _Part("\n".join(_citations(chunks)), label)]
        )

    body = _merged(_render(data, response_type))

    extra = data.get("error_message")
    note = ""
    if response_type != "error" and isinstance(extra, str) and extra.strip():
        note = defuse_markers(strip_invisible(_error_message({"error_message": extra})))

    if max_chars is None:
        head = "\n".join(part for part in (_fit(body, None), note) if part)
        return "\n\n".join(part for part in (head, _fit(sources, None)) if part)
    note = _truncate(note, max_chars // 4)
    room = max_chars - (len(note) + 1 if note else 0)
    cited = ""
    if sources:
        wanted, needed = len(_fit(body, None)), len(_fit(sources, None))
        cited = _fit(
            sources,
            needed
            if wanted + needed + 2 <= room
            else min(needed, max(room // 2, room - wanted - 2)),
        )
    text = _fit(body, room - (len(cited) + 2 if cited else 0))
    head = "\n".join(part for part in (text, note) if part)
    return "\n\n".join(part for part in (head, cited) if part)


def _render(data: dict[str, Any], response_type: str) -> list[_Part]:
    """The typed rendering of ``data``, or compact JSON (fenced unless it is our own)."""
    renderer = _RENDERERS.get(response_type)
    if renderer is not None:
        try:
            rendered = renderer(data)
        except Exception:  # any odd payload: show it as compact JSON, never fail the turn
            pass
        else:
            return [_Part(rendered)] if isinstance(rendered, str) else rendered
    payload = data.get("response")
    source = source_of(response_type)
    if isinstance(payload, str):
        return [_Part(payload, source)]
    return [_Part(_dumps(payload), source, payload)]


def to_function_call_output(call_id: str, response: ToolResponse | dict[str, Any]) -> dict:
    """The OpenAI Responses input item for a tool result (``FunctionCallOutput``)."""
    if not isinstance(call_id, str):
        raise TypeError(f"call_id must be a string, got {type(call_id).__name__}")
    if not call_id:
        raise ValueError("call_id must not be empty")
    return {"type": "function_call_output", "call_id": call_id, "output": to_plain_text(response)}


def pick_display_segment(
    segments: list[dict[str, Any]] | None, supported: Iterable[str]
) -> dict[str, Any] | None:
    """The first segment whose type is supported, else the first ``text`` one, else None.

    Segments that are not dicts or have no string ``type`` are skipped (docs/rap.md).
    """
    if not segments or not isinstance(segments, list | tuple):
        return None
    wanted = {kind for kind in supported if isinstance(kind, str)}
    valid = [seg for seg in segments if isinstance(seg, dict) and isinstance(seg.get("type"), str)]
    for segment in valid:
        if segment["type"] in wanted:
            return segment
    return next((segment for segment in valid if segment["type"] == "text"), None)


# --------------------------------------------------------------------------- coercion


def _capped(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [truncated: {len(text) - limit} more characters]"


def _coerce_string(value: str, agent: str) -> dict[str, Any]:
    stripped = value.strip()
    if stripped.startswith("{"):
        try:
            parsed = json.loads(stripped)
        except (ValueError, RecursionError):
            parsed = None
        if ToolResponse.is_tool_response(parsed):
            return _coerce_shaped(parsed, agent)
    if _ERROR_PREFIX.match(stripped):
        message = stripped[len("Error:") :].strip() if stripped.startswith("Error:") else stripped
        return ErrorResponse(agent, message or stripped).to_dict(include_debug=True)
    if stripped.startswith(SDK_TOOL_ERROR_PREFIX):
        return ErrorResponse(agent, stripped).to_dict(include_debug=True)
    return TextResponse(agent, value).to_dict(include_debug=True)


def _coerce_shaped(value: dict[str, Any], agent: str) -> dict[str, Any]:
    try:
        return ToolResponse.from_dict(value).to_dict(include_debug=True)
    except ValidationError as exc:
        reason = describe_problems(exc)
    # Keep what can be kept: the core keys, dropping the invalid optional ones.
    shown = value.get("display_response", True)
    core: dict[str, Any] = {
        key: value[key] for key in ("response_type", "agent_name", "friendly_name", "response")
    }
    core["display_response"] = (
        shown if isinstance(shown, bool) else bool(shown if isinstance(shown, int) else True)
    )
    if isinstance(value.get("error_message"), str):
        core["error_message"] = value["error_message"]
    try:
        return ToolResponse(**core, debug_info={"coerce_error": reason}).to_dict(include_debug=True)
    except (TypeError, ValueError):
        name = value["agent_name"] or agent
        return ErrorResponse(
            name,
            "The tool returned a response that could not be shown.",
            debug_info={"coerce_error": reason},
        ).to_dict(include_debug=True)


def _coerce_exception(exc: BaseException, agent: str) -> dict[str, Any]:
    # The message may hold URLs with keys, SQL, paths...: only the type is shown; the
    # details go to debug_info (persisted, never sent on the socket).
    return ErrorResponse(
        agent,
        f"The {agent} tool failed ({type(exc).__name__}).",
        debug_info={
            "exception_type": type(exc).__name__,
            "exception": _capped(str(exc), _REPR_CHARS),
        },
    ).to_dict(include_debug=True)


def coerce_tool_output(value: object, agent_name: str) -> dict[str, Any]:
    """Turn any tool output into a valid ToolResponse dict; never raises.

    The result is the *persisted* form, so it keeps ``debug_info`` (``to_dict(
    include_debug=True)``); the socket layer strips it (``EventRecord.to_wire``).

    - a ``ToolResponse`` → its dict;
    - a ToolResponse-shaped dict (or a JSON string of one) → validated and normalised
      (key order, unknown keys dropped); if invalid, its core keys with the reason in
      ``debug_info``, else an ``ErrorResponse``;
    - an exception → ``ErrorResponse`` naming only the exception type (details in
      ``debug_info``);
    - a string starting with the word ``Error`` (``"Error: x"`` → message ``x``) or the
      Agents SDK's default tool-failure text → ``ErrorResponse``; any other string →
      ``TextResponse``;
    - a pydantic model → its ``model_dump(mode="json")``, then as below;
    - a dict/list/tuple of JSON → ``JsonResponse`` (a top-level ``debug_info`` key of a
      dict moves to ``debug_info``); None/bool/number → ``TextResponse`` of its JSON;
    - anything else → ``TextResponse`` of its ``repr`` (capped).
    """
    agent = agent_name if isinstance(agent_name, str) and agent_name else "Tool"
    try:
        if isinstance(value, ToolResponse):
            return value.to_dict(include_debug=True)
        if isinstance(value, BaseException):
            return _coerce_exception(value, agent)
        if isinstance(value, str):
            return _coerce_string(value, agent)
        if ToolResponse.is_tool_response(value):
            return _coerce_shaped(value, agent)  # type: ignore[arg-type]
        dump = getattr(value, "model_dump", None)
        if callable(dump) and not isinstance(value, type):
            try:
                dumped = dump(mode="json")
            except Exception:
                dumped = None
            if dumped is not None and dumped is not value:
                return coerce_tool_output(dumped, agent)
        if isinstance(value, dict | list | tuple):
            data: Any = list(value) if isinstance(value, tuple) else value
            debug: dict[str, Any] | None = None
            if isinstance(data, dict) and "debug_info" in data:
                debug = data["debug_info"] if isinstance(data["debug_info"], dict) else None
                data = {key: item for key, item in data.items() if key != "debug_info"}
            try:
                result = JsonResponse(agent, data)
            except (TypeError, ValueError):
                pass
            else:
                if debug is not None:
                    try:
                        result.debug_info = debug  # validated on assignment
                    except ValidationError:
                        pass  # kept out: only the data is shown anyway
                return result.to_dict(include_debug=True)
        elif value is None or isinstance(value, bool | int | float):
            text = json.dumps(value)  # NaN/inf become NaN/Infinity: still readable text
            return TextResponse(agent, text).to_dict(include_debug=True)
        return TextResponse(agent, _capped(repr(value), _REPR_CHARS)).to_dict(include_debug=True)
    except Exception as exc:  # a hostile __repr__/model_dump: still a valid response
        return _coerce_exception(exc, agent)
