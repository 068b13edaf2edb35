"""Wire the streaming core into the app: connectors, orchestrator, model, turns, hub."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace

import httpx
from agents import Agent
from cryptography.fernet import MultiFernet

from app.attachments.model_input import AttachmentExpander
from app.attachments.store import blob_store_for
from app.connector_setup import serve_connectors
from app.llm.context_sizes import chat_budget
from app.llm.errors import report_turn_failure
from app.llm.providers import ConfiguredModels, build_models, describe
from app.llm.spec import parse_model_spec, parse_optional_spec
from app.llm.suggest import Suggester
from app.llm.summarise import Summariser
from app.settings import Settings, SettingsError
from connectors.approvals import agent_tools, approval_required, side_effect_of
from connectors.context import ChatContext, DemoStore
from connectors.mcp.runtime import McpRuntime
from connectors.orchestrator import agent_display_names, build_orchestrator
from connectors.rap.runtime import RapRuntime
from connectors.registry import Connector, FailedConnector, tool_descriptions
from storage.accounts import AccountRepository
from storage.attachments import AttachmentRepository
from storage.blobs import BlobStore
from storage.chats import ChatRepository
from storage.engine import Database
from storage.events import EventStore
from websocket.cluster import build_cluster
from websocket.handler import ConnectionCounter
from websocket.hub import Hub
from websocket.limits import PromptLimiter, build_prompt_limiter
from websocket.memory import MemoryPolicy
from websocket.metrics import Metrics
from websocket.protocol import now_ts
from websocket.tracing import TurnTracer
from websocket.turn import TurnEngine, TurnManager
from websocket.usage_hooks import model_label

logger = logging.getLogger("switchboard.app")


def build_engine(
    settings: Settings,
    db: Database,
    connectors: list[Connector],
    demo: DemoStore,
    models: ConfiguredModels | None = None,
    *,
    fernet: MultiFernet | None = None,
    http: httpx.AsyncClient | None = None,
    blobs: BlobStore | None = None,
) -> TurnEngine:
    """The turn engine; ``models`` (``build_models(settings)`` when omitted) picks the models,
    and its ``aclose()`` is the caller's to await on shutdown."""
    models = models if models is not None else build_models(settings, connectors=connectors)
    orchestrator = build_orchestrator(
        settings, connectors, model=models.orchestrator, connector_model=models.connector
    )
    specialists = [agent for agent in orchestrator.handoffs if isinstance(agent, Agent)]
    suggester = Suggester(
        models.suggest,
        models.run_config(suggest=True),
        settings.suggest_timeout,
        [f"{agent.name}: {agent.handoff_description}" for agent in specialists],
        offline=models.offline,
    )

    def make_context(user_id: str, chat_id: str, turn_id: str) -> ChatContext:
        # The user's accounts (encrypted credentials) and the app's outbound HTTP client:
        # live connectors need both; demo connectors check that the user is connected.
        accounts = AccountRepository(db, user_id, fernet) if fernet is not None else None
        return ChatContext(
            user_id=user_id,
            chat_id=chat_id,
            turn_id=turn_id,
            settings=settings,
            demo=demo.for_user(user_id),
            accounts=accounts,
            http=http,
        )

    async def store_title(user_id: str, chat_id: str, title: str) -> None:
        await ChatRepository(db, user_id).title_if_untitled(chat_id, title)

    async def title_chat(user_id: str, chat_id: str, prompt: str) -> None:
        if suggester.model is None:  # offline: instant, so done in line
            await store_title(user_id, chat_id, await suggester.title(prompt))
            return

        async def generate() -> None:
            try:
                await store_title(user_id, chat_id, await suggester.title(prompt))
            except Exception:
                logger.exception("could not store the chat title", extra={"chat_id": chat_id})

        # A model call can take seconds: off the turn task, so the next prompt never waits.
        models.spawn(generate(), name=f"title-{chat_id}")

    # Attachment references in the input become their content right before each model call.
    expander = AttachmentExpander(
        AttachmentRepository(db), blobs if blobs is not None else blob_store_for(settings)
    )
    run_config = models.run_config()
    run_config = replace(
        run_config, call_model_input_filter=expander.after(run_config.call_model_input_filter)
    )
    return TurnEngine(
        memory=memory_policy(settings, models),
        orchestrator=orchestrator,
        run_config=run_config,
        tool_descriptions=tool_descriptions(connectors),
        agent_display_names=agent_display_names(connectors),
        make_context=make_context,
        report_failure=report_turn_failure,
        suggest=suggester.suggest if models.suggestions_enabled else None,
        on_first_turn=title_chat,
        model_name=model_label(models.specs["orchestrator"], "offline"),
        max_argument_chars=settings.tool_argument_max_chars,
    )


def memory_policy(settings: Settings, models: ConfiguredModels) -> MemoryPolicy:
    """The chats' token budget (docs/memory.md) and their summaries' model: the
    suggestions model (the connector model when suggestions are off), or the offline
    summary when that is the offline model."""
    main = parse_model_spec(settings.model)
    connector = parse_optional_spec(settings.connector_model) or main
    try:
        budget = chat_budget(
            [main, connector], settings.model_context_tokens, settings.answer_reserve_tokens
        )
    except ValueError as exc:
        raise SettingsError(str(exc)) from None
    model = models.suggest
    if not models.suggestions_enabled and not connector.is_offline:
        # ``off`` turns the suggestions off, not the summaries: the model the suggestions
        # would have used by default writes them.
        model = models.connector
    summariser = Summariser(
        model,
        models.run_config(suggest=True),
        settings.suggest_timeout,
        budget.input_tokens,
    )
    return MemoryPolicy(budget, summariser.summarise)


def check_overrides(settings: Settings, tool_names: Iterable[str]) -> None:
    """Refuse overrides naming none of ``tool_names``: a typo would silently leave the tool
    it meant ungated."""
    problems = settings.approval_policy.unknown_overrides(tool_names)
    if problems:
        raise SettingsError("SWITCHBOARD_APPROVAL_OVERRIDES: " + "; ".join(problems))


def check_approval_settings(settings: Settings, orchestrator: Agent[ChatContext]) -> None:
    """Refuse overrides naming no tool, and say loudly when nothing asks for approval."""
    specialists = [agent for agent in orchestrator.handoffs if isinstance(agent, Agent)]
    check_overrides(settings, (tool.name for tool in agent_tools(specialists)))
    if settings.approvals == "off":
        logger.warning(
            "APPROVALS ARE OFF (SWITCHBOARD_APPROVALS=off): tools that send, pay, "
            "write or delete run without asking anyone. Use this only for trusted "
            "automation, never for people's own accounts."
        )
    ungated = sorted(
        tool.name
        for tool in agent_tools(specialists)
        if not approval_required(tool) and side_effect_of(tool) is not False
    )
    if ungated:
        logger.warning("tools with side effects run without approval", extra={"tools": ungated})


def approval_sweep_interval(timeout: float) -> float:
    """How often expired approvals are looked for: a few times per timeout, at most a
    minute apart (an expiry is late by at most that)."""
    return min(60.0, max(0.2, timeout / 4))


@dataclass(frozen=True)
class Streaming:
    """The live parts ``streaming_lifespan`` runs, for ``app.services.Services``."""

    connectors: tuple[Connector, ...]
    failed_connectors: tuple[FailedConnector, ...]
    demo: DemoStore
    store: EventStore
    connections: ConnectionCounter
    models: ConfiguredModels
    hub: Hub
    turns: TurnManager
    prompt_limiter: PromptLimiter


@asynccontextmanager
async def streaming_lifespan(
    settings: Settings,
    db: Database,
    *,
    fernet: MultiFernet,
    http: httpx.AsyncClient,
    rap: RapRuntime | None,
    mcp: McpRuntime | None = None,
    metrics: Metrics,
    tracer: TurnTracer | None = None,
    blobs: BlobStore | None = None,
) -> AsyncIterator[Streaming]:
    """Start the live parts; on shutdown let running turns finish."""
    # RAP remote tools are discovered before the orchestrator is built.
    registration = serve_connectors(settings, rap, mcp)
    connectors = registration.connectors
    if mcp is not None:  # a server refused (its names taken) is not kept running
        mcp.retain(connectors)
    demo = DemoStore()
    store = EventStore(db)
    connections = ConnectionCounter()
    models = build_models(settings, connectors=connectors, otel=tracer is not None)
    logger.info("models configured", extra=describe(models))
    engine = build_engine(
        settings, db, connectors, demo, models, fernet=fernet, http=http, blobs=blobs
    )
    engine.tracer = tracer
    check_approval_settings(settings, engine.orchestrator)

    def cancel_here(chat_id: str, turn_id: str | None) -> None:
        turns.cancel(chat_id, turn_id)

    closing: set[asyncio.Task[None]] = set()  # referenced until done

    def deleted_elsewhere(chat_id: str) -> None:
        task = asyncio.create_task(connections.close_chat(chat_id))
        closing.add(task)
        task.add_done_callback(closing.discard)

    cluster = await build_cluster(settings.redis_url, cancel_here, deleted_elsewhere)
    hub = Hub(cluster)
    turns = TurnManager(
        store,
        hub,
        engine,
        db,
        cluster=cluster,
        lease_seconds=settings.turn_lease_seconds,
        metrics=metrics,
        approval_timeout=settings.approval_timeout,
    )
    closed = await turns.close_orphans(now_ts())
    if closed:
        logger.warning("closed turns whose instance stopped", extra={"turns": closed})
    # Whether or not other instances share the database: any of them may die mid-turn.
    watchers = [
        asyncio.create_task(turns.keep_leases(), name="lease-renewal"),
        asyncio.create_task(turns.watch_orphans(), name="orphan-watch"),
        asyncio.create_task(
            turns.watch_approvals(approval_sweep_interval(settings.approval_timeout)),
            name="approval-expiry",
        ),
        # A revoked or expired credential closes the sockets that only listen, too.
        asyncio.create_task(connections.watch_credentials(), name="socket-credentials"),
    ]
    # Shared through Redis when it is configured (websocket.limits).
    prompt_limiter = build_prompt_limiter(
        settings.prompts_per_minute, settings.redis_url, settings.rate_limit_key_prefix
    )
    try:
        yield Streaming(
            connectors=tuple(connectors),
            failed_connectors=tuple(registration.failed),
            demo=demo,
            store=store,
            connections=connections,
            models=models,
            hub=hub,
            turns=turns,
            prompt_limiter=prompt_limiter,
        )
    finally:
        for watcher in watchers:
            watcher.cancel()
        await turns.shutdown(settings.shutdown_grace_seconds)
        await cluster.stop()
        await prompt_limiter.aclose()
        await models.aclose()
