"""The streaming Markdown rule as a pure function (app/static/js/markdown-stream.js), run
in node over EVERY prefix of a set of sample answers, each rendered by the vendored marked
as the page renders it: no prefix may show a raw ``**``, ``__``, backtick, lone ``*``/``_``
or ``[text](`` outside code, nor a half-typed fence inside a code block; the whole answer
reads as marked renders it unchanged (tests/node/markdown_stream.mjs). The page drawing
a streaming answer with it is tests/browser/test_answer_tools.py."""

from __future__ import annotations

import pytest

from tests.support.node import NODE_DIR, node_ready, run_node


@pytest.fixture(scope="module")
def node() -> str:
    return node_ready()


async def test_no_prefix_of_a_sample_answer_shows_a_half_open_marker(node: str) -> None:
    report = await run_node(node, NODE_DIR / "markdown_stream.mjs", {})
    assert isinstance(report, dict), report
    assert report["samples"] >= 12 and report["prefixes"] > 1500, report
    assert report["count"] == 0, report["failures"]
