"""The pure parts of a chat's memory: token estimates, indivisible groups, where to cut
(websocket.history_budget), the context sizes (app.llm.context_sizes) and the offline
summary (app.llm.summarise)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.llm.context_sizes import (
    OFFLINE_CONTEXT_TOKENS,
    UNKNOWN_CONTEXT_TOKENS,
    chat_budget,
    context_tokens,
)
from app.llm.spec import parse_model_spec
from app.llm.summarise import offline_summary, render
from websocket.history_budget import (
    IMAGE_TOKENS,
    Budget,
    drop_to_fit,
    estimate_tokens,
    fold_cut,
    group_spans,
    item_tokens,
)
from websocket.memory import clip


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def said(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "output_text", "text": text}]}


def call(call_id: str, name: str = "search") -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": "{}"}


def output(call_id: str, text: str = "found") -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": text}


def reasoning(n: int) -> dict[str, Any]:
    return {"type": "reasoning", "id": f"rs_{n}", "summary": []}


def spans_of(items: list[dict[str, Any]]) -> list[tuple[int, int]]:
    return [(span.start, span.stop) for span in group_spans(items)]


# -- estimates ------------------------------------------------------------------------


def test_estimate_is_pessimistic_for_english_and_counts_json() -> None:
    text = "The quick brown fox jumps over the lazy dog. " * 20
    # About 4 characters a token in OpenAI's tokenizers: the estimate says more.
    assert estimate_tokens(text) >= len(text) / 4
    assert estimate_tokens(None) == 0
    assert estimate_tokens("") == 0
    assert estimate_tokens({"a": "xyz"}) == estimate_tokens('{"a":"xyz"}')
    # Non-ASCII is escaped: a CJK character counts as two tokens.
    assert estimate_tokens({"t": "東京"}) > estimate_tokens({"t": "ab"})
    assert item_tokens(user("hi")) > estimate_tokens(user("hi"))


# -- groups ---------------------------------------------------------------------------

GROUP_TABLE: list[tuple[str, list[dict[str, Any]], list[tuple[int, int]]]] = [
    ("empty", [], []),
    ("messages stand alone", [user("a"), said("b"), user("c")], [(0, 1), (1, 2), (2, 3)]),
    (
        "a call with its output",
        [user("a"), call("c1"), output("c1"), said("b")],
        [(0, 1), (1, 3), (3, 4)],
    ),
    (
        "parallel calls and their outputs are one group",
        [user("a"), call("c1"), call("c2"), output("c1"), output("c2"), said("b")],
        [(0, 1), (1, 5), (5, 6)],
    ),
    (
        "outputs in the other order",
        [call("c1"), call("c2"), output("c2"), output("c1")],
        [(0, 4)],
    ),
    (
        "a reasoning item stays with what it led to",
        [user("a"), reasoning(1), call("c1"), output("c1"), reasoning(2), said("b")],
        [(0, 1), (1, 4), (4, 6)],
    ),
    (
        "a handoff is a call and its output",
        [user("a"), call("h1", "transfer_to_yelp"), output("h1", "{}"), said("b")],
        [(0, 1), (1, 3), (3, 4)],
    ),
    (
        "an MCP approval request and its response",
        [
            user("a"),
            {"type": "mcp_approval_request", "id": "apr_1", "name": "x", "arguments": "{}"},
            said("waiting"),
            {"type": "mcp_approval_response", "approval_request_id": "apr_1", "approve": True},
        ],
        [(0, 1), (1, 4)],
    ),
    ("an unanswered call stands alone", [call("c1"), said("b")], [(0, 1), (1, 2)]),
    (
        "other tools' call types",
        [{"type": "shell_call", "call_id": "s1"}, {"type": "shell_call_output", "call_id": "s1"}],
        [(0, 2)],
    ),
]


@pytest.mark.parametrize(
    ("items", "expected"), [(i, e) for _, i, e in GROUP_TABLE], ids=[n for n, _, _ in GROUP_TABLE]
)
def test_groups(items: list[dict[str, Any]], expected: list[tuple[int, int]]) -> None:
    assert spans_of(items) == expected


# -- where to cut ---------------------------------------------------------------------


def test_an_inline_image_counts_as_an_image_not_as_its_base64() -> None:
    """A photo sent with a prompt costs its tiles, whatever its size in bytes: counted as
    text, a 2 MB image would push every older turn out of each model call."""
    photo = "data:image/png;base64," + "A" * 2_800_000
    with_image = {
        "role": "user",
        "content": [
            {"type": "input_text", "text": "what is this?"},
            {"type": "input_image", "image_url": photo, "detail": "auto"},
        ],
    }
    text_only = {"role": "user", "content": [{"type": "input_text", "text": "what is this?"}]}
    assert item_tokens(with_image) - item_tokens(text_only) <= IMAGE_TOKENS + 30
    assert item_tokens(with_image) >= IMAGE_TOKENS


def test_fold_cut_prefers_a_turn_start_and_never_splits_a_group() -> None:
    items = [user("a" * 30), call("c1"), output("c1", "x" * 60), said("b"), user("c"), said("d")]
    tokens = [item_tokens(item) for item in items]
    spans = group_spans(items)
    # Enough room for the last turn only: cut at its user message.
    last_turn = tokens[4] + tokens[5]
    assert fold_cut(items, tokens, spans, last_turn) == 4
    # Room for more, but the turn start that fits is still at 4 (1 and 3 are no turn starts
    # and 0 would keep everything, which does not fit).
    assert fold_cut(items, tokens, spans, sum(tokens) - 1) == 4
    # Room for nothing: fold it all.
    assert fold_cut(items, tokens, spans, 0) == 6
    # Room for everything: fold nothing.
    assert fold_cut(items, tokens, spans, sum(tokens)) == 0


def test_fold_cut_falls_back_to_a_group_boundary() -> None:
    # One long turn: no user message to cut at but its first.
    items = [user("a"), call("c1"), output("c1", "x" * 300), said("b" * 30)]
    tokens = [item_tokens(item) for item in items]
    assert fold_cut(items, tokens, group_spans(items), tokens[3]) == 3


def test_drop_to_fit_keeps_summary_and_running_turn() -> None:
    summary = {"role": "system", "content": "summary"}
    items = [summary, user("a"), call("c1"), output("c1"), said("b"), user("now"), call("c2")]
    tokens = [10] * len(items)
    spans = group_spans(items)
    # Everything fits: nothing dropped.
    assert drop_to_fit(tokens, spans, 1, 5, 70) == list(range(7))
    # Drop the oldest groups: user("a"), then the call with its output, then said("b").
    assert drop_to_fit(tokens, spans, 1, 5, 60) == [0, 2, 3, 4, 5, 6]
    assert drop_to_fit(tokens, spans, 1, 5, 50) == [0, 4, 5, 6]
    # Never the summary nor the running turn, even when it does not fit.
    assert drop_to_fit(tokens, spans, 1, 5, 0) == [0, 5, 6]


# -- properties -----------------------------------------------------------------------


@st.composite
def histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Chats of turns: a user's message, then calls (alone, parallel, after reasoning)
    with their outputs, then an answer; texts of random length."""
    items: list[dict[str, Any]] = []
    text = st.text(alphabet="abc xyz", max_size=200)
    for turn in range(draw(st.integers(0, 8))):
        items.append(user(draw(text)))
        for step in range(draw(st.integers(0, 3))):
            ids = [f"c{turn}_{step}_{n}" for n in range(draw(st.integers(1, 3)))]
            if draw(st.booleans()):
                items.append(reasoning(len(items)))
            items.extend(call(i) for i in ids)
            items.extend(output(i, draw(text)) for i in draw(st.permutations(ids)))
        if draw(st.booleans()):
            items.append(reasoning(len(items)))
        items.append(said(draw(text)))
    return items


def assert_pairs_together(items: list[dict[str, Any]], kept: list[int]) -> None:
    """Every call kept has its output kept, and the other way round; a kept reasoning
    item has the item after it."""
    chosen = {index: items[index] for index in kept}
    calls = {i.get("call_id") for i in chosen.values() if i.get("type") == "function_call"}
    outputs = {i.get("call_id") for i in chosen.values() if i.get("type") == "function_call_output"}
    assert calls == outputs
    for index, item in chosen.items():
        if item.get("type") == "reasoning":
            assert index + 1 in chosen


@settings(max_examples=200, deadline=None)
@given(histories())
def test_groups_cover_the_items_in_order_and_hold_every_pair(items: list[dict[str, Any]]) -> None:
    spans = group_spans(items)
    assert [i for span in spans for i in span] == list(range(len(items)))
    for span in spans:
        assert_pairs_together(items, list(span))


@settings(max_examples=200, deadline=None)
@given(histories(), st.integers(0, 3000))
def test_a_fold_cut_never_splits_a_group_and_the_rest_fits(
    items: list[dict[str, Any]], limit: int
) -> None:
    tokens = [item_tokens(item) for item in items]
    spans = group_spans(items)
    cut = fold_cut(items, tokens, spans, limit)
    assert cut == len(items) or cut in {span.start for span in spans}
    assert sum(tokens[cut:]) <= limit or cut == len(items)
    # The kept part and the folded part each hold their pairs.
    assert_pairs_together(items, list(range(cut)))
    assert_pairs_together(items, list(range(cut, len(items))))


@settings(max_examples=200, deadline=None)
@given(histories(), st.integers(0, 3000))
def test_drop_to_fit_never_splits_a_group_and_fits_when_it_can(
    items: list[dict[str, Any]], limit: int
) -> None:
    tokens = [item_tokens(item) for item in items]
    spans = group_spans(items)
    last_user = max((i for i, item in enumerate(items) if item.get("role") == "user"), default=0)
    kept = drop_to_fit(tokens, spans, 0, last_user, limit)
    assert_pairs_together(items, kept)
    assert set(range(last_user, len(items))) <= set(kept)
    protected = sum(tokens[last_user:])
    if protected <= limit:
        assert sum(tokens[i] for i in kept) <= limit


# -- budgets and context sizes --------------------------------------------------------

CONTEXTS = [
    ("openai:gpt-4o", 128_000),
    ("openai:gpt-4o-mini-2024-07-18", 128_000),
    ("openai:gpt-4-0613", 8_192),
    ("openai:gpt-4.1-mini", 1_047_576),
    ("openai:gpt-5-mini", 272_000),
    ("openai:o3-mini", 200_000),
    ("chat:openai/gpt-4o@http://127.0.0.1:4000/v1", 128_000),
    ("chat:qwen2.5:7b@http://127.0.0.1:11434/v1", UNKNOWN_CONTEXT_TOKENS),
    ("offline", OFFLINE_CONTEXT_TOKENS),
]


@pytest.mark.parametrize(("spec", "expected"), CONTEXTS)
def test_context_sizes(spec: str, expected: int) -> None:
    assert context_tokens(parse_model_spec(spec)) == expected


def test_chat_budget() -> None:
    gpt4o, qwen = parse_model_spec("openai:gpt-4o"), parse_model_spec("chat:q@http://h/v1")
    assert chat_budget([gpt4o]) == Budget(128_000, 16_000)
    # The smallest context of the models the history goes to.
    assert chat_budget([gpt4o, qwen]) == Budget(32_768, 4_096)
    assert chat_budget([gpt4o], 8_000, 1_000) == Budget(8_000, 1_000)
    with pytest.raises(ValueError, match="SWITCHBOARD_ANSWER_RESERVE_TOKENS"):
        chat_budget([gpt4o], 4_000, 4_000)
    budget = Budget(10_000, 2_000)
    assert budget.input_tokens == 8_000 and budget.summary_tokens == 800
    assert budget.history_tokens(1_000) == 8_000 - 1_000 - 2_000
    assert budget.history_tokens(10_000) == 0
    with pytest.raises(ValueError, match="context_tokens"):
        Budget(0, 0)


# -- the offline summary --------------------------------------------------------------


def test_offline_summary_is_deterministic_and_bounded() -> None:
    first = [user("find sushi in Boston"), call("c1", "search_yelp"), output("c1"), said("Found 5")]
    second = [user("email the list to bob@example.com"), said("Sent.")]
    one = offline_summary(None, first, 200)
    assert one == offline_summary(None, first, 200)
    assert one == (
        '- The user asked: "find sushi in Boston"; tools used: search_yelp; '
        'the assistant answered: "Found 5".'
    )
    two = offline_summary(one, second, 200)
    assert two.splitlines() == [
        one,
        '- The user asked: "email the list to bob@example.com"; the assistant answered: "Sent.".',
    ]
    # Over its budget, the oldest lines leave, counted.
    squeezed = offline_summary(two, [user("and now?"), said("Now this.")], 45)
    assert estimate_tokens(squeezed) <= 45
    assert squeezed.splitlines()[0] == "(2 earlier exchanges no longer summarised)"
    again = offline_summary(squeezed, [user("more"), said("More.")], 45)
    assert again.splitlines()[0] == "(3 earlier exchanges no longer summarised)"


def test_offline_summary_of_an_exchange_whose_start_was_folded_before() -> None:
    rest = [call("c9", "send_email"), output("c9", "sent"), said("Sent it.")]
    assert offline_summary(None, rest, 100) == (
        '- Going on; tools used: send_email; the assistant answered: "Sent it.".'
    )


def test_a_summary_too_long_is_cut_after_a_whole_sentence() -> None:
    text = "Ana lives in Boston. She likes sushi. " + "x" * 30
    assert clip(text, 100) == text
    assert clip(text, 15) == "Ana lives in Boston. She likes sushi."  # 45 characters
    assert clip("y" * 60, 10) == "y" * 29 + "…"  # no sentence: cut, marked
    assert all(len(clip(text, n)) <= 3 * n for n in range(1, 30))


def test_render_reads_every_kind_of_item() -> None:
    lines = render([user("hi"), call("c1", "search"), output("c1", "3 places"), said("ok")], 50)
    assert lines == ["User: hi", "Tool call search({})", "Tool result: 3 places", "Assistant: ok"]
