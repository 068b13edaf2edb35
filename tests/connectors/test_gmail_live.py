"""Live Gmail against the fake Google: listing with pagination, MIME decoding, sending and
replying, token refresh, retries, timeouts and failures that become error cards."""

from __future__ import annotations

import base64
import json
import time
from email import message_from_bytes
from email.header import decode_header, make_header
from typing import Any

from connectors.gmail import oauth
from storage.accounts import AccountRepository
from tests.fakes.fake_service import Answer, closed_port_url
from tests.fakes.gmail_api import SCOPES, FakeGoogle
from tests.support.connectors import gmail_settings, invoke, make_context

LIST = "/gmail/v1/users/me/messages"


async def connect(
    google: FakeGoogle, accounts: AccountRepository, expires_in: float = 3599
) -> dict[str, Any]:
    tokens = google.issue_tokens(True, " ".join(SCOPES))
    credentials = oauth.live_credentials(tokens, google.email, now=time.time() - 3599 + expires_in)
    await accounts.connect("gmail", credentials, {"mode": "live", "email": google.email})
    return credentials


def by_subject(messages: list[dict[str, Any]], subject: str) -> dict[str, Any]:
    return next(m for m in messages if m["subject"] == subject)


async def test_inbox_pages_through_the_listing_and_decodes_every_body(
    google: FakeGoogle, accounts: AccountRepository, http: Any
) -> None:
    await connect(google, accounts)
    context = make_context(gmail_settings(google), accounts, http)
    output = await invoke("gmail", "google_email_inbox", context, max_results=10)

    assert output["response_type"] == "google_email_inbox"
    inbox = output["response"]
    assert len(inbox) == 10
    pages = google.calls(LIST)
    assert [r.param("pageToken") for r in pages] == [None, "4", "8"]  # server pages of 4
    assert all(r.param("labelIds") == "INBOX" for r in pages)
    dates = [m["date"] for m in inbox]
    assert dates == sorted(dates, reverse=True)
    assert all(
        list(m)
        == [
            "subject",
            "from",
            "to",
            "markdown",
            "text",
            "unread",
            "id",
            "thread_id",
            "reply_to_id",
            "cc",
            "bcc",
            "date",
        ]
        for m in inbox
    )

    shipped = by_subject(inbox, "Your order has shipped")  # HTML only
    assert "Order #58213 is on its way" in shipped["text"]
    assert "[Track it](https://shop.example.com/track/58213)" in shipped["markdown"]
    assert "**#58213**" in shipped["markdown"] and shipped["unread"] is True
    cafe = by_subject(inbox, "Café on Friday?")  # RFC 2047 subject, ISO-8859-1 body
    assert cafe["from"] == "Zoë Martin <zoe@example.org>"
    assert cafe["text"] == "On se retrouve au café vendredi ? à bientôt"
    budget = by_subject(inbox, "Q3 budget review")  # alternative + attachment
    assert budget["text"] == "Please send your numbers by Monday noon."
    assert budget["markdown"] == "Please send your numbers by **Monday noon**."
    reply = by_subject(inbox, "Re: Project Atlas: launch checklist")
    assert reply["cc"] == ["alice@example.com"] and reply["unread"] is True
    first = by_subject(inbox, "Project Atlas: launch checklist")
    assert reply["thread_id"] == first["thread_id"] and first["unread"] is False
    assert first["reply_to_id"].startswith("<") and first["reply_to_id"].endswith(">")


async def test_search_passes_gmail_syntax_and_read_opens_one_message(
    google: FakeGoogle, accounts: AccountRepository, http: Any
) -> None:
    await connect(google, accounts)
    context = make_context(gmail_settings(google), accounts, http)
    found = await invoke("gmail", "google_email_search", context, query="from:dana", max_results=5)
    assert [m["subject"] for m in found["response"]] == ["Q3 budget review"]
    assert google.calls(LIST)[-1].param("q") == "from:dana"
    sender = await invoke(
        "gmail", "google_email_search_from_email", context, email="raj@example.com"
    )
    assert [m["from"] for m in sender["response"]] == ["Raj Singh <raj@example.com>"]

    opened = await invoke(
        "gmail", "read_google_email", context, message_id=found["response"][0]["id"]
    )
    assert opened["response_type"] == "google_email_message"
    assert opened["display_as"][0]["content"].startswith("**Q3 budget review**")
    missing = await invoke("gmail", "read_google_email", context, message_id="18f0000000000999")
    assert missing["error_message"].startswith("Error: no email with id '18f0000000000999'")
    nonsense = await invoke("gmail", "read_google_email", context, message_id="../../profile")
    assert "is not a Gmail message id" in nonsense["error_message"]


async def test_send_builds_an_rfc_2822_message(
    google: FakeGoogle, accounts: AccountRepository, http: Any
) -> None:
    await connect(google, accounts)
    context = make_context(gmail_settings(google), accounts, http)
    output = await invoke(
        "gmail",
        "send_google_email",
        context,
        to=["bob@example.com"],
        subject="Sushi tonight — 7:30?",
        body="Hi Bob,\n\n1. Oishii Sushi\n2. O Ya\n\nCheers",
        cc=["carol@example.org"],
        bcc=["dave@example.net"],
    )
    assert output["response"] == {
        "to": ["bob@example.com"],
        "cc": ["carol@example.org"],
        "bcc": ["dave@example.net"],
        "subject": "Sushi tonight — 7:30?",
        "body": "Hi Bob,\n\n1. Oishii Sushi\n2. O Ya\n\nCheers",
    }
    (sent,) = google.sent()
    raw = sent.raw
    assert b"\r\n" in raw  # RFC 2822 line ends
    message = message_from_bytes(raw)
    assert message["To"] == "bob@example.com" and message["Cc"] == "carol@example.org"
    assert message["Bcc"] == "dave@example.net" and message["From"] == google.email
    assert str(make_header(decode_header(message["Subject"]))) == "Sushi tonight — 7:30?"
    assert message.get_content_type() == "text/plain"
    body = message.get_payload(decode=True)
    assert isinstance(body, bytes) and "1. Oishii Sushi" in body.decode("utf-8")

    injected = await invoke(
        "gmail",
        "send_google_email",
        context,
        to=["bob@example.com"],
        subject="Hi\r\nBcc: everyone@example.com",
        body="x",
        cc=None,
        bcc=None,
    )
    assert injected["error_message"] == "Error: the subject must be a single line"
    assert len(google.sent()) == 1  # nothing else went out


async def test_reply_stays_in_the_thread_with_threading_headers(
    google: FakeGoogle, accounts: AccountRepository, http: Any
) -> None:
    await connect(google, accounts)
    context = make_context(gmail_settings(google), accounts, http)
    inbox = (await invoke("gmail", "google_email_inbox", context, max_results=10))["response"]
    original = by_subject(inbox, "Re: Project Atlas: launch checklist")
    output = await invoke(
        "gmail",
        "reply_to_google_email",
        context,
        message_id=original["id"],
        body="Rollback plan is in the doc.",
    )
    assert output["response"]["to"] == ["Raj Singh <raj@example.com>"]
    assert output["response"]["subject"] == "Re: Project Atlas: launch checklist"
    assert output["response"]["thread_id"] == original["thread_id"]
    (sent,) = google.sent()
    assert sent.thread_id == original["thread_id"]
    send_request = google.calls(f"{LIST}/send")[-1].json()
    assert send_request["threadId"] == original["thread_id"]
    headers = message_from_bytes(sent.raw)
    assert headers["In-Reply-To"] == original["reply_to_id"]
    # References: the thread's chain, ending with the message replied to.
    assert headers["References"].split()[-1] == original["reply_to_id"]
    assert len(headers["References"].split()) == 2


async def test_a_401_refreshes_the_token_once_and_saves_it(
    google: FakeGoogle, accounts: AccountRepository, http: Any
) -> None:
    before = await connect(google, accounts)
    google.expire_access_tokens()
    context = make_context(gmail_settings(google), accounts, http)
    output = await invoke("gmail", "google_email_inbox", context, max_results=2)
    assert output["response_type"] == "google_email_inbox" and len(output["response"]) == 2

    paths = [r.path for r in google.requests]
    assert paths[:3] == [LIST, "/token", LIST]
    assert google.requests[1].body.count(b"grant_type=refresh_token") == 1
    after = await accounts.get("gmail")
    assert after is not None and after["access_token"] != before["access_token"]
    assert after["refresh_token"] == before["refresh_token"]  # Google sent none: kept
    assert after["access_token"] in google.access_tokens
    meta = {a.connector: a.meta for a in await accounts.list()}["gmail"]
    assert meta == {"mode": "live", "email": google.email}  # the meta is kept


async def test_an_expired_token_is_refreshed_before_the_call(
    google: FakeGoogle, accounts: AccountRepository, http: Any
) -> None:
    await connect(google, accounts, expires_in=-10)
    context = make_context(gmail_settings(google), accounts, http)
    output = await invoke("gmail", "google_email_inbox", context, max_results=1)
    assert output["response_type"] == "google_email_inbox"
    assert [r.path for r in google.requests][:2] == ["/token", LIST]
    saved = await accounts.get("gmail")
    assert saved is not None
    assert google.calls(LIST)[0].headers["authorization"] == f"Bearer {saved['access_token']}"


async def test_a_revoked_grant_disconnects_and_shows_the_connect_card(
    google: FakeGoogle, accounts: AccountRepository, http: Any
) -> None:
    await connect(google, accounts)
    google.expire_access_tokens()
    google.revoke_refresh_tokens()
    context = make_context(gmail_settings(google), accounts, http)
    output = await invoke("gmail", "google_email_inbox", context, max_results=5)
    assert output["response_type"] == "google_account_needed"
    assert "revoked or has expired" in output["response"]["message"]
    assert await accounts.get("gmail") is None  # the dead grant is gone


async def test_not_connected_shows_the_connect_card_without_calling_google(
    google: FakeGoogle, accounts: AccountRepository, http: Any
) -> None:
    context = make_context(gmail_settings(google), accounts, http)
    output = await invoke(
        "gmail",
        "send_google_email",
        context,
        to=["bob@example.com"],
        subject="x",
        body="y",
        cc=None,
        bcc=None,
    )
    assert output["response_type"] == "google_account_needed"
    # A demo row (from demo mode) does not count as a live account.
    await accounts.connect("gmail", {"mode": "demo", "connected": True}, {"mode": "demo"})
    again = await invoke("gmail", "google_email_inbox", context, max_results=5)
    assert again["response_type"] == "google_account_needed"
    assert google.requests == []


async def test_429_is_retried_after_retry_after(
    google: FakeGoogle, accounts: AccountRepository, http: Any
) -> None:
    await connect(google, accounts)
    google.script(
        LIST,
        Answer(
            429,
            {
                "error": {
                    "code": 429,
                    "message": "Too many requests",
                    "status": "RESOURCE_EXHAUSTED",
                }
            },
            {"Retry-After": "0"},
        ),
        Answer(503, "backend error", {"Retry-After": "0"}),
    )
    context = make_context(gmail_settings(google), accounts, http)
    output = await invoke("gmail", "google_email_inbox", context, max_results=3)
    assert output["response_type"] == "google_email_inbox" and len(output["response"]) == 3
    assert [r.path for r in google.requests][:3] == [LIST, LIST, LIST]


async def test_a_long_retry_after_fails_at_once_with_when_to_retry(
    google: FakeGoogle, accounts: AccountRepository, http: Any
) -> None:
    await connect(google, accounts)
    google.script(
        LIST,
        Answer(
            429,
            {"error": {"code": 429, "message": "Quota exceeded", "status": "RESOURCE_EXHAUSTED"}},
            {"Retry-After": "120"},
        ),
    )
    context = make_context(gmail_settings(google), accounts, http)
    output = await invoke("gmail", "google_email_inbox", context, max_results=3)
    assert output["response_type"] == "error"
    assert output["error_message"] == (
        "Error: Gmail is rate limiting requests: Quota exceeded; try again in 120 seconds"
    )
    assert len(google.calls(LIST)) == 1
    assert output["debug_info"] == {"service": "Gmail", "status": 429}


async def test_persistent_5xx_becomes_an_error_card_after_the_retries(
    google: FakeGoogle, accounts: AccountRepository, http: Any
) -> None:
    await connect(google, accounts)
    google.script(
        LIST,
        *[
            Answer(
                503, {"error": {"code": 503, "message": "Backend Error", "status": "UNAVAILABLE"}}
            )
        ]
        * 3,
    )
    context = make_context(gmail_settings(google), accounts, http)
    output = await invoke("gmail", "google_email_inbox", context, max_results=3)
    assert output["error_message"] == (
        "Error: Gmail is having trouble (HTTP 503): Backend Error; try again later"
    )
    assert len(google.calls(LIST)) == 3  # the first attempt and two retries


async def test_a_send_is_never_repeated_after_a_5xx(
    google: FakeGoogle, accounts: AccountRepository, http: Any
) -> None:
    await connect(google, accounts)
    google.script(
        f"{LIST}/send",
        Answer(503, {"error": {"code": 503, "message": "Backend Error", "status": "UNAVAILABLE"}}),
    )
    context = make_context(gmail_settings(google), accounts, http)
    output = await invoke(
        "gmail",
        "send_google_email",
        context,
        to=["bob@example.com"],
        subject="Once",
        body="Only once",
        cc=None,
        bcc=None,
    )
    assert output["response_type"] == "error" and "HTTP 503" in output["error_message"]
    assert len(google.calls(f"{LIST}/send")) == 1  # Gmail may have sent it: not twice


async def test_a_timeout_becomes_an_error_card(
    google: FakeGoogle, accounts: AccountRepository, http: Any
) -> None:
    await connect(google, accounts)
    google.script(LIST, Answer(200, {}, delay=1.0))
    context = make_context(gmail_settings(google, http_timeout=0.2, http_retries=0), accounts, http)
    output = await invoke("gmail", "google_email_inbox", context, max_results=3)
    assert output["error_message"] == (
        "Error: Gmail did not answer within 0.2 seconds; try again in a moment"
    )


async def test_an_unreachable_service_and_secrets_in_errors(
    google: FakeGoogle, accounts: AccountRepository, http: Any
) -> None:
    credentials = await connect(google, accounts)
    token = credentials["access_token"]
    google.script(
        LIST,
        Answer(
            400,
            {
                "error": {
                    "code": 400,
                    "message": f"Invalid query near token {token}",
                    "status": "INVALID_ARGUMENT",
                }
            },
        ),
    )
    context = make_context(gmail_settings(google), accounts, http)
    output = await invoke("gmail", "google_email_search", context, query="(", max_results=3)
    assert output["error_message"] == (
        "Error: Gmail rejected the request (HTTP 400): Invalid query near token [redacted]"
    )
    assert token not in json.dumps(output) and google.client_secret not in json.dumps(output)

    offline = make_context(
        gmail_settings(google, gmail_base_url=closed_port_url(), http_retries=1), accounts, http
    )
    unreachable = await invoke("gmail", "google_email_inbox", offline, max_results=3)
    assert unreachable["error_message"] == (
        "Error: could not reach Gmail (the connection failed); try again later"
    )
    assert unreachable["debug_info"]["attempts"] == 2


async def test_base64url_bodies_with_and_without_padding() -> None:
    from connectors.gmail.mime import b64url_decode

    for text in (b"a", b"ab", b"abc", "café ✓".encode()):
        encoded = base64.urlsafe_b64encode(text).decode()
        assert b64url_decode(encoded) == text
        assert b64url_decode(encoded.rstrip("=")) == text
