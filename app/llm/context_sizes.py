"""How many tokens a model's context holds, and the chat's budget in it. Pure: no I/O.

``SWITCHBOARD_MODEL_CONTEXT_TOKENS`` wins; without it, the published context windows of
OpenAI's models (matched by name prefix, longest first, so ``gpt-4o-mini`` is not taken
for ``gpt-4``), and ``UNKNOWN_CONTEXT_TOKENS`` for any other model: a local server's model
may well have less than a hosted one, and too small a budget costs only earlier summaries.
"""

from __future__ import annotations

from app.llm.spec import ModelSpec
from websocket.history_budget import Budget

UNKNOWN_CONTEXT_TOKENS = 32_768
# The offline demo model has no limit; a large budget keeps its chats like a real one's.
OFFLINE_CONTEXT_TOKENS = 128_000
MAX_ANSWER_RESERVE = 16_384

# Prefix of the model name → its context window (what its requests may hold in all).
KNOWN_CONTEXT_TOKENS: dict[str, int] = {
    "gpt-3.5-turbo": 16_385,
    "gpt-4": 8_192,
    "gpt-4-32k": 32_768,
    "gpt-4-turbo": 128_000,
    "gpt-4o": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-4.5": 128_000,
    # GPT-5: 400,000 in all, of which the input may take 272,000.
    "gpt-5": 272_000,
    "o1": 200_000,
    "o1-mini": 128_000,
    "o3": 200_000,
    "o4-mini": 200_000,
}


def context_tokens(spec: ModelSpec) -> int:
    """The context window of the model ``spec`` names, as far as it is known here."""
    if spec.is_offline:
        return OFFLINE_CONTEXT_TOKENS
    name = spec.model.rsplit("/", 1)[-1].lower()  # "openai/gpt-4o" on a proxy
    for prefix in sorted(KNOWN_CONTEXT_TOKENS, key=len, reverse=True):
        if name == prefix or name.startswith(prefix + "-"):
            return KNOWN_CONTEXT_TOKENS[prefix]
    return UNKNOWN_CONTEXT_TOKENS


def chat_budget(
    specs: list[ModelSpec], context: int | None = None, answer_reserve: int | None = None
) -> Budget:
    """The budget of a chat whose history goes to each of ``specs`` (the orchestrator's
    and the connector agents' models): the smallest of their contexts, unless ``context``
    (the setting) says; the answer's reserve likewise."""
    window = context if context is not None else min(context_tokens(spec) for spec in specs)
    reserve = answer_reserve if answer_reserve is not None else min(MAX_ANSWER_RESERVE, window // 8)
    if reserve >= window:
        raise ValueError(
            f"SWITCHBOARD_ANSWER_RESERVE_TOKENS ({reserve}) must be less than the model's "
            f"context ({window} tokens)"
        )
    return Budget(context_tokens=window, answer_tokens=reserve)
