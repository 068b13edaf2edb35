"""The live Gmail backend: Gmail REST API v1 with the user's OAuth token.

``messages.list`` (paged with ``pageToken``) then ``messages.get?format=full`` for each id,
a few at a time; ``messages.send`` with a base64url RFC 2822 message, in the original
thread with ``In-Reply-To``/``References`` for replies. An expired access token is
refreshed before the call (or after a 401) and saved; a revoked grant disconnects the
account and answers with the "Connect your Google account" card.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from connectors.accounts import save_credentials
from connectors.context import ChatContext
from connectors.gmail.effects import Original, ReplyPlan
from connectors.gmail.mime import (
    LIST_BODY_CHARS,
    READ_BODY_CHARS,
    Email,
    addresses_in,
    build_raw,
    headers_of,
    reply_subject,
    sender_address,
    to_email,
)
from connectors.gmail.oauth import GoogleOAuth, InvalidGrant, expiring, live_credentials
from connectors.gmail.responses import GoogleAccountNeededResponse
from connectors.gmail.settings import GmailSettings
from connectors.service_http import ServiceError, ServiceHttp, read_json, shared_client
from connectors.tooling import NeedsAccount, ToolError

CONNECTOR = "gmail"
SERVICE = "Gmail"
MAX_PAGES = 10
CONCURRENT_FETCHES = 8  # messages.get calls in flight per listing
MESSAGE_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")

Persist = Callable[[dict[str, Any]], Awaitable[Any]]
Forget = Callable[[], Awaitable[Any]]


def reconnect_card(reason: str) -> GoogleAccountNeededResponse:
    return GoogleAccountNeededResponse(
        message=f"{reason} Connect your Google account again so I can read and send email."
    )


class GmailApi:
    """Authorised calls to ``/gmail/v1/users/me/…``, refreshing the token when needed."""

    def __init__(
        self,
        http: ServiceHttp,
        oauth: GoogleOAuth,
        base_url: str,
        credentials: dict[str, Any],
        persist: Persist,
        forget: Forget,
    ) -> None:
        self._http = http
        self._oauth = oauth
        self._base = f"{base_url}/gmail/v1/users/me"
        self.credentials = credentials
        self._persist = persist
        self._forget = forget
        self._refreshing = asyncio.Lock()

    async def call(
        self, method: str, path: str, *, idempotent: bool = True, **kwargs: Any
    ) -> dict[str, Any]:
        if expiring(self.credentials):
            await self._refresh(self.credentials.get("access_token"))
        refreshed = False
        while True:
            token = str(self.credentials.get("access_token", ""))
            response = await self._http.send(
                method,
                f"{self._base}{path}",
                idempotent=idempotent,
                headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
                **kwargs,
            )
            if response.status_code == 401 and not refreshed:
                await self._refresh(token)
                refreshed = True
                continue
            if response.is_success:
                body = read_json(response, SERVICE) if response.content else {}
                return body if isinstance(body, dict) else {}
            raise self._error(response)

    async def _refresh(self, stale_token: object) -> None:
        # One refresh for concurrent calls: the others wait and reuse its token.
        async with self._refreshing:
            if self.credentials.get("access_token") != stale_token:
                return
            refresh_token = self.credentials.get("refresh_token")
            if not refresh_token:
                await self._forget()
                raise NeedsAccount(reconnect_card("Your Google access has expired."))
            try:
                tokens = await self._oauth.refresh(str(refresh_token))
            except InvalidGrant:
                await self._forget()
                raise NeedsAccount(
                    reconnect_card("Google access was revoked or has expired.")
                ) from None
            self.credentials = live_credentials(tokens, None, previous=self.credentials)
            await self._persist(self.credentials)

    def _error(self, response: Any) -> ServiceError:
        detail: str | None = None
        reason = ""
        try:
            body = response.json()
        except ValueError:
            body = None
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            error = body["error"]
            detail = error.get("message")
            reasons = [
                str(e.get("reason", "")) for e in error.get("errors") or [] if isinstance(e, dict)
            ]
            reason = " ".join([str(error.get("status", "")), *reasons]).lower()
        advice = None
        if response.status_code == 401:
            advice = "connect your Google account again"
        elif response.status_code == 403 and ("insufficient" in reason or "permission" in reason):
            advice = "connect your Google account again and allow reading and sending email"
        return self._http.status_error(response, detail, advice)


class GmailClient:
    """``GmailBackend`` over the Gmail API."""

    def __init__(self, api: GmailApi, me: str | None) -> None:
        self._api = api
        self._me = me

    async def _list_ids(
        self, max_results: int, query: str | None = None, label: str | None = None
    ) -> list[str]:
        ids: list[str] = []
        page_token: str | None = None
        for _page in range(MAX_PAGES):
            params: dict[str, Any] = {"maxResults": min(100, max_results - len(ids))}
            if query:
                params["q"] = query
            if label:
                params["labelIds"] = label
            if page_token:
                params["pageToken"] = page_token
            body = await self._api.call("GET", "/messages", params=params)
            ids.extend(
                str(m["id"])
                for m in body.get("messages") or []
                if isinstance(m, dict) and m.get("id")
            )
            page_token = body.get("nextPageToken")
            if not page_token or len(ids) >= max_results:
                break
        return ids[:max_results]

    async def _fetch(self, message_id: str) -> dict[str, Any]:
        if not MESSAGE_ID.fullmatch(message_id):
            raise ToolError(
                f"{message_id!r} is not a Gmail message id; list or search the "
                "mailbox to find the id"
            )
        try:
            return await self._api.call(
                "GET", f"/messages/{quote(message_id, safe='')}", params={"format": "full"}
            )
        except ServiceError as exc:
            if exc.status in (400, 404):
                raise ToolError(
                    f"no email with id {message_id!r}; list or search the mailbox "
                    "to find the message id"
                ) from None
            raise

    async def _fetch_many(self, ids: list[str]) -> list[Email]:
        gate = asyncio.Semaphore(CONCURRENT_FETCHES)

        async def one(message_id: str) -> Email | None:
            async with gate:
                try:
                    return await _parsed(await self._fetch(message_id))
                except ToolError as exc:
                    if isinstance(exc, ServiceError):
                        raise
                    return None  # deleted between the listing and the fetch

        try:
            async with asyncio.TaskGroup() as group:
                tasks = [group.create_task(one(message_id)) for message_id in ids]
        except ExceptionGroup as failed:  # the first failure, as a plain ToolError/NeedsAccount
            raise failed.exceptions[0] from None
        return [message for task in tasks if (message := task.result()) is not None]

    async def inbox(self, max_results: int) -> list[Email]:
        return await self._fetch_many(await self._list_ids(max_results, label="INBOX"))

    async def search(self, query: str, max_results: int) -> list[Email]:
        return await self._fetch_many(await self._list_ids(max_results, query=query))

    async def get(self, message_id: str) -> Email:
        return await _parsed(await self._fetch(message_id.strip()), READ_BODY_CHARS)

    async def send(
        self, to: list[str], subject: str, body: str, cc: list[str], bcc: list[str]
    ) -> Email:
        raw = build_raw(sender=self._me, to=to, subject=subject, body=body, cc=cc, bcc=bcc)
        sent = await self._api.call("POST", "/messages/send", json={"raw": raw}, idempotent=False)
        return self._sent(sent, ", ".join(to), subject, body, cc, bcc)

    async def account(self) -> str:
        return self._me or ""

    async def plan_reply(self, message_id: str) -> ReplyPlan:
        original = await self._fetch(message_id.strip())
        headers = headers_of(original.get("payload") or {})
        sender = headers.get("reply-to") or headers.get("from", "")
        mine = self._me and sender_address(headers.get("from", "")).lower() == self._me.lower()
        to = addresses_in(headers.get("to", "") if mine else sender)
        if not to:
            raise ToolError("the email has no address to reply to; send a new email instead")
        return ReplyPlan(
            sender=self._me or "",
            to=to,
            cc=[],
            subject=reply_subject(headers.get("subject", "")),
            thread_id=str(original.get("threadId") or ""),
            in_reply_to=headers.get("message-id"),
            references=headers.get("references"),
            original=Original(
                id=message_id.strip(),
                sender=headers.get("from", ""),
                subject=headers.get("subject", ""),
                date=headers.get("date", ""),
            ),
        )

    async def reply(self, plan: ReplyPlan, body: str) -> Email:
        raw = build_raw(
            sender=self._me,
            to=plan["to"],
            subject=plan["subject"],
            body=body,
            cc=plan["cc"],
            in_reply_to=plan["in_reply_to"],
            references=plan["references"],
        )
        message: dict[str, Any] = {"raw": raw}
        if plan["thread_id"]:
            message["threadId"] = plan["thread_id"]
        sent = await self._api.call("POST", "/messages/send", json=message, idempotent=False)
        return self._sent(sent, ", ".join(plan["to"]), plan["subject"], body, plan["cc"], [])

    def _sent(
        self, sent: dict[str, Any], to: str, subject: str, body: str, cc: list[str], bcc: list[str]
    ) -> Email:
        return {
            "subject": subject,
            "from": self._me or "",
            "to": to,
            "markdown": body,
            "text": body,
            "unread": False,
            "id": str(sent.get("id", "")),
            "thread_id": str(sent.get("threadId", "")),
            "reply_to_id": "",
            "cc": cc,
            "bcc": bcc,
            "date": datetime.now(UTC).replace(microsecond=0).isoformat(),
        }


def live_backend(context: ChatContext, credentials: dict[str, Any]) -> GmailClient:
    settings = context.settings
    own = GmailSettings.read(settings)
    client = shared_client(context.http, SERVICE)
    secret = own.google_client_secret
    secrets = (
        secret.get_secret_value() if secret else None,
        credentials.get("access_token"),
        credentials.get("refresh_token"),
    )
    http = ServiceHttp.for_settings(client, SERVICE, settings, secrets)
    oauth = GoogleOAuth(
        ServiceHttp.for_settings(client, "Google sign-in", settings, secrets), settings
    )
    accounts = context.accounts
    assert accounts is not None  # live credentials came from it

    async def persist(new: dict[str, Any]) -> None:
        await save_credentials(accounts, CONNECTOR, new)

    async def forget() -> None:
        await accounts.disconnect(CONNECTOR)

    api = GmailApi(http, oauth, own.gmail_base_url, credentials, persist, forget)
    return GmailClient(api, credentials.get("email"))


async def _parsed(message: dict[str, Any], body_chars: int = LIST_BODY_CHARS) -> Email:
    """``to_email`` off the event loop: turning a sender's HTML into text is CPU work that
    a hostile mail can make long (bounded by ``html_text``'s work budget), and the loop
    serves every other chat meanwhile."""
    return await asyncio.to_thread(to_email, message, body_chars)
