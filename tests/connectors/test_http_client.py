"""connectors.service_http: Retry-After, backoff, which requests are retried, safe error texts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest

from connectors.service_http import (
    RetryPolicy,
    ServiceError,
    ServiceHttp,
    redact,
    retry_after_seconds,
)
from tests.fakes.fake_service import Answer, closed_port_url
from tests.fakes.plaid_api import FakePlaid
from tests.fakes.yelp_api import FakeYelp

SEARCH = "/v3/businesses/search"
EXCHANGE = "/item/public_token/exchange"


class Sleeps:
    """Records the waits ServiceHttp asks for instead of sleeping."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def service(
    http: httpx.AsyncClient, sleeps: Sleeps, retries: int = 2, max_wait: float = 10.0
) -> ServiceHttp:
    return ServiceHttp(
        http,
        "Yelp",
        timeout=2.0,
        retry=RetryPolicy(retries=retries, max_wait=max_wait),
        sleep=sleeps,
    )


def test_retry_after_reads_seconds_and_http_dates() -> None:
    now = datetime(2025, 1, 31, 12, 0, tzinfo=UTC)
    assert retry_after_seconds("7") == 7.0
    assert retry_after_seconds(" 0 ") == 0.0
    assert (
        retry_after_seconds(format_datetime(now + timedelta(seconds=30), usegmt=True), now) == 30.0
    )
    assert retry_after_seconds(format_datetime(now - timedelta(hours=1), usegmt=True), now) == 0.0
    for unreadable in (None, "", "soon", "-5", "1.5"):
        assert retry_after_seconds(unreadable) is None


def test_backoff_grows_with_jitter_and_is_capped() -> None:
    policy = RetryPolicy(retries=5, max_wait=1.0, base_delay=0.25)
    for attempt, full in enumerate([0.25, 0.5, 1.0]):
        for _ in range(50):
            assert full / 2 <= policy.backoff(attempt) <= full
    assert all(policy.backoff(6) <= 1.0 for _ in range(50))


def test_redact_removes_every_secret_value() -> None:
    assert (
        redact("token abcd1234 and abcd1234", ["abcd1234", "", "xy"])
        == "token [redacted] and [redacted]"
    )


async def test_retry_after_is_honoured_for_429_and_5xx(
    yelp_server: FakeYelp, http: httpx.AsyncClient
) -> None:
    yelp_server.script(
        SEARCH, Answer(429, headers={"Retry-After": "2"}), Answer(503, headers={"Retry-After": "3"})
    )
    sleeps = Sleeps()
    response = await service(http, sleeps).send(
        "GET",
        f"{yelp_server.base_url}{SEARCH}",
        params={"location": "Boston, MA"},
        headers={"Authorization": f"Bearer {yelp_server.api_key}"},
    )
    assert response.status_code == 200
    assert sleeps.waits == [2.0, 3.0]
    assert len(yelp_server.calls(SEARCH)) == 3


async def test_without_retry_after_the_wait_is_exponential(
    yelp_server: FakeYelp, http: httpx.AsyncClient
) -> None:
    yelp_server.script(SEARCH, *[Answer(500)] * 3)
    sleeps = Sleeps()
    response = await service(http, sleeps).send("GET", f"{yelp_server.base_url}{SEARCH}")
    assert response.status_code == 500  # retries spent: the caller reads the answer
    assert len(sleeps.waits) == 2
    assert 0.125 <= sleeps.waits[0] <= 0.25 and 0.25 <= sleeps.waits[1] <= 0.5


async def test_a_wait_longer_than_allowed_is_not_taken(
    yelp_server: FakeYelp, http: httpx.AsyncClient
) -> None:
    yelp_server.script(SEARCH, Answer(429, headers={"Retry-After": "60"}))
    sleeps = Sleeps()
    http_service = service(http, sleeps, max_wait=5)
    response = await http_service.send("GET", f"{yelp_server.base_url}{SEARCH}")
    assert response.status_code == 429 and sleeps.waits == []
    error = http_service.status_error(response)
    assert str(error) == "Yelp is rate limiting requests; try again in 60 seconds"
    assert error.status == 429


async def test_a_request_that_may_have_acted_is_only_retried_on_429(
    plaid_server: FakePlaid, http: httpx.AsyncClient
) -> None:
    url = f"{plaid_server.base_url}{EXCHANGE}"
    plaid_server.script(EXCHANGE, Answer(503), Answer(429, headers={"Retry-After": "0"}))
    sleeps = Sleeps()
    first = await service(http, sleeps).send("POST", url, json={}, idempotent=False)
    assert first.status_code == 503 and sleeps.waits == []  # the 503 is not repeated
    second = await service(http, sleeps).send("POST", url, json={}, idempotent=False)
    assert second.status_code == 400  # past the 429, the real handler answered
    assert sleeps.waits == [0.0]
    assert len(plaid_server.calls(EXCHANGE)) == 3


async def test_refused_connections_are_retried_then_reported(http: httpx.AsyncClient) -> None:
    sleeps = Sleeps()
    with pytest.raises(ServiceError) as failed:
        await service(http, sleeps, retries=2).send(
            "POST", f"{closed_port_url()}/x", idempotent=False
        )
    assert str(failed.value) == "could not reach Yelp (the connection failed); try again later"
    assert failed.value.debug_info == {"service": "Yelp", "error": "ConnectError", "attempts": 3}
    assert len(sleeps.waits) == 2


async def test_a_slow_non_idempotent_request_is_not_repeated(
    plaid_server: FakePlaid, http: httpx.AsyncClient
) -> None:
    plaid_server.script(EXCHANGE, Answer(200, {}, delay=0.6))
    sleeps = Sleeps()
    slow = ServiceHttp(http, "Plaid", timeout=0.2, retry=RetryPolicy(retries=2), sleep=sleeps)
    with pytest.raises(ServiceError) as failed:
        await slow.send("POST", f"{plaid_server.base_url}{EXCHANGE}", json={}, idempotent=False)
    assert str(failed.value) == "Plaid did not answer within 0.2 seconds; try again in a moment"
    assert failed.value.debug_info is not None and failed.value.debug_info["attempts"] == 1
    assert len(plaid_server.calls(EXCHANGE)) == 1
    # The same slow answer to a read is tried again.
    plaid_server.script(EXCHANGE, Answer(200, {}, delay=0.6), Answer(200, {}, delay=0.6))
    with pytest.raises(ServiceError):
        await ServiceHttp(
            http, "Plaid", timeout=0.2, retry=RetryPolicy(retries=1), sleep=sleeps
        ).send("POST", f"{plaid_server.base_url}{EXCHANGE}")
    assert len(plaid_server.calls(EXCHANGE)) == 3
