"""Prompt rate limits shared through Redis: N instances allow the configured rate in total."""

from __future__ import annotations

import logging
import socket
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.asyncio as redis

from tests.support.clients import open_client
from tests.support.servers import serve
from websocket.limits import PromptRateLimiter, SharedPromptRateLimiter, build_prompt_limiter


@pytest.fixture
async def prefix(redis_url: str) -> AsyncIterator[str]:
    """A key prefix of this test's own; its keys are removed afterwards."""
    name = f"sbtest:{uuid.uuid4().hex}"
    yield name
    client = redis.from_url(redis_url)
    try:
        keys = [key async for key in client.scan_iter(f"{name}*")]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()


async def test_two_limiters_on_one_redis_allow_the_rate_in_total(
    redis_url: str, prefix: str
) -> None:
    first = SharedPromptRateLimiter(3, redis_url, prefix)
    second = SharedPromptRateLimiter(3, redis_url, prefix)
    try:
        assert await first.wait_for("ann") is None
        assert await second.wait_for("ann") is None
        assert await first.wait_for("ann") is None
        wait = await second.wait_for("ann")
        assert wait is not None and 0 < wait <= 60
        assert await first.wait_for("ann") is not None
        # Per user, and per prefix (another deployment on the same Redis).
        assert await second.wait_for("bob") is None
        other = SharedPromptRateLimiter(3, redis_url, prefix + ":other")
        try:
            assert await other.wait_for("ann") is None
        finally:
            await other.aclose()
    finally:
        await first.aclose()
        await second.aclose()


def test_without_redis_the_limiter_is_this_instances_own() -> None:
    assert isinstance(build_prompt_limiter(5, None), PromptRateLimiter)


def closed_port() -> int:
    """A loopback port nothing listens on (bound, never listening: connections are refused)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = int(sock.getsockname()[1])
    sock.close()
    return port


async def test_unreachable_redis_falls_back_to_a_limit_per_instance(
    caplog: pytest.LogCaptureFixture,
) -> None:
    limiter = SharedPromptRateLimiter(2, f"redis://127.0.0.1:{closed_port()}/0", "sbtest:down")
    try:
        with caplog.at_level(logging.WARNING, logger="switchboard.limits"):
            assert await limiter.wait_for("ann") is None
            assert await limiter.wait_for("ann") is None
            wait = await limiter.wait_for("ann")
        assert wait is not None and 0 < wait <= 60  # still limited, here alone
        warnings = [r for r in caplog.records if "Redis unreachable" in r.getMessage()]
        assert len(warnings) == 1  # said once, not per prompt
    finally:
        await limiter.aclose()


# Two app instances on one database and one Redis, as a scaled-out deployment runs.
pytestmark_pg = pytest.mark.parametrize("_migrated_database", ["postgresql"], indirect=True)


async def refused_prompt(client: Any) -> dict[str, Any]:
    await client.send({"type": "prompt", "text": "search the web for tea"})
    return await client.recv()


@pytestmark_pg
async def test_two_instances_share_the_prompt_window(
    make_settings: Any, redis_url: str, prefix: str
) -> None:
    settings = make_settings(
        prompts_per_minute=3, redis_url=redis_url, rate_limit_key_prefix=prefix
    )
    async with serve(settings) as first, serve(settings) as second:
        async with (
            open_client(first.ws_url(uuid.uuid4().hex), auto_approve=True) as here,
            open_client(second.ws_url(uuid.uuid4().hex), auto_approve=True) as there,
        ):
            await here.turn("what's in my inbox")
            await here.turn("what are my account balances")
            await there.turn("what's in my inbox")
            # Each instance has seen fewer than three prompts; together they have three.
            for client in (there, here):
                refusal = await refused_prompt(client)
                assert refusal["type"] == "error" and refusal["code"] == "rate_limited"
                assert refusal["retryable"] is True and refusal["seq"] is None
                assert "try again in" in refusal["message"]
        for live in (first, second):
            async with live.client() as http:
                text = (await http.get("/metrics")).text
            assert 'switchboard_rate_limited_total{limit="prompts"} 1.0' in text
