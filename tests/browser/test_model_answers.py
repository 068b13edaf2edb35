"""A refusal and an answer cut off at the model's limit, in the browser: each shown as the
answer it is, with a note saying what it is (docs/protocol.md, "Refusals and cut-off
answers"), live and after a reload. The model is a fake Open Responses server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from playwright.async_api import Page

from app.settings import Settings
from tests.browser.pages import assistant_texts, open_ui, send, wait_turns_ended
from tests.fakes.model_server import FakeModelServer, Refuse, Say, reply, running_model_server
from tests.support.models import API_KEY, model_spec
from tests.support.servers import serve

REFUSAL = "I can't help with that."
CUT = "The three best-rated places are"


@pytest.fixture
async def fake_model() -> AsyncIterator[FakeModelServer]:
    async with running_model_server(FakeModelServer(api_key=API_KEY)) as server:
        yield server


async def notes(page: Page) -> list[list[str]]:
    """Each assistant message's note: [its kind, its text], or [] without one."""
    result: list[list[str]] = await page.eval_on_selector_all(
        "#transcript .message.assistant",
        """els => els.map(el => {
            const note = el.querySelector('.message-note');
            return note ? [note.classList[1], note.textContent] : [];
        })""",
    )
    return result


async def test_a_refusal_and_a_cut_off_answer_are_shown_as_such(
    ui_settings: Callable[..., Settings], fake_model: FakeModelServer, page: Page
) -> None:
    fake_model.script(Refuse(REFUSAL), reply(Say(CUT, chunk=4), incomplete="max_output_tokens"))
    fake_model.structured["FollowUps"] = {"prompts": []}
    fake_model.structured["ChatTitle"] = {"title": "Declined"}
    settings: dict[str, Any] = {
        "model": model_spec("responses", fake_model),
        "model_api_key": API_KEY,
        "model_timeout": 5,
    }
    async with serve(ui_settings(**settings)) as live:
        await open_ui(page, live.http)
        await send(page, "something I should not ask")
        await wait_turns_ended(page, 1)
        await send(page, "list every restaurant in Boston")
        await wait_turns_ended(page, 2)
        expected = [
            ["refusal", "The model declined to answer this."],
            ["cut-off", "Cut off: the answer reached the model's length limit."],
        ]
        assert await assistant_texts(page) == [REFUSAL, CUT]
        assert await notes(page) == expected
        # Both turns completed: no error row, no "Did not finish".
        assert await page.locator("#transcript .error-row").count() == 0
        assert await page.locator("#transcript .turn.status-completed").count() == 2
        await page.reload()
        await wait_turns_ended(page, 2)
        assert await assistant_texts(page) == [REFUSAL, CUT]
        assert await notes(page) == expected
