"""What a file is, from its bytes (app.attachments.sniff), and how it is named and
described; the prompt frame with attachment ids as docs/protocol.md shows it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from app.attachments.describe import attachment_line, described_in, summary
from app.attachments.sniff import KNOWN_TYPES, Refused, clean_name, sniff
from app.settings import SNIFFABLE_TYPES, Settings
from tests.support.files import PDF, gif, jpeg, png, webp_lossless
from websocket.protocol import PromptFrame, parse_client_frame

DOC = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"


@pytest.mark.parametrize(
    ("data", "name", "expected"),
    [
        (png(640, 480), "photo.txt", ("image/png", 640, 480)),
        (jpeg(1024, 768), "a.gif", ("image/jpeg", 1024, 768)),
        (gif(3, 4), "x", ("image/gif", 3, 4)),
        (webp_lossless(100, 50), "x.png", ("image/webp", 100, 50)),
        (PDF, "notes.txt", ("application/pdf", None, None)),
        (b"plain words\n", "a.png", ("text/plain", None, None)),
        (b"a,b\n1,2\n", "data.csv", ("text/csv", None, None)),
        ("# Título\n".encode(), "README.md", ("text/markdown", None, None)),
        (b'\xef\xbb\xbf{"a": [1, 2]}', "a.txt", ("application/json", None, None)),
        (b"42", "n.json", ("text/plain", None, None)),  # a bare number is text, not JSON
    ],
)
def test_the_bytes_decide(
    data: bytes, name: str, expected: tuple[str, int | None, int | None]
) -> None:
    found = sniff(data, name)
    assert (found.content_type, found.width, found.height) == expected


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"", "empty"),
        (b"<!doctype html><p>hi", "markup"),
        (b"  <svg xmlns='http://www.w3.org/2000/svg'/>", "markup"),
        (b"<?xml version='1.0'?><a/>", "markup"),
        (b"\xff\xfe\x00\x00binary", "not a supported type"),
        (b"text with a \x00 NUL", "control characters"),
        (png(1, 1)[:20], "header is broken"),
        (b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\x0dIHDR" + b"\x00" * 8, "impossible size"),
        (b"\xff\xd8\xff\xda\x00\x08", "header is broken"),
    ],
)
def test_refused(data: bytes, words: str) -> None:
    with pytest.raises(Refused) as refused:
        sniff(data, "file.png")
    assert words in refused.value.message


def test_settings_and_sniffer_know_the_same_types() -> None:
    assert set(SNIFFABLE_TYPES) == set(KNOWN_TYPES)
    with pytest.raises(ValueError, match="image/svg\\+xml: not a type the server can recognise"):
        Settings(attachment_types="image/png,image/svg+xml")
    assert Settings(attachment_types="image/png, TEXT/PLAIN").attachment_types == [
        "image/png",
        "text/plain",
    ]


@pytest.mark.parametrize(
    ("given", "shown"),
    [
        ("C:\\Users\\me\\photo.png", "photo.png"),
        ("../../etc/passwd", "passwd"),
        ("a\x00b\nc.txt", "ab c.txt"),
        ("   ", "attachment"),
        (None, "attachment"),
        ("x" * 300 + ".pdf", "x" * 196 + ".pdf"),
    ],
)
def test_names_are_cleaned(given: str | None, shown: str) -> None:
    assert clean_name(given) == shown


def test_the_model_s_line_reads_back() -> None:
    line = attachment_line(summary("photo.png", "image/png", 1234, 640, 480))
    assert line == "[Attachment: photo.png (PNG image, 1,234 bytes, 640×480)]"
    one = attachment_line(summary("a.txt", "text/plain", 1, None, None))
    assert described_in([f"{line}\nsomething", one]) == [
        "photo.png (PNG image, 1,234 bytes, 640×480)",
        "a.txt (text file, 1 byte)",
    ]


def test_the_documented_prompt_frame_parses() -> None:
    section = DOC.read_text().split("\n## Attachments\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```jsonc\n(.*?)```", section, re.S)
    assert block is not None
    frame = parse_client_frame(json.dumps(json.loads(block.group(1))), max_prompt_chars=100)
    assert isinstance(frame, PromptFrame) and frame.attachments is not None
    assert len(frame.attachments) == 2
