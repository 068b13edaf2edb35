"""Server processes the benchmarks need besides ``switchboard serve``.

    python -m bench.servers raw --port P [--words N] [--pace S]          # raw Starlette
    python -m bench.servers long-message --port P --words N [--pace S]   # Switchboard
    python -m bench.servers sdk-socket --port P [--pace S]               # the turn's floor

``raw`` is the floor any WebSocket server on this stack pays: a Starlette endpoint that
answers a prompt with a plain loop of ``send_text`` calls, each frame a delta event of
the same shape and size as ours, serialised with orjson. ``long-message`` is the real
app (``create_app``, every layer of the pipeline) whose model answers every prompt with
one message of N words, streamed one word per delta, ``--pace`` seconds apart (0: flat
out); only the model differs from ``switchboard serve``. ``sdk-socket`` is the floor of
any server on this stack that streams the bench turn over a WebSocket: a Starlette endpoint that runs
the bench's orchestrator and offline model (``bench.turn_overhead.BareTurns``, ``--pace``
seconds per word) for each prompt and sends one orjson frame per SDK stream event, with
no storage, history, validation, title or suggestions. All run under uvicorn with the
WebSocket options ``switchboard serve`` uses (no permessage-deflate by default), one worker.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import orjson
import uvicorn
from starlette.applications import Starlette
from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from bench.long_model import LongMessageModel


def _ts() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


async def raw_stream(websocket: WebSocket) -> None:
    """Answer each text frame with ``words`` delta frames, then one ``llm_response``."""
    await websocket.accept()
    chat_id = websocket.path_params["chat_id"]
    words = int(os.environ["BENCH_WORDS"])
    pace = float(os.environ.get("BENCH_PACE", "0"))
    try:
        while True:
            await websocket.receive_text()
            text = []
            for index in range(words):
                if pace:
                    await asyncio.sleep(pace)
                delta = f"w{index} "
                text.append(delta)
                await websocket.send_text(
                    orjson.dumps(
                        {
                            "type": "llm_response_delta",
                            "chat_id": chat_id,
                            "turn_id": "raw",
                            "seq": None,
                            "ts": _ts(),
                            "delta": delta,
                            "current_agent": "Switchboard",
                        }
                    ).decode()
                )
            await websocket.send_text(
                orjson.dumps(
                    {
                        "type": "llm_response",
                        "chat_id": chat_id,
                        "turn_id": "raw",
                        "seq": 1,
                        "ts": _ts(),
                        "text": "".join(text),
                        "current_agent": "Switchboard",
                    }
                ).decode()
            )
    except WebSocketDisconnect:
        pass


def raw_app() -> Starlette:
    return Starlette(routes=[WebSocketRoute("/ws/chats/{chat_id}", raw_stream)])


def _sdk_frame(event: Any, chat_id: str) -> dict[str, Any] | None:
    """The frame a server would send for one SDK stream event (None: nothing to send)."""
    frame: dict[str, Any] = {"chat_id": chat_id, "ts": _ts()}
    if event.type == "raw_response_event":
        if event.data.type != "response.output_text.delta":
            return None
        return {**frame, "type": "llm_response_delta", "delta": event.data.delta}
    if event.type == "agent_updated_stream_event":
        return {**frame, "type": "agent_updated", "agent": event.new_agent.name}
    item = event.item
    if event.name == "tool_called":
        raw = item.raw_item
        return {**frame, "type": "tool_call", "name": raw.name, "arguments": raw.arguments}
    if event.name == "tool_output":
        return {**frame, "type": "tool_output", "output": item.output}
    if event.name == "message_output_created":
        from agents import ItemHelpers

        return {**frame, "type": "llm_response", "text": ItemHelpers.text_message_output(item)}
    return None


def sdk_socket_app() -> Starlette:
    """Each prompt frame runs the bench turn; its events go out one frame each, then
    ``end_of_stream`` and an empty ``suggested_prompts`` (what the bench client reads to)."""
    from agents import Runner

    from bench.common import PROMPT
    from bench.turn_overhead import BareTurns
    from connectors.context import ChatContext

    bare = BareTurns(float(os.environ.get("BENCH_PACE", "0")))

    async def turn(websocket: WebSocket) -> None:
        await websocket.accept()
        chat_id = websocket.path_params["chat_id"]
        try:
            while True:
                prompt = orjson.loads(await websocket.receive_text())
                context = ChatContext(
                    user_id="bench",
                    chat_id=chat_id,
                    turn_id=uuid.uuid4().hex,
                    settings=bare.settings,
                    demo=bare.demo.for_user("bench"),
                )
                result = Runner.run_streamed(
                    bare.orchestrator,
                    input=prompt.get("text", PROMPT),
                    context=context,
                    run_config=bare.run_config,
                )
                async for event in result.stream_events():
                    frame = _sdk_frame(event, chat_id)
                    if frame is not None:
                        await websocket.send_text(orjson.dumps(frame).decode())
                for last in (
                    {"type": "end_of_stream", "seq": 1, "status": "completed"},
                    {"type": "suggested_prompts", "seq": None, "prompts": []},
                ):
                    await websocket.send_text(orjson.dumps({**last, "chat_id": chat_id}).decode())
        except WebSocketDisconnect:
            pass

    return Starlette(routes=[WebSocketRoute("/ws/chats/{chat_id}", turn)])


def long_message_app() -> Any:
    """The real app with a model that streams one ``BENCH_WORDS``-word message."""
    from app.main import create_app
    from app.services import Services

    words = int(os.environ["BENCH_WORDS"])
    pace = float(os.environ.get("BENCH_PACE", "0"))

    @asynccontextmanager
    async def long_model(services: Services) -> AsyncIterator[None]:
        # RunConfig.model overrides every agent's own model, whatever the app configured.
        turns = services.turns
        run_config = dataclasses.replace(
            turns.engine.run_config, model=LongMessageModel(words, pace)
        )
        turns.engine = dataclasses.replace(turns.engine, run_config=run_config)
        yield

    return create_app(lifespan_hooks=(long_model,))


FACTORIES = {
    "raw": "bench.servers:raw_app",
    "long-message": "bench.servers:long_message_app",
    "sdk-socket": "bench.servers:sdk_socket_app",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("app", choices=tuple(FACTORIES))
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--words", type=int, default=20_000)
    parser.add_argument("--pace", type=float, default=0.0, help="seconds before each delta")
    args = parser.parse_args()
    os.environ["BENCH_WORDS"] = str(args.words)
    os.environ["BENCH_PACE"] = str(args.pace)
    factory = FACTORIES[args.app]
    from app.log_setup import configure_logging
    from app.settings import load_settings

    settings = load_settings()
    if args.app == "long-message":
        configure_logging(settings.log_level)
    uvicorn.run(
        factory,
        factory=True,
        host="127.0.0.1",
        port=args.port,
        log_config=None,
        log_level="warning",
        ws_max_size=settings.max_frame_bytes,
        ws_per_message_deflate=settings.ws_per_message_deflate,
    )


if __name__ == "__main__":
    main()
