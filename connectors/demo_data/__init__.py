"""Fixture data for demo-mode connectors: compact generators, deterministic for a given date.

Nothing here is real: people and companies use example.com/example.org addresses, phone
numbers use the 555-01xx fiction range.
"""

from __future__ import annotations

import hashlib

ME = "me@example.com"


def stable_id(*parts: object, length: int = 16, alphabet: str = "0123456789abcdef") -> str:
    """A deterministic id shaped like the provider's (hex for Gmail, base62 for Yelp/Plaid)."""
    digest = hashlib.sha256("|".join(str(part) for part in parts).encode()).digest()
    number = int.from_bytes(digest, "big")
    chars = []
    for _ in range(length):
        number, index = divmod(number, len(alphabet))
        chars.append(alphabet[index])
    return "".join(chars)


BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
