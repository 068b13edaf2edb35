"""A real Switchboard, a real RAP tool server and a scripted model (``tests.support.rap``)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import pytest

from app.settings import Settings
from tests.support.rap import rap_stack as start_rap_stack


@pytest.fixture
def rap_stack(make_settings: Callable[..., Settings]) -> Callable[..., Any]:
    """``rap_stack(**settings)``: ``tests.support.rap.rap_stack`` on the test's database."""
    return partial(start_rap_stack, make_settings)
