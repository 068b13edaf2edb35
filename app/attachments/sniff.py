"""What a file is, from its bytes alone (pure: no I/O).

The name a browser sends and the ``Content-Type`` it declares are both chosen by the
client, so neither decides anything: a PNG renamed ``notes.txt`` is a PNG, and an HTML
page declared ``image/png`` is HTML (and refused). Images are recognised by their magic
bytes, and their dimensions read from their headers: a few dozen lines for PNG, GIF, WebP
and JPEG, instead of an imaging library (Pillow would decode far more than we need, and
every decoder is attack surface for an upload endpoint). Text must be UTF-8 without
control characters; among text files only the name picks the label (plain, CSV,
Markdown), which is harmless because the content is text either way, while JSON is JSON
only if it parses.
"""

from __future__ import annotations

import json
import re
import struct
from dataclasses import dataclass

# Every type this module can recognise, with the words a person reads for it.
KNOWN_TYPES: dict[str, str] = {
    "image/png": "PNG image",
    "image/jpeg": "JPEG image",
    "image/gif": "GIF image",
    "image/webp": "WebP image",
    "application/pdf": "PDF document",
    "text/plain": "text file",
    "text/csv": "CSV file",
    "text/markdown": "Markdown file",
    "application/json": "JSON file",
}
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
TEXT_TYPES = frozenset({"text/plain", "text/csv", "text/markdown", "application/json"})
MAX_DIMENSION = 100_000  # a header claiming more is corrupt or hostile

_TEXT_BY_SUFFIX = {
    ".csv": "text/csv",
    ".tsv": "text/csv",
    ".md": "text/markdown",
    ".markdown": "text/markdown",
}
# Markup a browser would run, whatever the file claims to be.
_MARKUP = re.compile(rb"^\s*<(!doctype\s+html|html|head|body|script|svg|\?xml|iframe)\b", re.I)
# Control characters that no text file holds (tab, newlines and form feed are fine).
_CONTROL = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f]")


class Refused(ValueError):
    """The bytes are not an acceptable file; ``message`` says why, safe to show."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Sniffed:
    content_type: str
    width: int | None = None
    height: int | None = None

    @property
    def label(self) -> str:
        return KNOWN_TYPES[self.content_type]


def sniff(data: bytes, name: str) -> Sniffed:
    """The file's type (and an image's size) from ``data``; ``name`` only labels text.

    Raises ``Refused`` for an empty file, an image whose header is broken, markup, and
    anything that is neither a known binary format nor UTF-8 text.
    """
    if not data:
        raise Refused("the file is empty")
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return _sized("image/png", _png_size(data))
    if data.startswith((b"GIF87a", b"GIF89a")):
        return _sized("image/gif", _gif_size(data))
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return _sized("image/webp", _webp_size(data))
    if data.startswith(b"\xff\xd8\xff"):
        return _sized("image/jpeg", _jpeg_size(data))
    if data.startswith(b"%PDF-"):
        return Sniffed("application/pdf")
    return _text(data, name)


def _sized(content_type: str, size: tuple[int, int] | None) -> Sniffed:
    label = KNOWN_TYPES[content_type]
    if size is None:
        raise Refused(f"the file starts like a {label} but its header is broken or cut short")
    width, height = size
    if not (0 < width <= MAX_DIMENSION and 0 < height <= MAX_DIMENSION):
        raise Refused(f"the {label} claims an impossible size ({width}×{height})")
    return Sniffed(content_type, width, height)


def _png_size(data: bytes) -> tuple[int, int] | None:
    if len(data) < 24 or data[12:16] != b"IHDR":
        return None
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def _gif_size(data: bytes) -> tuple[int, int] | None:
    if len(data) < 10:
        return None
    width, height = struct.unpack("<HH", data[6:10])
    return width, height


def _webp_size(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8 " and len(data) >= 30 and data[23:26] == b"\x9d\x01\x2a":
        width, height = struct.unpack("<HH", data[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L" and len(data) >= 25 and data[20] == 0x2F:
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X" and len(data) >= 30:
        width = int.from_bytes(data[24:27], "little") + 1
        height = int.from_bytes(data[27:30], "little") + 1
        return width, height
    return None


# Start-of-frame markers carry the size; C4 (Huffman tables), C8 and CC (arithmetic
# coding) share the range but are not frames.
_JPEG_FRAMES = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    at = 2
    while at + 4 <= len(data):
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:  # no length
            at += 2
            continue
        (length,) = struct.unpack(">H", data[at + 2 : at + 4])
        if length < 2:
            return None
        if marker in _JPEG_FRAMES:
            if at + 9 > len(data):
                return None
            height, width = struct.unpack(">HH", data[at + 5 : at + 9])
            return width, height
        if marker == 0xDA:  # start of scan before any frame header
            return None
        at += 2 + length
    return None


def _text(data: bytes, name: str) -> Sniffed:
    if _MARKUP.match(data.removeprefix(b"\xef\xbb\xbf")):
        raise Refused("the file is HTML, SVG or XML markup, which is not accepted")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise Refused(
            "the file is not a supported type: not a PNG, JPEG, GIF or WebP image, a PDF, "
            "or UTF-8 text"
        ) from None
    if _CONTROL.search(text):
        raise Refused("the file holds control characters, so it is not a text file")
    body = text.removeprefix("\ufeff")
    # An object or an array: a bare number or word parses as JSON too, but is just text.
    if body.lstrip()[:1] in ("{", "["):
        try:
            json.loads(body)
        except ValueError:
            pass
        else:
            return Sniffed("application/json")
    suffix = name[name.rfind(".") :].lower() if "." in name else ""
    return Sniffed(_TEXT_BY_SUFFIX.get(suffix, "text/plain"))


def clean_name(name: str | None, fallback: str = "attachment") -> str:
    """A file name fit to show and to send back in ``Content-Disposition``: no folders,
    no control characters, one line, at most 200 characters."""
    base = re.split(r"[\\/]", name or "")[-1]
    base = " ".join(_CONTROL.sub("", base).replace("\u2028", " ").split())
    base = base.strip(". ") or fallback
    if len(base) > 200:
        stem, dot, suffix = base.rpartition(".")
        base = (
            (stem[: 200 - len(suffix) - 1] + dot + suffix)
            if dot and len(suffix) < 20
            else base[:200]
        )
    return base
