"""The page's pure modules, run in node (no browser needed):

- the streaming Markdown rule (app/static/js/markdown-stream.js) over EVERY prefix of a
  set of sample answers, each rendered by the vendored marked as the page renders it: no
  prefix may show a raw ``**``, ``__``, backtick, lone ``*``/``_`` or ``[text](`` outside
  code, nor a half-typed fence inside a code block, and the whole answer reads as marked
  renders it unchanged (tests/node/markdown_stream.mjs);
- the short message times (app/static/js/message-time.js) for fixed moments.

The page drawing with them is tests/browser/test_answer_tools.py."""

from __future__ import annotations

import re

import pytest

from tests.support.node import NODE_DIR, node_ready, run_node


@pytest.fixture(scope="module")
def node() -> str:
    return node_ready()


async def test_no_prefix_of_a_sample_answer_shows_a_half_open_marker(node: str) -> None:
    report = await run_node(node, NODE_DIR / "markdown_stream.mjs", {})
    assert isinstance(report, dict), report
    assert report["samples"] >= 17 and report["prefixes"] > 2400, report
    assert report["count"] == 0, report["failures"]


async def test_message_times_are_short_today_and_dated_before(node: str) -> None:
    report = await run_node(node, NODE_DIR / "message_time.mjs", {"TZ": "Europe/Berlin"})
    assert isinstance(report, dict), report
    # ICU puts a narrow no-break space before "PM" in some versions: a space is a space.
    cases = [[re.sub(r"\s", " ", text) for text in case] for case in report["cases"]]
    assert len(cases) == 9
    for got, want in cases:
        assert got == want
