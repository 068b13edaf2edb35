"""Ids for demo-mode connectors' fixture data: deterministic, shaped like a provider's.

Each connector's demo data lives in its own folder (compact generators, deterministic for
a given date). Nothing there is real: people and companies use example.com/example.org
addresses, phone numbers the 555-01xx fiction range.
"""

from __future__ import annotations

import hashlib


def stable_id(*parts: object, length: int = 16, alphabet: str = "0123456789abcdef") -> str:
    """A deterministic id shaped like a provider's: hex by default, or ``BASE62``."""
    digest = hashlib.sha256("|".join(str(part) for part in parts).encode()).digest()
    number = int.from_bytes(digest, "big")
    chars = []
    for _ in range(length):
        number, index = divmod(number, len(alphabet))
        chars.append(alphabet[index])
    return "".join(chars)


BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
