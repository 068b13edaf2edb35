"""Model specs: the text of ``SWITCHBOARD_MODEL`` and its per-agent overrides. Pure: no I/O.

Forms (the part before the first ``:`` says which wire protocol is spoken)::

    offline                          the deterministic demo model
    openai:MODEL                     OpenAI's Responses API (needs an API key)
    responses:MODEL@BASE_URL         any server implementing the Open Responses spec
    chat:MODEL@BASE_URL              any Chat Completions server (Ollama, vLLM, LiteLLM, …)

``MODEL`` may itself contain ``:`` (Ollama tags such as ``qwen2.5:7b``); the base URL is
everything after the last ``@`` that starts an ``http://`` or ``https://`` URL, and is the
part the client appends ``/responses`` or ``/chat/completions`` to (usually ending in ``/v1``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

ModelKind = Literal["offline", "openai", "responses", "chat"]

OPENAI_BASE_URL = "https://api.openai.com/v1"
FORMS = "offline, openai:MODEL, responses:MODEL@BASE_URL or chat:MODEL@BASE_URL"
_URL_START = re.compile(r"@(?=https?://)", re.IGNORECASE)
_MODEL_NAME = re.compile(r"^[\w./:+\-]{1,200}$")


@dataclass(frozen=True)
class ModelSpec:
    kind: ModelKind
    model: str = ""
    base_url: str | None = None

    @property
    def is_offline(self) -> bool:
        return self.kind == "offline"

    def __str__(self) -> str:
        if self.kind == "offline":
            return "offline"
        if self.kind == "openai":
            return f"openai:{self.model}"
        return f"{self.kind}:{self.model}@{self.base_url}"


def parse_model_spec(value: str) -> ModelSpec:
    """``"chat:qwen2.5:7b@http://localhost:11434/v1"`` → ``ModelSpec``; ``ValueError`` if bad.

    The messages say what was expected; ``app.settings`` prefixes the variable's name.
    """
    text = value.strip()
    if text.lower() == "offline":
        return ModelSpec("offline")
    kind, colon, rest = text.partition(":")
    kind = kind.lower()
    if not colon or kind not in ("openai", "responses", "chat"):
        raise ValueError(f"expected {FORMS}; got {value!r}")
    if kind == "openai":
        if _URL_START.search(rest):
            raise ValueError(
                "openai:MODEL takes no base URL; for another server use "
                "responses:MODEL@BASE_URL or chat:MODEL@BASE_URL"
            )
        return ModelSpec("openai", _model_name(rest, value))
    parts = _URL_START.split(rest)
    if len(parts) < 2 and "@" in rest:
        raise ValueError(
            f"the base URL after '@' must start with http:// or https://; got {value!r}"
        )
    if len(parts) < 2:
        raise ValueError(
            f"{kind}:MODEL@BASE_URL needs a base URL, e.g. "
            f"{kind}:{rest or 'MODEL'}@http://localhost:11434/v1; got {value!r}"
        )
    model, base_url = "@".join(parts[:-1]), parts[-1]
    return ModelSpec(kind, _model_name(model, value), _base_url(base_url))  # type: ignore[arg-type]


def _model_name(name: str, value: str) -> str:
    name = name.strip()
    if not name:
        raise ValueError(f"the model name is missing in {value!r}")
    if not _MODEL_NAME.match(name):
        raise ValueError(f"{name!r} is not a model name (letters, digits and . _ - / : + only)")
    return name


def _base_url(url: str) -> str:
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{url!r} is not an http(s) URL")
    if parts.username or parts.password:
        # A URL ends up in logs and error messages; a key belongs in its own setting.
        raise ValueError(
            "the base URL must not carry credentials; put the key in SWITCHBOARD_MODEL_API_KEY"
        )
    if parts.query or parts.fragment:
        raise ValueError(f"the base URL {url!r} must not have a query or fragment")
    try:
        parts.port  # noqa: B018 - raises for a port that is not a number
    except ValueError:
        raise ValueError(f"{url!r} has an invalid port") from None
    return url.strip().rstrip("/")


def parse_optional_spec(value: str | None) -> ModelSpec | None:
    """An override setting: empty or unset means "same as SWITCHBOARD_MODEL"."""
    if value is None or not value.strip():
        return None
    return parse_model_spec(value)
