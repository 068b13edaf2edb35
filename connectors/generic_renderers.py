"""What the model reads for the generic response types any connector may return (docs/
connectors.md): account cards, links it opens, errors, files, links and texts. Pure."""

from __future__ import annotations

import re
from collections.abc import Iterator, Set
from typing import Any

from connectors.rendering import Part, Rendering, Unreadable, register_type, source_of
from connectors.responses import RESPONSE_CLASSES, AccountNeeded, register_response_class
from connectors.text import dumps, one_line, size


class _AccountCardTypes(Set[str]):
    """The response types of every "Connect your account" card registered so far: the
    generic ``account_needed`` and each connector's own (``register_account_card``)."""

    def _types(self) -> frozenset[str]:
        return frozenset(
            name for name, cls in RESPONSE_CLASSES.items() if issubclass(cls, AccountNeeded)
        )

    def __contains__(self, item: object) -> bool:
        cls = RESPONSE_CLASSES.get(item) if isinstance(item, str) else None
        return cls is not None and issubclass(cls, AccountNeeded)

    def __iter__(self) -> Iterator[str]:
        return iter(self._types())

    def __len__(self) -> int:
        return len(self._types())

    def __repr__(self) -> str:
        return f"ACCOUNT_NEEDED_TYPES({sorted(self._types())})"


#: The "Connect your account" cards, whatever connector shows them (a live view).
ACCOUNT_NEEDED_TYPES: Set[str] = _AccountCardTypes()
# How every agent recognises a failure (connectors.instructions): text starting "Error".
ERROR_PREFIX = re.compile(r"Error\b")


def render_account_needed(data: dict[str, Any]) -> str:
    payload = data.get("response")
    connector = one_line(payload.get("connector")) if isinstance(payload, dict) else ""
    card = one_line(data.get("friendly_name")) or "Connect account"
    agent = one_line(data.get("agent_name")) or connector or "service"
    card_class = RESPONSE_CLASSES.get(str(data.get("response_type")))
    label = getattr(card_class, "account_label", None)
    what = label if isinstance(label, str) and label else f"{agent} account"
    return (
        f"The user has not connected their {what} yet, so this cannot be done now. "
        f'A "{card}" card with a connect button is shown to them in the chat: ask them '
        "to connect the account there, then try again."
    )


def render_open_url(data: dict[str, Any]) -> str:
    payload = data.get("response")
    url = one_line(payload.get("url")) if isinstance(payload, dict) else one_line(payload)
    if not url:
        raise Unreadable
    if data.get("response_type") == "open_tab":
        return f"Opened {url} in a new browser tab for the user."
    return f"Offered the user a link to open {url}."


def error_text(data: dict[str, Any]) -> str:
    """The failure as the model reads it: the message, starting with "Error"."""
    payload = data.get("response")
    message = data.get("error_message")
    if not isinstance(message, str) or not message.strip():
        if isinstance(payload, str):
            message = payload
        elif isinstance(payload, dict) and isinstance(payload.get("message"), str):
            message = payload["message"]
        else:
            message = dumps(payload) if payload not in (None, "", [], {}) else "unknown error"
    message = message.strip() or "unknown error"
    return message if ERROR_PREFIX.match(message) else f"Error: {message}"


def render_file(data: dict[str, Any]) -> Rendering:
    payload = data.get("response")
    if not isinstance(payload, dict):
        raise Unreadable
    name = one_line(payload.get("name"), 200) or "(unnamed)"
    details = [
        part for part in (one_line(payload.get("mime_type")), size(payload.get("size"))) if part
    ]
    text = f"File: {name}" + (f" ({', '.join(details)})" if details else "")
    if one_line(payload.get("url")):
        text += f" at {one_line(payload.get('url'))}"
    return [Part(text, source_of(str(data.get("response_type"))))]


def render_link(data: dict[str, Any]) -> Rendering:
    payload = data.get("response")
    if not isinstance(payload, dict) or not one_line(payload.get("url")):
        raise Unreadable
    url, title = one_line(payload["url"]), one_line(payload.get("title"), 200)
    text = f"Link: {title} — {url}" if title and title != url else f"Link: {url}"
    description = one_line(payload.get("description"), 500)
    text = f"{text}\n{description}" if description else text
    return [Part(text, source_of(str(data.get("response_type"))))]


def render_text(data: dict[str, Any]) -> Rendering:
    payload = data.get("response")
    if not isinstance(payload, str):
        raise Unreadable
    return [Part(payload, source_of(str(data.get("response_type"))))]


def register_account_card(*cards: type[AccountNeeded]) -> None:
    """Register a connector's own connect cards (subclasses of ``AccountNeeded``, from its
    folder): rebuilt from storage as themselves, read by the model as a connect card."""
    for card in cards:
        if not issubclass(card, AccountNeeded):
            raise TypeError(f"{card.__name__} is not an AccountNeeded card")
        register_response_class(card)
        register_type(card.response_type_name, render=render_account_needed, source=None)


register_type(AccountNeeded.response_type_name, render=render_account_needed, source=None)
register_type("open_window", "open_tab", render=render_open_url, source=None)
register_type("error", render=error_text, source=None)
register_type("file", render=render_file)
register_type("link", render=render_link)
register_type("text", render=render_text)
