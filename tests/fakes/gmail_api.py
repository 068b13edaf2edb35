"""A fake Google: OAuth 2.0 (authorization with PKCE, token, revoke) and the Gmail API v1.

Speaks the real wire formats:

- ``GET /o/oauth2/v2/auth`` (accounts.google.com): checks the client, ``response_type=code``,
  the S256 challenge and the scopes, then redirects to ``redirect_uri`` with ``code`` and
  ``state`` (or ``error=access_denied`` when ``deny`` is set), as Google does after consent.
- ``POST /token`` (oauth2.googleapis.com): ``authorization_code`` (code + ``code_verifier``
  checked against the challenge, client secret, same ``redirect_uri``, single use) and
  ``refresh_token`` grants; errors as ``{"error": "invalid_grant", ...}``.
- ``POST /revoke``.
- ``/gmail/v1/users/me/profile``, ``messages`` (list with ``q``, ``labelIds``, ``maxResults``,
  ``pageToken``; pages capped at ``page_cap`` like any server-side limit), ``messages/{id}``
  (``format=full``: the MIME tree as ``payload`` parts with base64url ``body.data``) and
  ``messages/send`` (base64url RFC 2822 ``raw``, optional ``threadId``).
  Errors as ``{"error": {"code", "message", "errors": [...], "status"}}``.

The mailbox is built from real RFC 2822 messages (plain, HTML-only, alternative, an
attachment, ISO-8859-1 quoted-printable, an RFC 2047 subject, a thread).
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import time
from dataclasses import dataclass, field
from email import message_from_bytes
from email.message import EmailMessage, Message
from email.policy import SMTP
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from tests.fakes.fake_service import Endpoint, FakeService

SCOPES = (
    "https://www.googleapis.com/auth/gmail.readonly",
    "https://www.googleapis.com/auth/gmail.send",
)
UNAUTHENTICATED = {
    "error": {
        "code": 401,
        "message": "Request had invalid authentication credentials. Expected OAuth 2 access "
        "token, login cookie or other valid authentication credential.",
        "errors": [
            {
                "message": "Invalid Credentials",
                "domain": "global",
                "reason": "authError",
                "location": "Authorization",
                "locationType": "header",
            }
        ],
        "status": "UNAUTHENTICATED",
    }
}


@dataclass
class Stored:
    id: str
    thread_id: str
    raw: bytes
    labels: list[str]
    internal_ms: int

    @property
    def parsed(self) -> Message:
        return message_from_bytes(self.raw)


@dataclass
class Grant:
    challenge: str
    redirect_uri: str
    scope: str


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _payload(part: Message, part_id: str = "") -> dict[str, Any]:
    headers = [{"name": name, "value": str(value)} for name, value in part.items()]
    if part.is_multipart():
        children = part.get_payload()
        assert isinstance(children, list)
        return {
            "partId": part_id,
            "mimeType": part.get_content_type(),
            "filename": "",
            "headers": headers,
            "body": {"size": 0},
            "parts": [
                _payload(child, f"{part_id}.{i}" if part_id else str(i))
                for i, child in enumerate(children)
            ],
        }
    data = part.get_payload(decode=True)
    content = data if isinstance(data, bytes) else b""
    filename = part.get_filename() or ""
    body: dict[str, Any] = {"size": len(content)}
    if filename:
        body["attachmentId"] = "ANGjdJ" + hashlib.sha1(content).hexdigest()
    else:
        body["data"] = _b64(content)
    return {
        "partId": part_id,
        "mimeType": part.get_content_type(),
        "filename": filename,
        "headers": headers,
        "body": body,
    }


def _text_of(message: Message) -> str:
    texts = []
    for part in message.walk():
        if part.get_content_maintype() == "text":
            data = part.get_payload(decode=True)
            if isinstance(data, bytes):
                texts.append(data.decode(part.get_content_charset() or "utf-8", "replace"))
    return " ".join(texts)


@dataclass
class FakeGoogle(FakeService):
    email: str = "alex@example.com"
    page_cap: int = 4
    client_id: str = "test-client.apps.googleusercontent.com"
    client_secret: str = "test-client-secret-0123456789"
    deny: bool = False
    granted_scopes: tuple[str, ...] = SCOPES
    messages: dict[str, Stored] = field(default_factory=dict)
    grants: dict[str, Grant] = field(default_factory=dict)
    access_tokens: set[str] = field(default_factory=set)
    refresh_tokens: set[str] = field(default_factory=set)
    revoked: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        FakeService.__init__(self)
        self._ids = itertools.count(1)
        self._seed()

    # ------------------------------------------------------------------ mailbox

    def _new_id(self) -> str:
        return f"18f{next(self._ids):013x}"

    def add(
        self,
        message: EmailMessage | bytes,
        labels: list[str],
        hours_ago: float = 1,
        thread_id: str | None = None,
    ) -> Stored:
        raw = message if isinstance(message, bytes) else message.as_bytes(policy=SMTP)
        message_id = self._new_id()
        stored = Stored(
            message_id,
            thread_id or message_id,
            raw,
            labels,
            int((time.time() - hours_ago * 3600) * 1000),
        )
        self.messages[message_id] = stored
        return stored

    def _seed(self) -> None:
        def mail(sender: str, subject: str, body: str, **headers: str) -> EmailMessage:
            message = EmailMessage()
            message["From"] = sender
            message["To"] = self.email
            message["Subject"] = subject
            message["Message-ID"] = (
                f"<{hashlib.sha1(subject.encode()).hexdigest()[:16]}@mail.example.com>"
            )
            for name, value in headers.items():
                message[name.replace("_", "-")] = value
            message.set_content(body)
            return message

        first = self.add(
            mail(
                "Alice Chen <alice@example.com>",
                "Project Atlas: launch checklist",
                "Hi,\n\nThe launch checklist is ready for review.",
            ),
            ["INBOX"],
            hours_ago=30,
        )
        reply = mail(
            "Raj Singh <raj@example.com>",
            "Re: Project Atlas: launch checklist",
            "Looks good to me. One question about the rollback plan.",
            In_Reply_To=first.parsed["Message-ID"],
            References=first.parsed["Message-ID"],
            Cc="alice@example.com",
        )
        self.add(reply, ["INBOX", "UNREAD"], hours_ago=20, thread_id=first.thread_id)

        html_only = EmailMessage()
        html_only["From"] = "Orders <orders@shop.example.com>"
        html_only["To"] = self.email
        html_only["Subject"] = "Your order has shipped"
        html_only["Message-ID"] = "<order-58213@shop.example.com>"
        html_only.set_content(
            "<html><body><h1>Shipped!</h1><p>Order <b>#58213</b> is on its "
            'way. <a href="https://shop.example.com/track/58213">Track '
            "it</a>.</p></body></html>",
            subtype="html",
        )
        self.add(html_only, ["INBOX", "UNREAD", "CATEGORY_UPDATES"], hours_ago=10)

        alternative = EmailMessage()
        alternative["From"] = "Dana Kim <dana@example.com>"
        alternative["To"] = self.email
        alternative["Subject"] = "Q3 budget review"
        alternative["Message-ID"] = "<budget-q3@example.com>"
        alternative.set_content("Please send your numbers by Monday noon.")
        alternative.add_alternative(
            "<p>Please send your numbers by <b>Monday noon</b>.</p>", subtype="html"
        )
        alternative.add_attachment(
            b"%PDF-1.4 fake", maintype="application", subtype="pdf", filename="budget.pdf"
        )
        self.add(alternative, ["INBOX"], hours_ago=8)

        latin = (
            b"From: =?utf-8?q?Zo=C3=AB_Martin?= <zoe@example.org>\r\n"
            b"To: " + self.email.encode() + b"\r\n"
            b"Subject: =?utf-8?q?Caf=C3=A9_on_Friday=3F?=\r\n"
            b"Message-ID: <cafe-friday@example.org>\r\n"
            b"MIME-Version: 1.0\r\n"
            b"Content-Type: text/plain; charset=ISO-8859-1\r\n"
            b"Content-Transfer-Encoding: quoted-printable\r\n\r\n"
            b"On se retrouve au caf=E9 vendredi ? =E0 bient=F4t\r\n"
        )
        self.add(latin, ["INBOX", "UNREAD"], hours_ago=5)

        for n in range(6):
            self.add(
                mail(
                    f"Newsletter <news{n}@example.com>",
                    f"Weekly tips #{n + 1}",
                    f"Tip number {n + 1}: never block the event loop.",
                ),
                ["INBOX", "CATEGORY_PROMOTIONS"],
                hours_ago=40 + n,
            )

        sent = mail(self.email, "Dinner Saturday?", "Sushi at 7:30?")
        sent.replace_header("To", "bob@example.com")
        self.add(sent, ["SENT"], hours_ago=3)

    def _matches(self, stored: Stored, query: str | None, labels: list[str]) -> bool:
        if any(label not in stored.labels for label in labels):
            return False
        parsed = stored.parsed
        for term in (query or "").lower().split():
            if term.startswith("from:"):
                if term[5:] not in str(parsed.get("From", "")).lower():
                    return False
            elif term == "is:unread":
                if "UNREAD" not in stored.labels:
                    return False
            elif term == "in:sent":
                if "SENT" not in stored.labels:
                    return False
            elif term not in (str(parsed.get("Subject", "")) + " " + _text_of(parsed)).lower():
                return False
        return True

    def message_json(self, stored: Stored) -> dict[str, Any]:
        parsed = stored.parsed
        text = " ".join(_text_of(parsed).split())
        return {
            "id": stored.id,
            "threadId": stored.thread_id,
            "labelIds": stored.labels,
            "snippet": text[:100],
            "sizeEstimate": len(stored.raw),
            "historyId": str(1000 + int(stored.id[3:], 16)),
            "internalDate": str(stored.internal_ms),
            "payload": _payload(parsed),
        }

    # ------------------------------------------------------------------ oauth

    def expire_access_tokens(self) -> None:
        self.access_tokens.clear()

    def revoke_refresh_tokens(self) -> None:
        self.refresh_tokens.clear()

    def issue_tokens(self, with_refresh: bool, scope: str) -> dict[str, Any]:
        access = f"ya29.fake-access-{next(self._ids)}"
        self.access_tokens.add(access)
        tokens: dict[str, Any] = {
            "access_token": access,
            "expires_in": 3599,
            "scope": scope,
            "token_type": "Bearer",
        }
        if with_refresh:
            refresh = f"1//fake-refresh-{next(self._ids)}"
            self.refresh_tokens.add(refresh)
            tokens["refresh_token"] = refresh
        return tokens

    async def authorize(self, request: Request) -> Response:
        query = request.query_params
        problems = []
        if query.get("client_id") != self.client_id:
            problems.append("client_id")
        if query.get("response_type") != "code":
            problems.append("response_type")
        if query.get("code_challenge_method") != "S256" or not query.get("code_challenge"):
            problems.append("code_challenge")
        if not set(SCOPES) <= set((query.get("scope") or "").split()):
            problems.append("scope")
        if problems:
            return Response(f"Error 400: invalid_request ({', '.join(problems)})", 400)
        redirect = query["redirect_uri"]
        if self.deny:
            return RedirectResponse(
                f"{redirect}?{urlencode({'error': 'access_denied', 'state': query.get('state', '')})}",
                302,
            )
        code = f"4/0fake-code-{next(self._ids)}"
        self.grants[code] = Grant(query["code_challenge"], redirect, " ".join(self.granted_scopes))
        return RedirectResponse(
            f"{redirect}?{urlencode({'state': query.get('state', ''), 'code': code, 'scope': ' '.join(self.granted_scopes)})}",
            302,
        )

    async def token(self, request: Request) -> Response:
        form = await request.form()
        if (
            form.get("client_id") != self.client_id
            or form.get("client_secret") != self.client_secret
        ):
            return JSONResponse(
                {"error": "invalid_client", "error_description": "Unauthorized"}, 401
            )
        grant_type = form.get("grant_type")
        if grant_type == "authorization_code":
            grant = self.grants.pop(str(form.get("code")), None)
            verifier = str(form.get("code_verifier", ""))
            challenge = (
                base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
                .decode()
                .rstrip("=")
            )
            if (
                grant is None
                or grant.challenge != challenge
                or grant.redirect_uri != form.get("redirect_uri")
            ):
                return JSONResponse(
                    {"error": "invalid_grant", "error_description": "Bad Request"}, 400
                )
            return JSONResponse(self.issue_tokens(True, grant.scope))
        if grant_type == "refresh_token":
            if form.get("refresh_token") not in self.refresh_tokens:
                return JSONResponse(
                    {
                        "error": "invalid_grant",
                        "error_description": "Token has been expired or revoked.",
                    },
                    400,
                )
            return JSONResponse(self.issue_tokens(False, " ".join(self.granted_scopes)))
        return JSONResponse({"error": "unsupported_grant_type"}, 400)

    async def revoke(self, request: Request) -> Response:
        form = await request.form()
        token = str(form.get("token", ""))
        if token not in self.refresh_tokens and token not in self.access_tokens:
            return JSONResponse({"error": "invalid_token", "error_description": "Bad Request"}, 400)
        self.revoked.append(token)
        self.refresh_tokens.discard(token)
        self.access_tokens.discard(token)
        return JSONResponse({})

    # ------------------------------------------------------------------ gmail

    def _authorised(self, request: Request) -> bool:
        header = request.headers.get("authorization", "")
        return header.startswith("Bearer ") and header[7:] in self.access_tokens

    def _gmail(self, handler: Endpoint) -> Endpoint:
        async def guarded(request: Request) -> Response:
            if not self._authorised(request):
                return JSONResponse(
                    UNAUTHENTICATED,
                    401,
                    headers={"WWW-Authenticate": 'Bearer realm="https://accounts.google.com/"'},
                )
            return await handler(request)

        return guarded

    async def profile(self, request: Request) -> Response:
        return JSONResponse(
            {
                "emailAddress": self.email,
                "messagesTotal": len(self.messages),
                "threadsTotal": len({m.thread_id for m in self.messages.values()}),
                "historyId": "12345",
            }
        )

    async def list_messages(self, request: Request) -> Response:
        query = request.query_params
        wanted = max(1, min(int(query.get("maxResults", "100")), 500))
        page = min(wanted, self.page_cap)
        offset = int(query.get("pageToken") or 0)
        found = sorted(
            (
                m
                for m in self.messages.values()
                if self._matches(m, query.get("q"), query.getlist("labelIds"))
            ),
            key=lambda m: m.internal_ms,
            reverse=True,
        )
        chunk = found[offset : offset + page]
        body: dict[str, Any] = {"resultSizeEstimate": len(found)}
        if chunk:
            body["messages"] = [{"id": m.id, "threadId": m.thread_id} for m in chunk]
        if offset + page < len(found):
            body["nextPageToken"] = str(offset + page)
        return JSONResponse(body)

    async def get_message(self, request: Request) -> Response:
        stored = self.messages.get(request.path_params["id"])
        if stored is None:
            return JSONResponse(
                {
                    "error": {
                        "code": 404,
                        "message": "Requested entity was not found.",
                        "errors": [
                            {
                                "message": "Requested entity was not found.",
                                "domain": "global",
                                "reason": "notFound",
                            }
                        ],
                        "status": "NOT_FOUND",
                    }
                },
                404,
            )
        if request.query_params.get("format", "full") != "full":
            return JSONResponse({"error": {"code": 400, "message": "only format=full here"}}, 400)
        return JSONResponse(self.message_json(stored))

    async def send(self, request: Request) -> Response:
        body = await request.json()
        raw = str(body.get("raw", ""))
        try:
            data = base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4))
        except ValueError:
            data = b""
        parsed = message_from_bytes(data)
        if not data or not parsed.get("To"):
            return JSONResponse(
                {
                    "error": {
                        "code": 400,
                        "message": "Invalid To header",
                        "errors": [
                            {
                                "message": "Invalid To header",
                                "domain": "global",
                                "reason": "invalidArgument",
                            }
                        ],
                        "status": "INVALID_ARGUMENT",
                    }
                },
                400,
            )
        thread = body.get("threadId")
        if thread is not None and thread not in {m.thread_id for m in self.messages.values()}:
            return JSONResponse(
                {
                    "error": {
                        "code": 404,
                        "message": "Requested entity was not found.",
                        "status": "NOT_FOUND",
                    }
                },
                404,
            )
        stored = self.add(data, ["SENT"], hours_ago=0, thread_id=thread)
        return JSONResponse({"id": stored.id, "threadId": stored.thread_id, "labelIds": ["SENT"]})

    def sent(self) -> list[Stored]:
        return sorted(
            (
                m
                for m in self.messages.values()
                if m.labels == ["SENT"] and m.internal_ms > (time.time() - 60) * 1000
            ),
            key=lambda m: m.internal_ms,
        )

    def routes(self) -> list[tuple[str, Endpoint, list[str]]]:
        base = "/gmail/v1/users/me"
        return [
            ("/o/oauth2/v2/auth", self.authorize, ["GET"]),
            ("/token", self.token, ["POST"]),
            ("/revoke", self.revoke, ["POST"]),
            (f"{base}/profile", self._gmail(self.profile), ["GET"]),
            (f"{base}/messages", self._gmail(self.list_messages), ["GET"]),
            (f"{base}/messages/send", self._gmail(self.send), ["POST"]),
            (f"{base}/messages/{{id}}", self._gmail(self.get_message), ["GET"]),
        ]
