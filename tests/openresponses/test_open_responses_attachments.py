"""``input_image`` and ``input_file`` on ``POST /v1/responses``: stored as attachments of
the response's chat through the same sniffing and limits as an upload, acknowledged by the
offline model; remote URLs and bad files are 400s in the spec's error shape that store
nothing."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from app.settings import Settings
from storage.models import attachments
from tests.openresponses.test_open_responses_compliance import MODEL, compliant, create, text_of
from tests.support.files import PDF, png
from tests.support.servers import LiveServer, serve

IMAGE = png(16, 9)
LIMIT = 2048


def data_url(content_type: str, data: bytes) -> str:
    return f"data:{content_type};base64,{base64.b64encode(data).decode()}"


def asking(*parts: dict[str, Any]) -> dict[str, Any]:
    content = [{"type": "input_text", "text": "What are these?"}, *parts]
    return {"model": MODEL, "input": [{"type": "message", "role": "user", "content": content}]}


@pytest.fixture
async def live(make_settings: Callable[..., Settings]) -> AsyncIterator[LiveServer]:
    settings = make_settings(offline_delta_delay=0, attachment_max_bytes=LIMIT)
    async with serve(settings) as server:
        yield server


async def stored(live: LiveServer) -> tuple[int, list[Path]]:
    async with live.services.db.session() as session:
        rows = await session.scalar(select(func.count()).select_from(attachments))
    root = live.settings.data_dir / "attachments"
    return int(rows or 0), [p for p in root.rglob("*") if p.is_file()]


async def test_an_image_and_a_file_are_stored_and_acknowledged(live: LiveServer) -> None:
    body = await create(
        live,
        asking(
            {"type": "input_image", "image_url": data_url("image/png", IMAGE)},
            {"type": "input_file", "filename": "report.pdf", "file_data": data_url("x/y", PDF)},
        ),
    )
    assert compliant(body)["status"] == "completed"
    assert text_of(body).startswith(
        f"I received image.png (PNG image, {len(IMAGE)} bytes, 16×9) and "
        f"report.pdf (PDF document, {len(PDF)} bytes)."
    )
    rows, blobs = await stored(live)
    assert (rows, len(blobs)) == (2, 2)
    # The chat's user_prompt shows them, as for a prompt from the socket.
    async with live.services.db.session() as session:
        chat_id = await session.scalar(select(attachments.c.chat_id))
    async with live.client("local") as http:
        events = (await http.get(f"/api/chats/{chat_id}/events")).json()["events"]
    shown = events[0]["attachments"]
    assert [(a["name"], a["content_type"]) for a in shown] == [
        ("image.png", "image/png"),
        ("report.pdf", "application/pdf"),
    ]


@pytest.mark.parametrize(
    ("part", "param", "words"),
    [
        (
            {"type": "input_image", "image_url": "https://img.example/cat.png"},
            "input[0].content[1].image_url",
            "remote image URLs are not fetched",
        ),
        (
            {
                "type": "input_image",
                "image_url": data_url("image/png", b"<html><script>alert(1)</script></html>"),
            },
            "input[0].content[1].image_url",
            "HTML",
        ),
        (
            {"type": "input_image", "image_url": data_url("image/png", b"plain words")},
            "input[0].content[1].image_url",
            "is not an image",
        ),
        (
            {
                "type": "input_file",
                "filename": "big.txt",
                "file_data": data_url("text/plain", b"a" * (LIMIT + 1)),
            },
            "input[0].content[2].file_data",
            "at most 2,048 bytes",
        ),
    ],
    ids=["remote-url", "html-as-png", "text-as-image", "too-large"],
)
async def test_bad_parts_are_400s_that_store_nothing(
    live: LiveServer, part: dict[str, Any], param: str, words: str
) -> None:
    good = {"type": "input_image", "image_url": data_url("image/png", IMAGE)}
    parts = [part] if param.startswith("input[0].content[1]") else [good, part]
    body = await create(live, asking(*parts), status=400)
    error = body["error"]
    assert error["type"] == "invalid_request" and error["param"] == param, error
    assert words in error["message"]
    # Not even the good image of the same request was kept.
    assert await stored(live) == (0, [])
