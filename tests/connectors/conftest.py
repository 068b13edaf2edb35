"""Fixtures for the live-connector tests: a user's real accounts store (on both engines),
the app's HTTP client, and each fake service served on loopback. The helpers (a tool's
context and call, settings pointing at a fake) are in ``tests.support.connectors``."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from cryptography.fernet import MultiFernet

from connectors.service_http import new_client
from storage.accounts import AccountRepository
from storage.engine import Database
from storage.users import UserRepository
from tests.fakes.fake_service import serve_fake
from tests.fakes.gmail_api import FakeGoogle
from tests.fakes.google_search import FakeGoogleSearch
from tests.fakes.plaid_api import FakePlaid
from tests.fakes.searxng import FakeSearxng
from tests.fakes.yelp_api import FakeYelp


@pytest.fixture
async def accounts(db: Database, fernet: MultiFernet) -> AccountRepository:
    user, _token = await UserRepository(db).create_user("alex")
    return AccountRepository(db, user.id, fernet)


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    client = new_client()
    try:
        yield client
    finally:
        await client.aclose()


@pytest.fixture
async def google() -> AsyncIterator[FakeGoogle]:
    fake = FakeGoogle()
    async with serve_fake(fake):
        yield fake


@pytest.fixture
async def plaid_server() -> AsyncIterator[FakePlaid]:
    fake = FakePlaid()
    async with serve_fake(fake):
        yield fake


@pytest.fixture
async def yelp_server() -> AsyncIterator[FakeYelp]:
    fake = FakeYelp()
    async with serve_fake(fake):
        yield fake


@pytest.fixture
async def google_search() -> AsyncIterator[FakeGoogleSearch]:
    fake = FakeGoogleSearch()
    async with serve_fake(fake):
        yield fake


@pytest.fixture
async def searxng() -> AsyncIterator[FakeSearxng]:
    fake = FakeSearxng()
    async with serve_fake(fake):
        yield fake
