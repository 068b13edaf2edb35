"""Regenerate, edit and continue over a real socket on a real server (docs/protocol.md,
"Regenerate, edit and continue"): the frames' turns, what the model is sent, the marks on
superseded turns in the log, the REST API and the export, idempotency and refusals."""

from __future__ import annotations

import json
import uuid
from typing import Any

from storage.session import ChatSession
from storage.turn_actions import CONTINUE_PROMPT
from tests.fakes.model_server import FakeModelServer, Say, reply
from tests.support.clients import Client, open_client
from tests.support.servers import LiveServer
from tests.ws.test_approvals import EMAIL, sent_mail
from tests.ws.test_turns import assert_turn_order
from websocket.protocol import validate_server_event


def new_chat() -> str:
    return uuid.uuid4().hex


def new_id() -> str:
    return uuid.uuid4().hex


async def act(client: Client, frame: dict[str, Any]) -> list[dict[str, Any]]:
    """Send a frame that starts a turn; the events up to its end (and its suggestions)."""
    await client.send(frame)
    events = await client.until("end_of_stream")
    if events[-1]["status"] == "completed":
        events += await client.until("suggested_prompts")
    return events


async def refused(client: Client, frame: dict[str, Any]) -> dict[str, Any]:
    """Send a frame the server must refuse; its ``error``."""
    await client.send(frame)
    error = (await client.until("error"))[-1]
    validate_server_event(error)
    assert error["turn_id"] is None and error["seq"] is None
    return error


async def stored(live: LiveServer, chat_id: str) -> list[dict[str, Any]]:
    async with live.client() as http:
        return (await http.get(f"/api/chats/{chat_id}/events")).json()["events"]


async def turns_of(live: LiveServer, chat_id: str) -> list[dict[str, Any]]:
    async with live.client() as http:
        return (await http.get(f"/api/chats/{chat_id}")).json()["turns"]


def model_input(fake: FakeModelServer, index: int) -> str:
    """What the model was sent in the turn request ``index``, as text."""
    return json.dumps(fake.turn_requests()[index].body["input"])


def first(events: list[dict[str, Any]], type_: str) -> dict[str, Any]:
    return next(e for e in events if e["type"] == type_)


def turn_events(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The new turn's own events (from its user_prompt on)."""
    start = next(i for i, e in enumerate(events) if e["type"] == "user_prompt")
    return events[start:]


# --------------------------------------------------------------------------- regenerate


async def test_regenerate_replaces_the_latest_answer_and_the_model_forgets_it(
    scripted_server: LiveServer, fake_model: FakeModelServer
) -> None:
    fake_model.script(Say("Lisbon is sunny."), Say("Lisbon is bright today."), Say("Noted."))
    chat_id = new_chat()
    async with open_client(scripted_server.ws_url(chat_id)) as client:
        old = await client.turn("weather in Lisbon?")
        old_id = old[0]["turn_id"]
        events = await act(
            client, {"type": "regenerate", "turn_id": old_id, "client_message_id": "r1"}
        )
        for event in events:
            if event["seq"] is not None:
                validate_server_event(event)
        superseded, prompt = [e for e in events if e["type"] in ("turn_superseded", "user_prompt")]
        new_id = prompt["turn_id"]
        assert (superseded["turn_id"], superseded["by_turn_id"], superseded["action"]) == (
            old_id,
            new_id,
            "regenerate",
        )
        assert superseded["seq"] + 1 == prompt["seq"]  # written together, right before it
        assert (prompt["text"], prompt["action"], prompt["source_turn_id"]) == (
            "weather in Lisbon?",
            "regenerate",
            old_id,
        )
        assert_turn_order(turn_events(events))
        assert first(events, "llm_response")["text"] == "Lisbon is bright today."
        await client.turn("thanks")

    # The regenerated turn's model saw the prompt once and not the old answer; the next
    # turn sees the new answer only.
    again, later = model_input(fake_model, 1), model_input(fake_model, 2)
    assert again.count("weather in Lisbon?") == 1 and "Lisbon is sunny." not in again
    assert "Lisbon is bright today." in later and "Lisbon is sunny." not in later
    assert later.count("weather in Lisbon?") == 1
    # The log keeps the old turn, marked; REST says who replaced it.
    log = await stored(scripted_server, chat_id)
    assert [e["text"] for e in log if e["type"] == "llm_response"] == [
        "Lisbon is sunny.",
        "Lisbon is bright today.",
        "Noted.",
    ]
    assert [e["seq"] for e in log] == list(range(1, len(log) + 1))
    turns = {t["id"]: t for t in await turns_of(scripted_server, chat_id)}
    assert turns[old_id]["superseded_by"] == new_id
    assert turns[new_id]["superseded_by"] is None and turns[new_id]["continues"] is None


async def test_a_repeated_regenerate_starts_nothing_and_a_reused_id_is_refused(
    server: LiveServer,
) -> None:
    chat_id = new_chat()
    async with open_client(server.ws_url(chat_id)) as client:
        first_turn = (await client.turn("hello"))[0]["turn_id"]
        frame = {"type": "regenerate", "turn_id": first_turn, "client_message_id": "again-1"}
        events = await act(client, frame)
        prompt = first(events, "user_prompt")
        before = await stored(server, chat_id)
        # The same frame again (a retry after a drop): its user_prompt again, nothing new.
        await client.send(frame)
        echo = (await client.until("user_prompt"))[-1]
        assert echo == prompt
        # The same id for something else is a client bug.
        error = await refused(
            client, {"type": "continue", "turn_id": first_turn, "client_message_id": "again-1"}
        )
        assert error["code"] == "invalid_request" and "already used" in error["message"]
        # An edit repeated is answered the same way; the same id with another prompt is
        # refused.
        edit = {
            "type": "edit",
            "turn_id": prompt["turn_id"],
            "prompt": "what can you do?",
            "client_message_id": "again-2",
        }
        edited = first(await act(client, edit), "user_prompt")
        after_edit = await stored(server, chat_id)
        await client.send(edit)
        assert (await client.until("user_prompt"))[-1] == edited
        error = await refused(client, {**edit, "prompt": "something else"})
        assert error["code"] == "invalid_request" and "already used" in error["message"]
        await client.send({"type": "ping"})
        await client.until("pong")
    assert await stored(server, chat_id) == after_edit
    assert after_edit[: len(before)] == before
    assert [e["type"] for e in after_edit].count("user_prompt") == 3


# --------------------------------------------------------------------------- edit


async def test_edit_supersedes_that_turn_and_every_later_one(
    scripted_server: LiveServer, fake_model: FakeModelServer
) -> None:
    fake_model.script(
        Say("Alpha answer."), Say("Bravo answer."), Say("Charlie answer."), Say("Delta answer.")
    )
    chat_id = new_chat()
    async with open_client(scripted_server.ws_url(chat_id)) as client:
        ids = [(await client.turn(text))[0]["turn_id"] for text in ("alpha?", "bravo?", "charlie?")]
        events = await act(
            client,
            {"type": "edit", "turn_id": ids[1], "prompt": "bravissimo?", "client_message_id": "e1"},
        )
    marks = [e for e in events if e["type"] == "turn_superseded"]
    prompt = first(events, "user_prompt")
    assert [(m["turn_id"], m["by_turn_id"], m["action"]) for m in marks] == [
        (ids[1], prompt["turn_id"], "edit"),
        (ids[2], prompt["turn_id"], "edit"),
    ]
    assert [m["seq"] for m in marks] == [prompt["seq"] - 2, prompt["seq"] - 1]
    assert (prompt["text"], prompt["action"], prompt["source_turn_id"]) == (
        "bravissimo?",
        "edit",
        ids[1],
    )
    sent = model_input(fake_model, 3)
    for kept in ("alpha?", "Alpha answer.", "bravissimo?"):
        assert kept in sent
    for gone in ('"bravo?"', "Bravo answer.", "charlie?", "Charlie answer."):
        assert gone not in sent
    turns = {t["id"]: t for t in await turns_of(scripted_server, chat_id)}
    assert [turns[i]["superseded_by"] for i in ids] == [None, prompt["turn_id"], prompt["turn_id"]]
    async with scripted_server.client() as http:
        markdown = (await http.get(f"/api/chats/{chat_id}/export?format=markdown")).text
    assert markdown.count("(replaced by a newer answer)") == 4  # two prompts, two answers
    assert "## Assistant\n\nAlpha answer." in markdown
    assert "## Assistant (replaced by a newer answer)\n\nBravo answer." in markdown


# --------------------------------------------------------------------------- continue


async def test_continue_a_stopped_answer(
    scripted_server: LiveServer, fake_model: FakeModelServer
) -> None:
    # The first reply goes silent after two deltas (12 characters): the person stops it.
    fake_model.script(
        reply(Say("The first half, then the second half."), break_after=2, break_with="stall"),
        Say("lf, then the second half."),
    )
    chat_id = new_chat()
    async with open_client(scripted_server.ws_url(chat_id)) as client:
        await client.send({"type": "prompt", "text": "tell me both halves"})
        started = (await client.until("llm_response_delta"))[0]
        stopped_id = started["turn_id"]
        # While it runs, nothing can be made from it.
        error = await refused(
            client, {"type": "continue", "turn_id": stopped_id, "client_message_id": "c0"}
        )
        assert (error["code"], error["refusal"], error["client_message_id"]) == (
            "turn_in_progress",
            "turn_running",
            "c0",
        )
        assert error["retryable"] is True
        await client.send({"type": "cancel"})
        end = (await client.until("end_of_stream"))[-1]
        assert end["status"] == "cancelled"
        events = await act(
            client, {"type": "continue", "turn_id": stopped_id, "client_message_id": "c1"}
        )
        prompt = first(events, "user_prompt")
        assert not [e for e in events if e["type"] == "turn_superseded"]
        assert (prompt["text"], prompt["action"], prompt["source_turn_id"]) == (
            CONTINUE_PROMPT,
            "continue",
            stopped_id,
        )
        assert first(events, "llm_response")["text"] == "lf, then the second half."
        # A continuation has no prompt of its own to edit.
        error = await refused(
            client,
            {
                "type": "edit",
                "turn_id": prompt["turn_id"],
                "prompt": "x",
                "client_message_id": "c2",
            },
        )
        assert (error["code"], error["refusal"]) == ("invalid_request", "not_editable")
    sent = fake_model.turn_requests()[1].body["input"]
    # The model read its stopped answer as its own last message, then the instruction.
    assert [(item["role"], item["content"]) for item in sent[-2:]] == [
        ("assistant", "The first ha"),
        ("user", CONTINUE_PROMPT),
    ]
    assert json.dumps(sent).count("The first ha") == 1
    turns = {t["id"]: t for t in await turns_of(scripted_server, chat_id)}
    assert turns[stopped_id]["superseded_by"] is None  # the stopped turn stays as it is
    assert turns[stopped_id]["status"] == "cancelled"
    assert turns[prompt["turn_id"]]["continues"] == stopped_id


async def test_continue_a_cut_off_answer_sends_it_once(
    scripted_server: LiveServer, fake_model: FakeModelServer
) -> None:
    fake_model.script(
        reply(Say("A long list: one, two"), incomplete="max_output_tokens"),
        Say(", three."),
    )
    chat_id = new_chat()
    async with open_client(scripted_server.ws_url(chat_id)) as client:
        cut = await client.turn("list them")
        assert first(cut, "llm_response")["incomplete_reason"] == "max_output_tokens"
        events = await act(
            client,
            {"type": "continue", "turn_id": cut[0]["turn_id"], "client_message_id": "cc"},
        )
        assert first(events, "llm_response")["text"] == ", three."
    sent = model_input(fake_model, 1)
    # The cut answer is in the history already (docs/protocol.md, "Refusals and cut-off
    # answers"): it is not given a second time.
    assert sent.count("A long list: one, two") == 1 and CONTINUE_PROMPT in sent


# --------------------------------------------------------------------------- refusals


async def test_every_refusal_names_its_cause_and_changes_nothing(server: LiveServer) -> None:
    chat_id = new_chat()
    async with open_client(server.ws_url(chat_id)) as client:
        one = (await client.turn("hello"))[0]["turn_id"]
        two = (await client.turn("what can you do?"))[0]["turn_id"]
        latest = first(await act(client, {"type": "regenerate", "turn_id": two}), "user_prompt")
        replaced, latest = two, latest["turn_id"]
        before = await stored(server, chat_id)
        cases: list[tuple[dict[str, Any], str, str]] = [
            ({"type": "regenerate", "turn_id": "nope"}, "not_found", "turn_not_found"),
            ({"type": "continue", "turn_id": "nope"}, "not_found", "turn_not_found"),
            ({"type": "edit", "turn_id": "nope", "prompt": "x"}, "not_found", "turn_not_found"),
            ({"type": "regenerate", "turn_id": one}, "invalid_request", "not_latest_turn"),
            ({"type": "continue", "turn_id": one}, "invalid_request", "not_latest_turn"),
            ({"type": "regenerate", "turn_id": replaced}, "invalid_request", "turn_superseded"),
            (
                {"type": "edit", "turn_id": replaced, "prompt": "x"},
                "invalid_request",
                "turn_superseded",
            ),
            ({"type": "continue", "turn_id": latest}, "invalid_request", "not_stopped"),
        ]
        for frame, code, refusal in cases:
            error = await refused(client, {**frame, "client_message_id": new_id()})
            assert (error["code"], error.get("refusal")) == (code, refusal), frame
            assert error["retryable"] is False
        # Malformed frames are refused before anything is looked up.
        for frame, message in [
            ({"type": "regenerate"}, "regenerate.turn_id is required"),
            ({"type": "edit", "turn_id": one, "prompt": "  "}, "edit.prompt must not be blank"),
            ({"type": "edit", "turn_id": one}, "edit.prompt is required"),
            ({"type": "continue", "turn_id": 5}, "continue.turn_id must be a string of 1..64"),
            ({"type": "regenerate", "turn_id": one, "text": "x"}, "unknown field 'text'"),
        ]:
            error = await refused(client, frame)
            assert error["code"] == "invalid_request" and message in error["message"], error
    assert await stored(server, chat_id) == before
    # Another chat's turn is unknown here.
    async with open_client(server.ws_url(new_chat())) as other:
        error = await refused(other, {"type": "regenerate", "turn_id": latest})
        assert error["refusal"] == "turn_not_found"


async def test_a_turn_waiting_for_approval_is_not_replaced(server: LiveServer) -> None:
    chat_id = new_chat()
    async with open_client(server.ws_url(chat_id)) as client:
        await client.send({"type": "prompt", "text": EMAIL})
        asked = (await client.until("approval_required"))[-1]
        before = await stored(server, chat_id)
        for frame in (
            {"type": "regenerate", "turn_id": asked["turn_id"]},
            {"type": "edit", "turn_id": asked["turn_id"], "prompt": "never mind"},
        ):
            error = await refused(client, frame)
            assert (error["code"], error["refusal"]) == ("turn_in_progress", "awaiting_approval")
        assert await stored(server, chat_id) == before
        await client.decide(asked["approval_id"], approve=False)
        await client.decide_until_end()


async def test_a_side_effect_stays_a_fact_after_its_turn_is_regenerated(
    server: LiveServer,
) -> None:
    chat_id = new_chat()
    async with open_client(server.ws_url(chat_id)) as client:
        emailed = await client.turn(EMAIL)
        assert len(sent_mail(server)) == 1
        await client.send({"type": "regenerate", "turn_id": emailed[0]["turn_id"]})
        # The regenerated turn asks again (the model may well send it again): rejected.
        asked = (await client.until("approval_required"))[-1]
        history = json.dumps(await ChatSession(server.services.db, chat_id).get_items())
        await client.decide(asked["approval_id"], approve=False)
        await client.decide_until_end()
    # The email that was sent is still told to the model, with its result; the rest of
    # the replaced turn (its search, its answer) is not.
    assert history.count('"name": "send_google_email"') == 1
    assert "search_businesses_at_yelp" not in history
    assert len(sent_mail(server)) == 1  # nothing was un-sent, nothing sent twice


# --------------------------------------------------------------------------- other tabs


async def test_two_tabs_see_the_same_marks_and_a_drop_mid_regenerate_loses_nothing(
    server: LiveServer,
) -> None:
    chat_id = new_chat()
    async with (
        open_client(server.ws_url(chat_id)) as one,
        open_client(server.ws_url(chat_id)) as two,
    ):
        old = (await one.turn("hello"))[0]["turn_id"]
        await two.until("suggested_prompts")
        seen = max(e["seq"] for e in one.events if e["seq"] is not None)
        await one.send({"type": "regenerate", "turn_id": old, "client_message_id": "tabs"})
        await one.until("turn_superseded")
        # Tab one drops right after the mark; it comes back and resumes.
        await one.connection.close()
        on_two = await two.until("end_of_stream")
    async with open_client(server.ws_url(chat_id, after_seq=seen)) as back:
        resumed = await back.until("end_of_stream")
    log = [e for e in await stored(server, chat_id) if e["seq"] > seen]
    got_back = [e for e in resumed if e["seq"] is not None]
    assert [e["seq"] for e in got_back] == [e["seq"] for e in log[: len(got_back)]]
    assert log[0]["type"] == "turn_superseded" and log[0]["turn_id"] == old
    assert [e for e in on_two if e["seq"] is not None] == log[: len(got_back)]


async def test_a_rename_reaches_every_open_tab(server: LiveServer) -> None:
    chat_id = new_chat()
    async with (
        open_client(server.ws_url(chat_id)) as one,
        open_client(server.ws_url(chat_id)) as two,
    ):
        await one.turn("hello")
        await two.until("suggested_prompts")
        async with server.client() as http:
            answer = await http.patch(f"/api/chats/{chat_id}", json={"title": "  Hello   there "})
        assert answer.status_code == 200
        for tab in (one, two):
            renamed = (await tab.until("chat_renamed"))[-1]
            validate_server_event(renamed)
            assert (renamed["title"], renamed["turn_id"], renamed["seq"]) == (
                "Hello there",
                None,
                None,
            )
        # Nothing else came first: the rename is the one new frame.
        await one.send({"type": "ping"})
        assert [e["type"] for e in await one.until("pong")] == ["pong"]
