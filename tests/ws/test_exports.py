"""A chat's exports carry every turn's text and how it ended (issue 33, 13).

Real turns on a real server, each ending another way: an answer cut off at the model's
length limit, one stopped mid-stream, one failed mid-stream, one replaced by a regenerate.
The text of a stopped or failed turn is not an event (the UI shows it from the turn's
``final_text``): both exports must carry it, each with its mark.
"""

from __future__ import annotations

import uuid
from typing import Any

from tests.fakes.model_server import FakeModelServer, Say, reply
from tests.support.clients import Client, open_client
from tests.support.servers import LiveServer

CUT = "The best-rated places are Umi, Hana and"
STOPPED = "The first half, then the second half."
FAILED = "Half an answer, then the model fails."


async def streamed_until_end(client: Client, prompt: str, stop_after: int = 0) -> str:
    """Send ``prompt``; after ``stop_after`` deltas (if any) stop the turn. The text that
    streamed."""
    await client.send({"type": "prompt", "text": prompt})
    events: list[dict[str, Any]] = []
    while stop_after and sum(e["type"] == "llm_response_delta" for e in events) < stop_after:
        events += await client.until("llm_response_delta")
    if stop_after:
        await client.send({"type": "cancel"})
    events += await client.until("end_of_stream")
    if events[-1]["status"] == "completed":
        await client.until("suggested_prompts")
    return "".join(e["delta"] for e in events if e["type"] == "llm_response_delta")


async def test_exports_carry_every_turn_s_text_with_how_it_ended(
    scripted_server: LiveServer, fake_model: FakeModelServer
) -> None:
    fake_model.script(
        reply(Say(CUT), incomplete="max_output_tokens"),
        # Silent after two deltas (twelve characters), until the person stops it.
        reply(Say(STOPPED), break_after=2, break_with="stall"),
        reply(Say(FAILED), break_after=2),  # the stream fails after two deltas
        Say("Lisbon is sunny."),
        Say("Lisbon is bright today."),
    )
    chat_id = uuid.uuid4().hex
    async with open_client(scripted_server.ws_url(chat_id)) as client:
        await streamed_until_end(client, "list the places")
        stopped = await streamed_until_end(client, "tell me both halves", stop_after=2)
        failed = await streamed_until_end(client, "and this one?")
        weather = await client.turn("weather in Lisbon?")
        await client.send(
            {"type": "regenerate", "turn_id": weather[0]["turn_id"], "client_message_id": "r1"}
        )
        await client.until("suggested_prompts")
    assert (stopped, failed) == (STOPPED[:12], FAILED[:12])
    async with scripted_server.client() as http:
        path = f"/api/chats/{chat_id}/export"
        markdown = (await http.get(path)).text
        document: dict[str, Any] = (await http.get(path, params={"format": "json"})).json()

    assert f"## Assistant (cut off at the model's length limit)\n\n{CUT}\n" in markdown
    assert f"## Assistant (unfinished)\n\n{stopped}\n\n> **Stopped**\n" in markdown
    # The text it had got to, then the error that stopped it, then how it ended.
    unfinished = markdown.index(f"## Assistant (unfinished)\n\n{failed}\n\n> **Error**: ")
    assert markdown.index("> **Did not finish**") > unfinished
    assert "## Assistant (replaced by a newer answer)\n\nLisbon is sunny.\n" in markdown
    assert "## Assistant\n\nLisbon is bright today.\n" in markdown

    turns = document["turns"]
    assert [(t["status"], t["final_text"], t["cut_off"]) for t in turns] == [
        ("completed", CUT, "max_output_tokens"),
        ("cancelled", stopped, None),
        ("failed", failed, None),
        ("completed", "Lisbon is sunny.", None),
        ("completed", "Lisbon is bright today.", None),
    ]
    assert [t["superseded_by"] for t in turns] == [None, None, None, turns[4]["id"], None]
    assert [t["id"] for t in turns] == list(
        dict.fromkeys(e["turn_id"] for e in document["events"] if e["type"] == "user_prompt")
    )
