"""How an attachment is described in words: to the person, and to the model beside the
attachment itself (pure). The offline demo model reads the same line back
(``described_in``), so its acknowledgement names exactly what the real model is told."""

from __future__ import annotations

import re
from collections.abc import Iterable

from app.attachments.sniff import KNOWN_TYPES

ATTACHMENT_LINE_START = "[Attachment: "
_LINE = re.compile(r"^\[Attachment: (?P<what>.+)\]$", re.M)


def summary(name: str, content_type: str, size: int, width: int | None, height: int | None) -> str:
    """``photo.png (PNG image, 1,234 bytes, 640×480)``."""
    label = KNOWN_TYPES.get(content_type, content_type)
    unit = "byte" if size == 1 else "bytes"
    parts = [label, f"{size:,} {unit}"]
    if width is not None and height is not None:
        parts.append(f"{width}×{height}")
    return f"{name} ({', '.join(parts)})"


def attachment_line(text: str) -> str:
    """The line the model reads before an attachment's content."""
    return f"[Attachment: {text}]"


def described_in(texts: Iterable[str]) -> list[str]:
    """The summaries of the attachment lines found in ``texts``, in order."""
    return [match["what"] for text in texts for match in _LINE.finditer(text)]
