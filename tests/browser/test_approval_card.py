"""The approval card (PROTOCOL.md §3a): a tool with side effects waits in the page for the
person, shows exactly what will run, and is decided by mouse or keyboard, in this tab or
another, or runs out (expired, superseded, stopped). Nothing is sent before Approve."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

from agents import Agent
from agents.testing import ScriptedModel, assistant_message, function_call
from playwright.async_api import BrowserContext, Page, WebSocketRoute, expect
from sqlalchemy import update

from app.settings import Settings
from connectors.approvals import ApprovalPolicy, apply_policy
from connectors.gmail.demo_mailbox import build_mailbox
from connectors.gmail.tools import reply_to_google_email
from connectors.responses import ToolResponse
from connectors.tooling import connector_tool
from storage.models import approvals
from tests.browser.pages import (
    approval_card,
    approve,
    assistant_texts,
    body_items,
    cards_loaded,
    chat_id_of,
    open_ui,
    rest_events,
    retry_now,
    send,
    wait_chips,
    wait_turns_ended,
)
from tests.support.browser import WAIT_MS
from tests.support.models import scripted
from tests.support.proxies import dropping_proxy
from tests.support.servers import LiveServer, serve

EMAIL = "find sushi in Boston and email the list to bob@example.com"
PENDING_ROW = [
    "agent:Yelp",
    "card:yelp_search_results",
    "agent:GMail",
    "tool:send_google_email",
    "approval:send_google_email",
]


def sent_mail(live: LiveServer) -> list[Any]:
    """What the demo mailbox has sent for the local user (the demo Gmail's own record)."""
    return list(live.services.demo.for_user("local").namespace("gmail").get("sent", []))


async def ask_for_email(page: Page, live: LiveServer, base: str | None = None) -> None:
    await open_ui(page, base or live.http)
    await cards_loaded(page)  # the announcement uses Gmail's own words
    await send(page, EMAIL)
    await approval_card(page, "pending").wait_for()


async def asked(live: LiveServer, page: Page) -> dict[str, Any]:
    """The approval_required event of the page's chat."""
    events = await rest_events(live, chat_id_of(page))
    return next(e for e in events if e["type"] == "approval_required")


async def fields(card: Any) -> dict[str, str]:
    labels = await card.locator(".approval-fields dt").all_inner_texts()
    values = await card.locator(".approval-fields dd").all_inner_texts()
    return dict(zip(labels, values, strict=True))


async def active(page: Page) -> str:
    """What has the focus: 'card', 'prompt', a button's text, or the element's tag."""
    return await page.evaluate("""() => {
        const el = document.activeElement;
        if (!el || el === document.body) return 'body';
        if (el.classList.contains('approval')) return 'card';
        if (el.id === 'prompt') return 'prompt';
        if (el.tagName === 'BUTTON') return 'button:' + el.textContent.trim();
        return el.tagName.toLowerCase() + (el.id ? '#' + el.id : '');
    }""")


def sidebar_flag(page: Page, chat_id: str) -> Any:
    return page.locator(f"#chat-list a.chat-link[data-chat-id='{chat_id}'] .chat-flag")


async def expire_all(live: LiveServer) -> None:
    """Let every pending approval's time run out (moved, not waited for), then sweep."""
    async with live.services.db.session(write=True) as session:
        await session.execute(
            update(approvals).values(expires_at=datetime.now(UTC) - timedelta(seconds=1))
        )
        await session.commit()
    await live.services.turns.expire_approvals()


# --------------------------------------------------------------------------- the email


async def test_the_email_card_shows_everything_and_nothing_is_sent_before_approve(
    live: LiveServer, page: Page
) -> None:
    await ask_for_email(page, live)
    card = approval_card(page, "pending")
    request = await asked(live, page)
    assert await body_items(page) == PENDING_ROW
    row = page.locator("#transcript .tool-row[data-tool=send_google_email]")
    assert await row.inner_text() == "Sending an email — waiting for your approval"

    assert await card.locator(".approval-title").inner_text() == "Gmail wants to send this email"
    assert await card.locator(".approval-note").inner_text() == "Nothing is sent until you approve."
    # From is the connected Gmail account; no Cc or Bcc row when there are none.
    await expect(card.locator(".approval-fields dd").first).to_have_text("me@example.com")
    assert await fields(card) == {
        "From": "me@example.com",
        "To": "bob@example.com",
        "Subject": "Sushi in Boston, MA",
    }
    # The whole body, as plain text with its line breaks.
    body = request["arguments"]["body"]
    assert "\n\n" in body
    assert await card.locator(".approval-body p").text_content() == body
    assert await card.locator(".approval-body").evaluate("el => el.children.length") == 1
    assert (
        await card.locator(".approval-meta time").get_attribute("datetime") == request["expires_at"]
    )
    assert (
        "Sending a new message cancels this request."
        in await card.locator(".approval-meta").inner_text()
    )

    # Announced, focused (the card, not its Approve button), and Stop or a new prompt work.
    await expect(page.locator("#announcer")).to_have_text(
        "Approval needed: send an email to bob@example.com"
    )
    assert await active(page) == "card"
    assert await page.locator("#cancel").is_visible()
    assert await page.locator("#send").is_enabled()
    # The sidebar marks the chat.
    await expect(sidebar_flag(page, chat_id_of(page))).to_have_text("Needs approval")

    # Paused: the turn is a stored row with no task that could send anything meanwhile.
    running = await live.services.store.running_turn(chat_id_of(page))
    assert running is not None and running.paused
    assert live.services.turns.running_task(chat_id_of(page), running.id) is None
    assert sent_mail(live) == []
    assert await card.get_attribute("data-state") == "pending"

    await card.get_by_role("button", name="Approve and send").click()
    await wait_chips(page)
    record = approval_card(page, "approved")
    await expect(record.locator(".approval-status")).to_have_text("Approved")
    assert await record.locator(".approval-title").inner_text() == "Gmail asked to send this email"
    assert await record.get_by_role("button").count() == 0
    assert await body_items(page) == [
        "agent:Yelp",
        "card:yelp_search_results",
        "agent:GMail",
        "approval:send_google_email",
        "card:send_google_email",
        "text",
    ]
    sent = sent_mail(live)
    assert len(sent) == 1
    assert "bob@example.com" in await page.locator(".card-send_google_email .fields").inner_text()
    events = await rest_events(live, chat_id_of(page))
    assert await assistant_texts(page) == [
        next(e["text"] for e in events if e["type"] == "llm_response")
    ]
    await expect(page.locator("#announcer")).to_have_text("Approved — sending…")
    await expect(sidebar_flag(page, chat_id_of(page))).to_have_count(0)


async def test_reject_with_a_reason_sends_nothing(live: LiveServer, page: Page) -> None:
    await ask_for_email(page, live)
    card = approval_card(page, "pending")
    await card.get_by_role("button", name="Reject").click()
    reason = card.get_by_label("Reason (optional)")
    assert await active(page) == "input#" + (await reason.get_attribute("id") or "")
    assert await reason.get_attribute("maxlength") == "500"
    await reason.fill("not Bob, Alice")
    await card.get_by_role("button", name="Confirm reject").click()

    record = approval_card(page, "rejected")
    await record.wait_for()
    status = record.locator(".approval-status")
    await expect(status.locator(".approval-outcome")).to_have_text("Declined — nothing was sent")
    assert await status.locator(".approval-reason").inner_text() == "Reason: “not Bob, Alice”"
    await wait_turns_ended(page, 1)
    assert sent_mail(live) == []
    answer = (await assistant_texts(page))[-1]
    assert "not Bob, Alice" in answer
    assert "card:send_google_email" not in await body_items(page)
    # What was asked stays readable in the record.
    await record.locator("summary").click()
    assert "bob@example.com" in await record.locator(".approval-fields").inner_text()


async def test_keyboard_only_tab_to_the_buttons_and_enter(live: LiveServer, page: Page) -> None:
    await ask_for_email(page, live)
    card = approval_card(page, "pending")
    assert await active(page) == "card"
    # Keys pressed on the card itself do nothing (focus never lands on Approve by itself).
    await page.keyboard.press("Enter")
    await page.keyboard.type("y")
    assert await card.get_attribute("data-state") == "pending"

    for _ in range(6):
        if await active(page) == "button:Approve and send":
            break
        await page.keyboard.press("Tab")
    else:
        raise AssertionError("Approve cannot be reached with Tab from the card")
    await page.keyboard.press("Tab")
    assert await active(page) == "button:Reject"
    await page.keyboard.press("Enter")
    assert (await active(page)).startswith("input#")
    await page.keyboard.type("wrong list")
    # Escape backs out of the reason to the Reject button; nothing is decided.
    await page.keyboard.press("Escape")
    assert await active(page) == "button:Reject"
    assert await card.locator("form.approval-reject").is_hidden()
    assert await card.get_attribute("data-state") == "pending"

    await page.keyboard.press("Shift+Tab")
    assert await active(page) == "button:Approve and send"
    await page.keyboard.press("Enter")
    await wait_chips(page)
    assert await approval_card(page, "approved").count() == 1
    assert len(sent_mail(live)) == 1
    # The decided card keeps the focus that was on its button.
    assert await active(page) == "card"


async def test_keyboard_reject_enter_confirms_with_the_reason(live: LiveServer, page: Page) -> None:
    await ask_for_email(page, live)
    card = approval_card(page, "pending")
    await card.get_by_role("button", name="Reject").focus()
    await page.keyboard.press("Enter")
    await page.keyboard.type("too early")
    await page.keyboard.press("Enter")
    record = approval_card(page, "rejected")
    await expect(record.locator(".approval-reason")).to_have_text("Reason: “too early”")
    await wait_turns_ended(page, 1)
    assert sent_mail(live) == []


# --------------------------------------------------------------------------- reload, tabs


async def test_after_a_reload_the_card_is_live_and_the_sidebar_marks_the_chat(
    live: LiveServer, page: Page
) -> None:
    await ask_for_email(page, live)
    chat_id = chat_id_of(page)
    await page.reload()
    card = approval_card(page, "pending")
    await card.wait_for()
    assert await card.get_by_role("button", name="Approve and send").is_enabled()
    assert await active(page) == "card"
    await expect(page.locator("#announcer")).to_have_text(
        "Approval needed: send an email to bob@example.com"
    )
    await expect(sidebar_flag(page, chat_id)).to_have_text("Needs approval")

    # From another chat the marker (from GET /api/approvals) still shows, and opens it.
    await page.click("#new-chat")
    await page.wait_for_selector("#welcome:not([hidden])")
    await expect(sidebar_flag(page, chat_id)).to_have_text("Needs approval")
    link_name = await page.locator(f"#chat-list a[data-chat-id='{chat_id}']").inner_text()
    assert "Needs approval" in link_name
    await sidebar_flag(page, chat_id).click()
    await card.wait_for()
    assert chat_id_of(page) == chat_id

    await approve(page)
    await wait_chips(page)
    assert len(sent_mail(live)) == 1
    await expect(sidebar_flag(page, chat_id)).to_have_count(0)


async def test_a_card_decided_in_another_tab_updates_itself(
    live: LiveServer, page: Page, context: BrowserContext
) -> None:
    await ask_for_email(page, live)
    other = await context.new_page()
    other.set_default_timeout(WAIT_MS)
    await other.goto(page.url)
    await approval_card(other, "pending").wait_for()

    await approval_card(other, "pending").get_by_role("button", name="Reject").click()
    await other.get_by_label("Reason (optional)").fill("I'll send it myself")
    await other.keyboard.press("Enter")

    record = approval_card(page, "rejected")
    await record.wait_for()
    await expect(record.locator(".approval-outcome")).to_have_text("Declined — nothing was sent")
    assert await record.locator(".approval-reason").inner_text() == "Reason: “I'll send it myself”"
    assert (
        await record.locator(".approval-elsewhere").inner_text()
        == "Decided in another tab or on another device."
    )
    # The tab that decided does not say "elsewhere".
    assert await approval_card(other, "rejected").locator(".approval-elsewhere").count() == 0
    await wait_turns_ended(page, 1)
    assert sent_mail(live) == []
    await other.close()


async def test_a_decision_refused_by_the_server_shows_why_and_stays_disabled(
    live: LiveServer, page: Page
) -> None:
    # Another device approves first. This page hears nothing of it yet (the server's
    # events to it are held back, all but the answers to its own frames), so its Approve
    # reaches the server second and is refused.
    holding = False
    held: list[str | bytes] = []
    routes: list[WebSocketRoute] = []

    async def hold_back_events(ws: WebSocketRoute) -> None:
        server = ws.connect_to_server()
        routes.append(ws)

        def from_server(message: str | bytes) -> None:
            event = json.loads(message)
            if holding and not (event["type"] == "error" and event["seq"] is None):
                held.append(message)
            else:
                ws.send(message)

        server.on_message(from_server)

    await page.route_web_socket(re.compile(r"/ws/chats/"), hold_back_events)
    await ask_for_email(page, live)
    request = await asked(live, page)
    holding = True
    async with live.client() as http:
        decided = await http.post(
            f"/api/chats/{chat_id_of(page)}/approvals/{request['approval_id']}",
            json={"decision": "approve"},
        )
    assert decided.status_code == 200

    card = approval_card(page)
    await card.get_by_role("button", name="Approve and send").click()
    refused = card.locator(".approval-status.refused")
    await expect(refused).to_have_text(
        f"approval '{request['approval_id']}' is already approved; the first decision stands"
    )
    assert await refused.get_attribute("role") == "alert"
    assert await card.get_attribute("data-state") == "deciding"
    for button in await card.locator(".approval-actions button").all():
        assert await button.is_disabled()
    assert await page.locator("#toasts .toast").count() == 0

    # The held events arrive: the card is the record of the other device's approval.
    holding = False
    for message in held:
        routes[-1].send(message)
    await wait_chips(page)
    record = approval_card(page, "approved")
    await expect(record.locator(".approval-outcome")).to_have_text("Approved")
    assert await record.locator(".approval-elsewhere").count() == 0  # this page had asked too
    assert len(sent_mail(live)) == 1  # once


async def test_while_offline_the_decision_goes_over_rest_or_can_be_retried(
    live: LiveServer, page: Page
) -> None:
    async with dropping_proxy(live.port) as proxy:
        await ask_for_email(page, live, proxy.http)
        proxy.refusing = True
        proxy.drop()
        await page.wait_for_selector("#banner:not([hidden])")
        card = approval_card(page, "pending")
        await card.get_by_role("button", name="Approve and send").click()
        # Neither the socket nor REST gets through: say so, and let the person retry.
        await expect(card.locator(".approval-status.refused")).to_contain_text(
            "Cannot reach the server"
        )
        await expect(card.get_by_role("button", name="Approve and send")).to_be_enabled()
        assert sent_mail(live) == []

        proxy.refusing = False
        await retry_now(page)
        await page.wait_for_selector("#banner", state="hidden")
        await card.get_by_role("button", name="Approve and send").click()
        await wait_chips(page)
        assert len(sent_mail(live)) == 1


# --------------------------------------------------------------------------- no decision


async def test_a_new_prompt_supersedes_the_waiting_card(live: LiveServer, page: Page) -> None:
    await ask_for_email(page, live)
    await send(page, "what are my account balances")
    await wait_chips(page, turns=2)
    record = approval_card(page, "superseded")
    await expect(record.locator(".approval-outcome")).to_have_text(
        "Cancelled — you moved on, nothing was sent"
    )
    assert (
        await page.locator("#transcript .turn").first.locator(".turn-status").inner_text()
        == "Stopped"
    )
    assert "card:plaid_accounts_response" in await body_items(page)
    # No "wait for the current answer" refusal: the new prompt was the way out.
    assert await page.locator("#toasts .toast").count() == 0
    assert sent_mail(live) == []


async def test_stop_while_waiting_cancels_the_request(live: LiveServer, page: Page) -> None:
    await ask_for_email(page, live)
    await page.click("#cancel")
    record = approval_card(page, "superseded")
    await expect(record.locator(".approval-outcome")).to_have_text(
        "Cancelled — the answer was stopped, nothing was sent"
    )
    await wait_turns_ended(page, 1)
    assert await page.locator("#cancel").is_hidden()
    assert sent_mail(live) == []


async def test_an_expired_request_says_so(live: LiveServer, page: Page) -> None:
    await ask_for_email(page, live)
    chat_id = chat_id_of(page)
    await expect(sidebar_flag(page, chat_id)).to_have_count(1)
    await expire_all(live)
    record = approval_card(page, "expired")
    await expect(record.locator(".approval-outcome")).to_have_text("Expired — nothing was sent")
    await wait_turns_ended(page, 1)
    assert sent_mail(live) == []
    await expect(sidebar_flag(page, chat_id)).to_have_count(0)
    # The same record after a reload (from the history).
    await page.reload()
    await expect(approval_card(page, "expired").locator(".approval-outcome")).to_have_text(
        "Expired — nothing was sent"
    )


# --------------------------------------------------------------------------- other tools

release = asyncio.Event()
RUN = "window.__xss=(window.__xss||0)+1"
HTML = f'<img src=x onerror="{RUN}"><b>bold?</b>'
LONG_BODY = "\n".join(f"Line {n}: **not bold** {HTML}" for n in range(1, 121))


@connector_tool(agent_name="Notes", side_effect=False)
async def look_up(query: str) -> dict[str, Any]:
    """Look something up (slowly: it waits for the test)."""
    await release.wait()
    return ToolResponse("text", "Notes", "Looked up", "found it").to_dict()


@connector_tool(agent_name="Notes", side_effect=True)
async def post_note(title: str, tags: list[str], pinned: bool) -> dict[str, Any]:
    """Post a note.

    Args:
        title: The title.
        tags: Tags.
        pinned: Pin it.
    """
    return ToolResponse("text", "Notes", "Posted", "posted").to_dict()


@connector_tool(agent_name="GMail", name="send_google_email", side_effect=True)
async def scripted_send(
    to: list[str], subject: str, body: str, cc: list[str] | None, bcc: list[str] | None
) -> dict[str, Any]:
    """Send an email.

    Args:
        to: To.
        subject: Subject.
        body: Body.
        cc: Cc.
        bcc: Bcc.
    """
    return ToolResponse(
        "send_google_email",
        "GMail",
        "Sent Email",
        {"to": to, "subject": subject, "body": body, "cc": cc, "bcc": bcc},
    ).to_dict()


def gated(*tools: Any) -> list[Any]:
    """The tools with the SDK's approval flag set, as the server's policy sets it."""
    for tool in tools:
        tool.needs_approval = True
    return list(tools)


async def test_a_card_never_takes_the_focus_from_someone_typing(
    ui_settings: Callable[..., Settings], page: Page
) -> None:
    release.clear()
    model = ScriptedModel(
        [
            [function_call("look_up", {"query": "x"}, call_id="l1")],
            [
                function_call(
                    "post_note", {"title": HTML, "tags": ["a", "b"], "pinned": True}, call_id="n1"
                )
            ],
            [assistant_message("Here is what you asked.")],
        ]
    )
    hook = scripted(model, [look_up, *gated(post_note)])
    async with serve(ui_settings(), hooks=(hook,)) as live:
        await open_ui(page, live.http)
        await send(page, "note this")
        await page.wait_for_selector("#transcript .tool-row.running[data-tool=look_up]")
        # The person starts the next message while the answer runs.
        await page.focus("#prompt")
        await page.keyboard.type("actually, one more")
        release.set()
        card = approval_card(page, "pending")
        await card.wait_for()
        await expect(page.locator("#announcer")).to_have_text("Approval needed: running post note")
        assert await active(page) == "prompt"
        assert await page.input_value("#prompt") == "actually, one more"

        # Any other tool: its name and every argument, nested ones as JSON, all as text.
        assert (
            await card.locator(".approval-title").inner_text() == "Switchboard wants to run a tool"
        )
        assert "post_note" in await card.locator(".approval-tool").inner_text()
        labels = await card.locator(".approval-args dt").all_inner_texts()
        values = await card.locator(".approval-args dd").all_inner_texts()
        assert labels == ["Title", "Tags", "Pinned"]
        assert values[0] == HTML and values[2] == "true"
        assert await card.locator(".approval-args dd pre.json").count() == 1
        assert '"a"' in values[1] and '"b"' in values[1]
        assert await card.locator("img, b").count() == 0
        assert await page.evaluate("() => window.__xss") is None

        # Their Enter sends their message, which moves on from the request.
        await page.keyboard.press("Enter")
        record = approval_card(page, "superseded")
        await expect(record.locator(".approval-outcome")).to_have_text(
            "Cancelled — you moved on, nothing was run"
        )
        await wait_turns_ended(page, 2)


async def test_a_reply_card_shows_who_receives_it_not_a_message_id(
    ui_settings: Callable[..., Settings], page: Page
) -> None:
    # An injected email asks for a reply: the card must say where the reply goes.
    helpdesk = "it-helpdesk@account-verify.example.net"
    original = next(m for m in build_mailbox(datetime.now(UTC).date()) if m["from"] == helpdesk)
    model = ScriptedModel(
        [
            [
                function_call(
                    "reply_to_google_email",
                    {"message_id": original["id"], "body": "Checking $4,210.55"},
                    call_id="r1",
                )
            ],
            [assistant_message("Replied.")],
        ]
    )
    agent = Agent(name="GMail", tools=[reply_to_google_email])
    apply_policy([agent], ApprovalPolicy())
    async with serve(ui_settings(), hooks=(scripted(model, agent.tools),)) as live:
        await open_ui(page, live.http)
        await cards_loaded(page)
        await send(page, "what's in my inbox?")
        card = approval_card(page, "pending")
        await card.wait_for()
        await expect(page.locator("#announcer")).to_have_text(
            f"Approval needed: send a reply to {helpdesk}"
        )
        shown = await fields(card)
        assert shown == {
            "From": "me@example.com",
            "To": helpdesk,
            "Subject": "Re: Action required: verify your account",
            "In reply to": '"Action required: verify your account" from '
            f"{helpdesk}, {format_datetime(datetime.fromisoformat(original['date']))}",
        }
        assert original["id"] not in await card.inner_text()
        assert sent_mail(live) == []
        await approve(page)
        await wait_turns_ended(page, 1)
        [message] = sent_mail(live)
        assert (message["to"], message["subject"]) == (helpdesk, shown["Subject"])


async def test_an_email_body_is_plain_text_whole_and_cc_bcc_show(
    ui_settings: Callable[..., Settings], page: Page
) -> None:
    arguments = {
        "to": ["bob@example.com", "ann@example.com", "joe@example.com"],
        "subject": f"Plans {HTML}",
        "body": LONG_BODY,
        "cc": ["carol@example.com"],
        "bcc": ["dave@example.com"],
    }
    model = ScriptedModel(
        [
            [function_call("send_google_email", arguments, call_id="e1")],
            [assistant_message("Sent.")],
        ]
    )
    async with serve(ui_settings(), hooks=(scripted(model, gated(scripted_send)),)) as live:
        await open_ui(page, live.http)
        await cards_loaded(page)  # the announcement uses Gmail's own words
        await send(page, "email them")
        card = approval_card(page, "pending")
        await card.wait_for()
        await expect(page.locator("#announcer")).to_have_text(
            "Approval needed: send an email to bob@example.com and 2 others"
        )
        await expect(card.locator(".approval-fields dd").first).to_have_text("me@example.com")
        assert await fields(card) == {
            "From": "me@example.com",
            "To": "bob@example.com, ann@example.com, joe@example.com",
            "Cc": "carol@example.com",
            "Bcc": "dave@example.com",
            "Subject": f"Plans {HTML}",
        }
        body = card.locator(".approval-body")
        # Never rendered: the Markdown and the markup are the text they are, every line.
        assert await body.locator("p").text_content() == LONG_BODY
        assert await body.locator("img, b, strong").count() == 0
        assert await page.evaluate("() => window.__xss") is None
        # Long: the box scrolls, and a button says there is more and shows it all.
        assert await body.evaluate("el => el.scrollHeight > el.clientHeight")
        more = card.get_by_role("button", name="Show the whole message")
        await more.click()
        assert await body.evaluate("el => el.scrollHeight <= el.clientHeight + 1")
        assert (
            await card.get_by_role("button", name="Show less").get_attribute("aria-expanded")
            == "true"
        )

        await approve(page)
        await wait_turns_ended(page, 1)
        assert await body_items(page) == [
            "approval:send_google_email",
            "card:send_google_email",
            "text",
        ]
