"""Outbound HTTP for live connectors: timeouts, bounded retries, and errors safe to show.

Every live client sends through ``ServiceHttp`` over the app's one shared
``httpx.AsyncClient``:

- every request has a timeout (``SWITCHBOARD_HTTP_TIMEOUT``);
- 429 and 5xx answers are retried (``SWITCHBOARD_HTTP_RETRIES`` times) after the server's
  ``Retry-After`` or an exponential backoff with jitter; a wait longer than
  ``SWITCHBOARD_HTTP_RETRY_MAX_WAIT`` is not taken: the caller reports "try again in N s";
- a request that may have changed something (``idempotent=False``, e.g. sending an email)
  is only retried when it certainly did not reach the service (connection refused, 429);
- transport failures become a ``ServiceError`` (a ``ToolError``): the tool answers
  ``Error: …`` with what to do, and no URL, header or key ever appears in the text.

Provider-specific error bodies are read by each client, which then calls ``status_error``.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from connectors.settings import ConnectorSettings
from connectors.tooling import ToolError

logger = logging.getLogger("switchboard.connectors.http")

RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})
_DETAIL_CHARS = 200
REDACTED = "[redacted]"


class ServiceError(ToolError):
    """A live service failed; the message is safe to show and says what to do next."""

    def __init__(
        self, message: str, *, status: int | None = None, debug_info: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message, debug_info=debug_info)
        self.status = status


@dataclass(frozen=True)
class RetryPolicy:
    retries: int = 2  # attempts after the first one
    max_wait: float = 10.0  # the longest single wait honoured, Retry-After included
    base_delay: float = 0.25

    @classmethod
    def from_settings(cls, settings: ConnectorSettings) -> RetryPolicy:
        return cls(retries=settings.http_retries, max_wait=settings.http_retry_max_wait)

    def backoff(self, attempt: int) -> float:
        """Exponential with "equal jitter": half fixed, half random, so clients spread out."""
        delay = self.base_delay * (2.0**attempt)
        return min(self.max_wait, delay / 2 + random.uniform(0, delay / 2))


def retry_after_seconds(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or an HTTP date)."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret value replaced (a provider may echo what it was sent)."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, REDACTED)
    return text


def one_line(text: object, limit: int = _DETAIL_CHARS) -> str:
    value = " ".join(str(text).split())
    return value if len(value) <= limit else value[: limit - 1].rstrip() + "…"


@dataclass
class ServiceHttp:
    """Requests to one service (``service`` names it in errors) with timeouts and retries."""

    client: httpx.AsyncClient
    service: str
    timeout: float = 15.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    secrets: tuple[str, ...] = ()  # values to redact from any text taken from a response
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep

    @classmethod
    def for_settings(
        cls,
        client: httpx.AsyncClient,
        service: str,
        settings: ConnectorSettings,
        secrets: Iterable[str | None] = (),
    ) -> ServiceHttp:
        return cls(
            client=client,
            service=service,
            timeout=settings.http_timeout,
            retry=RetryPolicy.from_settings(settings),
            secrets=tuple(s for s in secrets if s),
        )

    async def send(
        self, method: str, url: str, *, idempotent: bool = True, **kwargs: Any
    ) -> httpx.Response:
        """The final response, whatever its status (callers read error bodies themselves).

        Raises ``ServiceError`` when no response could be had (timeout, connection failure).
        """
        attempt = 0
        while True:
            try:
                response = await self.client.request(method, url, timeout=self.timeout, **kwargs)
            except httpx.TransportError as exc:
                # A refused connection never reached the service: always safe to retry.
                unsent = isinstance(
                    exc, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout
                )
                if attempt < self.retry.retries and (idempotent or unsent):
                    await self.sleep(self.retry.backoff(attempt))
                    attempt += 1
                    continue
                raise self._transport_error(exc, method, url, attempt + 1) from None
            status = response.status_code
            if status not in RETRYABLE_STATUS or attempt >= self.retry.retries:
                return response
            if status != 429 and not idempotent:
                return response  # the service may have acted: do not do it twice
            wait = retry_after_seconds(response.headers.get("retry-after"))
            if wait is None:
                wait = self.retry.backoff(attempt)
            if wait > self.retry.max_wait:
                return response  # too long to hold the turn: the caller says when to retry
            logger.info(
                "%s answered %s to %s %s; retrying in %.2fs",
                self.service,
                status,
                method,
                _path(url),
                wait,
            )
            await self.sleep(wait)
            attempt += 1

    def _transport_error(
        self, exc: httpx.TransportError, method: str, url: str, attempts: int
    ) -> ServiceError:
        logger.warning(
            "%s %s %s failed after %d attempt(s): %s",
            self.service,
            method,
            _path(url),
            attempts,
            type(exc).__name__,
        )
        debug = {"service": self.service, "error": type(exc).__name__, "attempts": attempts}
        if isinstance(exc, httpx.TimeoutException):
            return ServiceError(
                f"{self.service} did not answer within {self.timeout:g} "
                "seconds; try again in a moment",
                debug_info=debug,
            )
        return ServiceError(
            f"could not reach {self.service} (the connection failed); try again later",
            debug_info=debug,
        )

    def detail(self, text: object) -> str:
        """A provider's error text made safe to show: one short line, secrets redacted."""
        return one_line(redact(str(text), self.secrets))

    def status_error(
        self, response: httpx.Response, detail: str | None = None, advice: str | None = None
    ) -> ServiceError:
        """The ``ServiceError`` for a non-2xx answer, with the provider's ``detail``."""
        status = response.status_code
        debug: dict[str, Any] = {"service": self.service, "status": status}
        request_id = response.headers.get("x-request-id")
        if request_id:
            debug["request_id"] = one_line(request_id, 80)
        said = f": {self.detail(detail)}" if detail else ""
        if status == 429:
            wait = retry_after_seconds(response.headers.get("retry-after"))
            when = f"in {wait:.0f} seconds" if wait else "in a minute"
            message = f"{self.service} is rate limiting requests{said}; try again {when}"
        elif status >= 500:
            message = f"{self.service} is having trouble (HTTP {status}){said}; try again later"
        elif status in (401, 403):
            message = f"{self.service} refused the request (HTTP {status}){said}"
        else:
            message = f"{self.service} rejected the request (HTTP {status}){said}"
        if advice:
            message = f"{message}; {advice}"
        logger.warning(
            "%s answered HTTP %s to %s %s",
            self.service,
            status,
            response.request.method,
            _path(str(response.request.url)),
        )
        return ServiceError(message, status=status, debug_info=debug)


def read_json(response: httpx.Response, service: str) -> Any:
    """The JSON body; a ``ServiceError`` when it is not JSON (a proxy's HTML page, …)."""
    try:
        return response.json()
    except ValueError:
        raise ServiceError(
            f"{service} sent a reply that is not JSON (HTTP "
            f"{response.status_code}); try again later",
            status=response.status_code,
            debug_info={
                "service": service,
                "status": response.status_code,
                "content_type": response.headers.get("content-type"),
            },
        ) from None


def _path(url: str) -> str:
    # For logs: the path only; query strings can carry search terms or ids.
    return httpx.URL(url).path


def new_client() -> httpx.AsyncClient:
    """The app's shared outbound client. Per-request timeouts are set by ``ServiceHttp``."""
    return httpx.AsyncClient(
        timeout=httpx.Timeout(15.0),
        limits=httpx.Limits(max_connections=100, max_keepalive_connections=20),
        headers={"User-Agent": "switchboard/0.1"},
        follow_redirects=False,
    )


def shared_client(client: httpx.AsyncClient | None, service: str) -> httpx.AsyncClient:
    """The app's client from the chat context; live tools cannot run outside the app."""
    if client is None:
        raise ToolError(
            f"live {service} needs the server's HTTP client, which this context "
            "does not have; run it inside the app (or use demo mode)"
        )
    return client
