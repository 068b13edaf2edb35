"""Telemetry tests: Redis for the shared rate limits (skipped without it, except in CI)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator

import pytest

REDIS_URL = os.environ.get("SWITCHBOARD_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


@pytest.fixture
async def redis_url() -> AsyncIterator[str]:
    import redis.asyncio as redis

    client = redis.from_url(REDIS_URL, socket_connect_timeout=2)
    try:
        await asyncio.wait_for(client.ping(), 3)
    except Exception as exc:
        reason = f"Redis not reachable at {REDIS_URL}: {type(exc).__name__}"
        if os.environ.get("CI") == "true":
            pytest.fail(reason + " (CI=true: Redis tests must run)")
        pytest.skip(reason)
    finally:
        await client.aclose()
    yield REDIS_URL
