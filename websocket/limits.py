"""Per-user prompt rate limit: a sliding one-minute window.

Without Redis, each instance keeps its window in memory (``PromptRateLimiter``). With
``SWITCHBOARD_REDIS_URL`` the window lives in Redis (``SharedPromptRateLimiter``, the
``limits`` library's moving window), so N instances behind one proxy allow the configured
rate in total, not N times it. When Redis cannot be reached, the shared limiter falls back
to its instance's own window (a degraded but still limited instance, as the cluster layer
is: nothing about a prompt waits on Redis being up).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from typing import Protocol

logger = logging.getLogger("switchboard.limits")

WINDOW = 60.0
REDIS_TIMEOUT = 2.0
DEFAULT_KEY_PREFIX = "sb:ratelimit"


class PromptLimiter(Protocol):
    """What the front ends ask before a prompt starts a turn."""

    async def wait_for(self, user_id: str) -> float | None:
        """None when the prompt may go (and it is counted); else seconds until it may."""
        ...

    async def aclose(self) -> None: ...


class PromptRateLimiter:
    """This instance's window, in memory."""

    def __init__(self, per_minute: int, max_users: int = 100_000) -> None:
        self.per_minute = per_minute
        self.max_users = max_users
        self._sent: dict[str, deque[float]] = {}

    async def wait_for(self, user_id: str) -> float | None:
        return self.allow(user_id)

    async def aclose(self) -> None:
        return None

    def allow(self, user_id: str, now: float | None = None) -> float | None:
        """None when the prompt may go; else seconds until it may."""
        now = time.monotonic() if now is None else now
        sent = self._sent.get(user_id)
        if sent is None:
            if len(self._sent) >= self.max_users:
                self._forget_idle(now)
            sent = self._sent[user_id] = deque()
        while sent and now - sent[0] >= WINDOW:
            sent.popleft()
        if len(sent) >= self.per_minute:
            return WINDOW - (now - sent[0])
        sent.append(now)
        return None

    def _forget_idle(self, now: float) -> None:
        for user_id in [
            u for u, sent in self._sent.items() if not sent or now - sent[-1] >= WINDOW
        ]:
            del self._sent[user_id]


def limits_uri(redis_url: str) -> str:
    """Our ``redis://``, ``rediss://`` or ``unix://`` URL as the ``limits`` library's
    async storage URI (``async+redis://`` …)."""
    if redis_url.startswith("unix://"):
        return "async+redis+unix://" + redis_url.removeprefix("unix://")
    return "async+" + redis_url


class SharedPromptRateLimiter:
    """The window in Redis, shared by every instance using the same ``key_prefix``."""

    def __init__(
        self, per_minute: int, redis_url: str, key_prefix: str = DEFAULT_KEY_PREFIX
    ) -> None:
        # Imported here: a server without Redis never loads the library's Redis parts.
        import redis.asyncio as redis
        from limits import RateLimitItemPerMinute
        from limits.aio.storage import RedisStorage
        from limits.aio.strategies import MovingWindowRateLimiter

        self.per_minute = per_minute
        self._item = RateLimitItemPerMinute(per_minute)
        # Our own pool, with timeouts, so no check can hang a prompt and shutdown closes it.
        self._pool = redis.ConnectionPool.from_url(
            redis_url, socket_timeout=REDIS_TIMEOUT, socket_connect_timeout=REDIS_TIMEOUT
        )
        storage = RedisStorage(
            limits_uri(redis_url),
            implementation="redispy",
            key_prefix=key_prefix,
            connection_pool=self._pool,  # type: ignore[arg-type]
        )
        self._limiter = MovingWindowRateLimiter(storage)
        self._errors: tuple[type[Exception], ...] = (redis.RedisError, OSError, TimeoutError)
        self._local = PromptRateLimiter(per_minute)
        self._degraded = False

    async def wait_for(self, user_id: str) -> float | None:
        try:
            async with asyncio.timeout(REDIS_TIMEOUT * 2):
                if await self._limiter.hit(self._item, user_id):
                    self._recovered()
                    return None
                stats = await self._limiter.get_window_stats(self._item, user_id)
        except self._errors as exc:
            self._degrade(exc)
            return self._local.allow(user_id)
        self._recovered()
        # The moment the oldest prompt in the window leaves it; at least a moment from now
        # (a prompt that left the window since the hit was refused may go on a retry).
        return max(stats.reset_time - time.time(), 0.001)

    def _degrade(self, exc: BaseException) -> None:
        if not self._degraded:
            self._degraded = True
            logger.warning(
                "Redis unreachable: prompt rate limits are per instance until it is back",
                extra={"error": type(exc).__name__},
            )

    def _recovered(self) -> None:
        if self._degraded:
            self._degraded = False
            logger.info("Redis reachable again: prompt rate limits are shared")

    async def aclose(self) -> None:
        await self._pool.disconnect()


def build_prompt_limiter(
    per_minute: int, redis_url: str | None, key_prefix: str = DEFAULT_KEY_PREFIX
) -> PromptLimiter:
    if redis_url:
        return SharedPromptRateLimiter(per_minute, redis_url, key_prefix)
    return PromptRateLimiter(per_minute)
