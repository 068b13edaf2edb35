"""Telemetry tests: Redis for the shared rate limits (skipped without it, except in CI)."""

from __future__ import annotations

import pytest

from tests.support.redis_server import reachable_redis


@pytest.fixture
async def redis_url() -> str:
    return await reachable_redis()
