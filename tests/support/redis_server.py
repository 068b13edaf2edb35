"""The machine's Redis for tests: its URL, and a check that it answers."""

from __future__ import annotations

import asyncio
import os

import pytest

REDIS_URL = os.environ.get("SWITCHBOARD_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


async def reachable_redis() -> str:
    """``REDIS_URL`` once it answers a ping; otherwise skip the test, or fail it in CI."""
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
    return REDIS_URL
