"""Per-user prompt rate limit: a sliding one-minute window, in memory, per instance."""

from __future__ import annotations

import time
from collections import deque

WINDOW = 60.0


class PromptRateLimiter:
    def __init__(self, per_minute: int, max_users: int = 100_000) -> None:
        self.per_minute = per_minute
        self.max_users = max_users
        self._sent: dict[str, deque[float]] = {}

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
