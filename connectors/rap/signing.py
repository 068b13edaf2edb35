"""Who may post a tool result: per-invocation callback tokens and optional HMAC signatures.

RAP itself does not authenticate callbacks, so Switchboard adds two things (docs/rap.md):

- Every invocation gets its own ``callback_url`` carrying a random token
  (``…/rap/callback?token=…``). Only the server that received the invocation knows it; the
  runtime keeps only its SHA-256, and the token is bound to the invocation's ``group_id``
  and ``id``, so it cannot be used to answer any other call.
- A server configured with a shared ``secret`` also signs each direction:
  ``X-Switchboard-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>." + body)>``.
  Signatures older or newer than ``TOLERANCE`` seconds are refused (replays).

Pure: no I/O.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time

SIGNATURE_HEADER = "X-Switchboard-Signature"
TOLERANCE = 300  # seconds a signature stays valid either way (clock skew, retries)


def new_token() -> str:
    """A fresh callback token: 256 random bits, URL-safe."""
    return secrets.token_urlsafe(32)


def token_digest(token: str) -> str:
    """What the runtime keeps of a token (a leaked registry leaks no usable token)."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def sign(secret: str, body: bytes, timestamp: int | None = None) -> str:
    """The ``X-Switchboard-Signature`` value for ``body``."""
    stamp = int(time.time()) if timestamp is None else timestamp
    mac = hmac.new(secret.encode(), f"{stamp}.".encode() + body, hashlib.sha256)
    return f"t={stamp},v1={mac.hexdigest()}"


def verify(secret: str, body: bytes, header: str | None, now: float | None = None) -> bool:
    """Whether ``header`` is a valid, fresh signature of ``body`` with ``secret``."""
    if not header:
        return False
    fields: dict[str, list[str]] = {}
    for part in header.split(","):
        key, sep, value = part.strip().partition("=")
        if sep:
            fields.setdefault(key, []).append(value)
    stamps = fields.get("t", [])
    if len(stamps) != 1 or not stamps[0].isdigit() or len(stamps[0]) > 12:
        return False
    stamp = int(stamps[0])
    if abs((time.time() if now is None else now) - stamp) > TOLERANCE:
        return False
    expected = sign(secret, body, stamp).rpartition("v1=")[2]
    # Any of several v1 values may match (a server rotating its secret sends both).
    return any(hmac.compare_digest(expected, given) for given in fields.get("v1", []))
