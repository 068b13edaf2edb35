"""A turn's memory: the chat's history fitted to the model's context (docs/memory.md).

When a turn starts, the session reads the chat's stored compaction (storage/memory.py) and
the conversation items after it, never the whole chat. If they do not leave the turn its
room (``Budget.history_tokens``), the oldest whole groups of items are folded into the
summary (``Summarise``: the suggestions model, or the offline model's deterministic
summary), and the new compaction is stored for the turns after. Before every model call
the request is checked against the budget again (``fit``, the SDK's
``call_model_input_filter``): a turn whose own tool outputs outgrow their room has its
oldest unsummarised groups left out of that call (never split, never the summary, never
the running turn's items) rather than a request the model would refuse.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from agents import Agent, RunConfig, RunContextWrapper
from agents.run_config import CallModelData, CallModelInputFilter, ModelInputData

from storage.memory import Compaction, MemoryStore
from storage.session import ChatSession
from websocket.history_budget import (
    CHARS_PER_TOKEN,
    ITEM_OVERHEAD_TOKENS,
    KEEP_SHARE,
    Budget,
    drop_to_fit,
    estimate_tokens,
    fold_cut,
    group_spans,
    is_turn_start,
    item_tokens,
)

logger = logging.getLogger("switchboard.memory")

SUMMARY_PREFIX = (
    "Summary of the earlier part of this conversation (its older messages were condensed "
    "to fit the model's context):\n\n"
)
# An instruction's worth for a tool or handoff whose schema is not known here.
HANDOFF_SCHEMA_TOKENS = 20


class Summarise(Protocol):
    """``previous`` summary (None at the first compaction) and the ``items`` folded into
    it → the new summary, of at most ``max_tokens`` (estimated) tokens."""

    async def __call__(
        self, previous: str | None, items: Sequence[Mapping[str, Any]], max_tokens: int
    ) -> str: ...


@dataclass
class MemoryPolicy:
    """What every turn's memory shares: the model's budget and the summariser."""

    budget: Budget
    summarise: Summarise
    # Tool schema tokens per agent (by identity): tools do not change between turns.
    _tools: dict[int, tuple[Agent[Any], int]] = field(default_factory=dict, repr=False)
    _guarded: tuple[RunConfig, RunConfig] | None = field(default=None, repr=False)

    def guarded(self, base: RunConfig) -> RunConfig:
        """``base`` with the guard after its own input filter. The same config serves every
        turn (the guard finds the running turn's memory in a context variable): building
        one per turn cost more than the guard, the SDK validating each."""
        cached = self._guarded
        if cached is None or cached[0] is not base:
            guard = _guard(base.call_model_input_filter)
            cached = self._guarded = (base, replace(base, call_model_input_filter=guard))
        return cached[1]

    def tools_tokens(self, agent: Agent[Any]) -> int:
        """Estimated tokens of the tools (and handoffs) ``agent`` is sent with."""
        cached = self._tools.get(id(agent))
        if cached is not None and cached[0] is agent:
            return cached[1]
        total = 0
        for tool in agent.tools:
            described = {
                "name": getattr(tool, "name", ""),
                "description": getattr(tool, "description", ""),
                "parameters": getattr(tool, "params_json_schema", None),
            }
            total += estimate_tokens(described) + ITEM_OVERHEAD_TOKENS
        for handoff in agent.handoffs:
            name = getattr(handoff, "tool_name", None) or getattr(handoff, "name", "")
            description = getattr(handoff, "tool_description", None) or getattr(
                handoff, "handoff_description", ""
            )
            total += estimate_tokens(f"transfer_to_{name} {description}") + HANDOFF_SCHEMA_TOKENS
        self._tools[id(agent)] = (agent, total)
        return total


# The turn whose model calls the guard fits: set by ``TurnMemory.run_config`` in the
# turn's task, inherited by the SDK's run task.
_running: ContextVar[TurnMemory | None] = ContextVar("switchboard_turn_memory", default=None)


def _guard(inner: CallModelInputFilter | None) -> CallModelInputFilter:
    async def guarded(data: CallModelData[Any]) -> ModelInputData:
        model_data = data.model_data
        if inner is not None:
            filtered = inner(data)
            model_data = await filtered if inspect.isawaitable(filtered) else filtered
        memory = _running.get()
        return memory.fit_or_leave(model_data, data.agent) if memory is not None else model_data

    return guarded


def summary_item(summary: str) -> dict[str, Any]:
    """The summary as the model reads it: a system message before the kept items (every
    provider takes one: Responses, Chat Completions, Open Responses servers)."""
    return {"type": "message", "role": "system", "content": SUMMARY_PREFIX + summary}


def is_summary_item(item: Mapping[str, Any]) -> bool:
    content = item.get("content")
    return (
        item.get("role") == "system"
        and isinstance(content, str)
        and content.startswith(SUMMARY_PREFIX)
    )


def clip(text: str, max_tokens: int) -> str:
    """``text`` cut to at most ``max_tokens`` estimated tokens (a summariser that wrote too
    much must not overflow the budget it was given): after its last whole sentence or line
    that fits, when that keeps at least half of it."""
    limit = max(1, max_tokens) * CHARS_PER_TOKEN
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    end = max(head.rfind(". "), head.rfind("\n"))
    if end >= limit // 2:
        return head[: end + 1].rstrip()
    return head.rstrip() + "…"


class TurnMemory:
    """One turn's reading of the chat's history, and its guard on every model call."""

    def __init__(
        self,
        policy: MemoryPolicy,
        store: MemoryStore,
        session: ChatSession,
        agent: Agent[Any],
        context: Any,
        prompt: str | Sequence[Any],
    ) -> None:
        self.policy, self.store, self.session = policy, store, session
        self.agent, self.context, self.prompt = agent, context, prompt
        self.compaction: Compaction | None = None
        self.compacted = False  # this turn made a new compaction
        self._history: list[dict[str, Any]] | None = None
        # The stored items read, as stored (not fitted), and whether they are all of them.
        self._stored: list[dict[str, Any]] = []
        self._stored_complete = False

    # -- when the turn starts -----------------------------------------------------------

    async def history(self) -> list[dict[str, Any]]:
        """The summary (if any) and the items after it, compacted first when they do not
        leave the turn its room. Read once per run: the stored items do not change while
        it runs (its own are written with its end)."""
        if self._history is None:
            self._history = await self._read()
        return list(self._history)

    def stored_tail(self, limit: int) -> list[dict[str, Any]] | None:
        """The last ``limit`` stored items, from what ``history`` read (None when it did
        not read that far): the SDK reads the tail before each save, and it cannot change
        while the turn runs."""
        if self._history is None or (len(self._stored) < limit and not self._stored_complete):
            return None
        return self._stored[-limit:] if limit else []

    async def _read(self) -> list[dict[str, Any]]:
        compaction, rows = await self.store.history(self.session)
        items = [item for _, item in rows]
        self._stored, self._stored_complete = list(items), compaction is None
        if not items:  # a new chat: nothing to fit
            self.compaction = compaction
            return [summary_item(compaction.summary)] if compaction is not None else []
        budget = self.policy.budget
        room = budget.history_tokens(await self._fixed_tokens())
        tokens = [item_tokens(item) for item in items]
        summary = item_tokens(summary_item(compaction.summary)) if compaction else 0
        if summary + sum(tokens) > room:
            keep = max(0, min(int(room * KEEP_SHARE), room - budget.summary_tokens))
            cut = fold_cut(items, tokens, group_spans(items), keep)
            if cut:
                made = await self._compact(compaction, rows[:cut])
                if made is not None:
                    compaction, items = made, items[cut:]
        self.compaction = compaction
        head = [summary_item(compaction.summary)] if compaction is not None else []
        return head + items

    async def _compact(
        self, previous: Compaction | None, rows: Sequence[tuple[int, dict[str, Any]]]
    ) -> Compaction | None:
        chat_id = self.session.session_id
        # The summary's budget less its framing as an item: what its text may take.
        cap = max(1, self.policy.budget.summary_tokens - item_tokens(summary_item("")))
        try:
            text = await self.policy.summarise(
                previous.summary if previous is not None else None,
                [item for _, item in rows],
                cap,
            )
        except Exception:
            # Without a summary the guard on each call still keeps the request in budget.
            logger.exception("could not summarise the chat's history", extra={"chat_id": chat_id})
            return None
        text = clip(text, cap)  # a summariser that wrote too much is cut
        compaction = Compaction(
            through_item_id=rows[-1][0],
            summary=text,
            summary_tokens=estimate_tokens(text),
            folded_items=(previous.folded_items if previous else 0) + len(rows),
            compactions=(previous.compactions if previous else 0) + 1,
        )
        try:
            await self.store.save(chat_id, compaction)
        except Exception:
            # This turn uses it anyway; the next one makes it again.
            logger.exception("could not store the chat's compaction", extra={"chat_id": chat_id})
        self.compacted = True
        logger.info(
            "chat history compacted",
            extra={"chat_id": chat_id, "folded": len(rows), "compactions": compaction.compactions},
        )
        return compaction

    async def _fixed_tokens(self) -> int:
        """The request's parts besides the history: the prompt, and the largest of the
        instructions and tools of the agent the turn starts at and those it may hand to."""
        agents = [self.agent, *(a for a in self.agent.handoffs if isinstance(a, Agent))]
        wrapper = RunContextWrapper(self.context)
        largest = 0
        for agent in agents:
            instructions = await agent.get_system_prompt(wrapper)
            largest = max(largest, estimate_tokens(instructions) + self.policy.tools_tokens(agent))
        prompt = self.prompt
        if isinstance(prompt, str):
            return largest + estimate_tokens(prompt) + ITEM_OVERHEAD_TOKENS
        return largest + sum(estimate_tokens(item) + ITEM_OVERHEAD_TOKENS for item in prompt)

    # -- before every model call --------------------------------------------------------

    def run_config(self, base: RunConfig) -> RunConfig:
        """``base`` with the memory guard after its own input filter, for this turn: call
        it in the turn's task before the SDK starts the run (whose task inherits it)."""
        _running.set(self)
        return self.policy.guarded(base)

    def fit_or_leave(self, data: ModelInputData, agent: Agent[Any]) -> ModelInputData:
        try:
            return self.fit(data, agent)
        except Exception:
            # A guard must never fail the turn: the model refuses what does not fit.
            logger.exception(
                "could not fit a model call to the budget",
                extra={"chat_id": self.session.session_id},
            )
            return data

    def fit(self, data: ModelInputData, agent: Agent[Any]) -> ModelInputData:
        """``data`` within the input budget: its oldest groups left out when needed, but
        never the summary nor the running turn's items (from the last user message on)."""
        items = [_as_mapping(item) for item in data.input]
        limit = (
            self.policy.budget.input_tokens
            - estimate_tokens(data.instructions)
            - self.policy.tools_tokens(agent)
        )
        tokens = [item_tokens(item) for item in items]
        if sum(tokens) <= limit:
            return data
        keep_before = 1 if items and is_summary_item(items[0]) else 0
        keep_from = next(
            (i for i in range(len(items) - 1, -1, -1) if is_turn_start(items[i])), len(items)
        )
        kept = drop_to_fit(tokens, group_spans(items), keep_before, keep_from, limit)
        logger.warning(
            "left the oldest history out of a model call to fit the model's context",
            extra={
                "chat_id": self.session.session_id,
                "dropped_items": len(items) - len(kept),
                "fits": sum(tokens[i] for i in kept) <= limit,
            },
        )
        given: list[Any] = data.input
        return ModelInputData(input=[given[i] for i in kept], instructions=data.instructions)


def _as_mapping(item: Any) -> Mapping[str, Any]:
    """An input item as a mapping (the SDK hands dicts; a model object is dumped)."""
    if isinstance(item, Mapping):
        return item
    dump = getattr(item, "model_dump", None)
    return dump(exclude_unset=True) if callable(dump) else {"content": str(item)}
