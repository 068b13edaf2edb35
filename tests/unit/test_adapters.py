"""connectors.adapters: model-facing text, function_call_output, display segments, coercion."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai.types.responses.response_input_param import FunctionCallOutput
from pydantic import BaseModel, TypeAdapter

from connectors.adapters import (
    MAX_TEXT_CHARS,
    SDK_TOOL_ERROR_PREFIX,
    coerce_tool_output,
    pick_display_segment,
    to_function_call_output,
    to_plain_text,
)
from connectors.responses import (
    AccountNeeded,
    ConnectGoogleAccount,
    ConnectPlaidAccountResponse,
    ErrorResponse,
    FileResponse,
    GoogleAccountNeededResponse,
    JsonResponse,
    LinkResponse,
    OpenTabResponse,
    OpenWindowResponse,
    TextResponse,
    ToolResponse,
)

SECRET = "sk-debug-SECRET-123"

EMAILS = [
    {"subject": "Re: Project update", "from": "alice@example.com", "to": "me@example.com",
     "markdown": "Hi, just\n  following up...", "text": "plain", "unread": True,
     "id": "18f3a2b9", "thread_id": "18f3a2b9", "cc": [], "bcc": []},
    {"subject": "", "from": {"name": "Bob", "email": "bob@example.com"}, "unread": False,
     "id": "19aa", "date": "2024-11-02"},
]
ACCOUNTS = [{"accounts": [
    {"account_id": "acc1", "name": "Plaid Checking", "mask": "0000", "type": "depository",
     "subtype": "checking",
     "balances": {"available": 100, "current": 1110.5, "iso_currency_code": "USD"}},
    {"account_id": "acc2", "name": "Credit Card", "balances": {}},
]}]
TRANSACTIONS = {"abc123": {
    "account_name": "Chase Checking", "account_official_name": "CHASE TOTAL CHECKING",
    "transactions": [
        {"date": "2024-11-01T00:00:00", "amount": 42.5, "name": "BLUE BOTTLE COFFEE",
         "category": ["Food and Drink", "Restaurants", "Coffee Shop"], "pending": False},
        {"date": "2024-11-03", "amount": -1200, "name": "PAYROLL", "pending": True,
         "iso_currency_code": "USD"},
    ],
}}
BUSINESSES = [
    {"id": "sushi-ko", "name": "Sushi Ko", "rating": 4.5, "review_count": 120, "price": "$$",
     "categories": [{"alias": "sushi", "title": "Sushi Bars"}, {"title": "Japanese"}],
     "location": {"display_address": ["1 Main St", "Boston, MA 02110"]},
     "display_phone": "(617) 555-0100", "url": "https://www.yelp.com/biz/sushi-ko?utm=x",
     "image_url": "https://img"},
    {"id": "gone", "name": "Closed Place", "rating": 3, "is_closed": True,
     "location": {"address1": "2 Side St", "city": "Boston", "state": "MA"}},
]
REVIEWS = [{"id": "r1", "rating": 5, "user": {"name": "Ella A."},
            "time_created": "2016-08-29 00:41:13", "text": "Great\nfish!"}]
CHUNKS = [
    {"id": "c1", "title": "Python", "url": "https://python.org", "snippet": "The language."},
    {"id": 2, "title": "PyPI", "url": None, "snippet": ""},
]


def _tr(rtype, response, friendly="Friendly", agent="Agent", **kw):
    return ToolResponse(rtype, agent, friendly, response, **kw)


PLAIN_TEXT_CASES = [
    ("email_inbox", _tr("google_email_inbox", EMAILS, "GMAIL Inbox", "GMail"),
     "GMAIL Inbox (2 emails):\n"
     "1. From alice@example.com — Subject Re: Project update (unread) id=18f3a2b9: "
     "Hi, just following up...\n"
     "2. From Bob <bob@example.com> — Subject (no subject) — 2024-11-02 id=19aa"),
    ("email_search_empty", _tr("google_email_search", [], "GMAIL Search", "GMail"),
     "GMAIL Search: no emails found."),
    ("email_from", _tr("google_email_search_from_email", EMAILS[:1], "From Alice", "GMail"),
     "From Alice (1 email):\n"
     "1. From alice@example.com — Subject Re: Project update (unread) id=18f3a2b9: "
     "Hi, just following up..."),
    ("send_email", _tr("send_google_email",
                       {"to": ["bob@example.com"], "cc": ["c@example.com"], "bcc": [],
                        "subject": "Hello", "body": "Hi Bob,\nsee you."}, "Sent Email", "GMail"),
     "Email sent to bob@example.com; cc: c@example.com; subject: Hello.\nBody: Hi Bob, see you."),
    ("reply_email", _tr("reply_to_google_email", {"to": ["a@x"], "subject": "Re: Hi", "id": "m9"},
                        "Sent Reply", "GMail"),
     "Reply sent to a@x; subject: Re: Hi; id=m9."),
    ("plaid_accounts", _tr("plaid_accounts_response", ACCOUNTS, "Getting Account Information"),
     "Getting Account Information (2 accounts):\n"
     "1. Plaid Checking (depository/checking ••0000): current 1,110.50 USD, "
     "available 100.00 USD id=acc1\n"
     "2. Credit Card: balance unknown id=acc2"),
    ("plaid_transactions", _tr("plaid_transactions_response", TRANSACTIONS, "Transactions"),
     "Chase Checking (id=abc123): 2 transactions\n"
     "  - 2024-11-01 BLUE BOTTLE COFFEE 42.50 [Food and Drink > Restaurants > Coffee Shop]\n"
     "  - 2024-11-03 PAYROLL -1,200.00 USD (pending)"),
    ("yelp_search", _tr("yelp_search_results", BUSINESSES, "Searching Yelp for sushi", "Yelp"),
     "Searching Yelp for sushi (2 businesses):\n"
     "1. Sushi Ko — rating 4.5 (120 reviews), $$, Sushi Bars, Japanese — 1 Main St, "
     "Boston, MA 02110 — (617) 555-0100 id=sushi-ko\n"
     "2. Closed Place — rating 3, closed — 2 Side St, Boston, MA id=gone"),
    ("yelp_reviews", _tr("yelp_reviews", REVIEWS, "Getting reviews from Yelp", "Yelp"),
     "Getting reviews from Yelp (1 review):\n"
     "1. rating 5 by Ella A. (2016-08-29): Great fish!"),
    ("search_chunks", _tr("google_search_results", [{"title": "ignored"}], "Searching the web",
                          "Google Search", content_chunks=CHUNKS),
     "Searching the web (cite as [n]):\n"
     "[1] Python — https://python.org\n    The language.\n"
     "[2] PyPI"),
    ("search_no_chunks", _tr("google_search_results",
                             [{"title": "A", "link": "https://a", "snippet": "aa"},
                              {"title": "B", "url": "https://b"}], "Web", "Google Search"),
     "Web (cite as [n]):\n[1] A — https://a\n    aa\n[2] B — https://b"),
    ("account_needed", AccountNeeded("Yelp", "yelp"),
     'The user has not connected their Yelp account yet, so this cannot be done now. '
     'A "Connect your Yelp account" card with a connect button is shown to them in the chat: '
     "ask them to connect the account there, then try again."),
    ("google_account_needed", GoogleAccountNeededResponse(),
     'The user has not connected their Google account yet, so this cannot be done now. '
     'A "Connect your Google account" card with a connect button is shown to them in the '
     "chat: ask them to connect the account there, then try again."),
    ("connect_google_account", ConnectGoogleAccount(),
     'The user has not connected their Google account yet, so this cannot be done now. '
     'A "Connect your Google account" card with a connect button is shown to them in the '
     "chat: ask them to connect the account there, then try again."),
    ("connect_plaid_account", ConnectPlaidAccountResponse(),
     'The user has not connected their bank account yet, so this cannot be done now. '
     'A "Connect your bank" card with a connect button is shown to them in the chat: '
     "ask them to connect the account there, then try again."),
    ("open_window", OpenWindowResponse("Browser", "https://example.com"),
     "Offered the user a link to open https://example.com."),
    ("open_tab", OpenTabResponse("Browser", "https://example.com/t"),
     "Opened https://example.com/t in a new browser tab for the user."),
    ("error", ErrorResponse("Yelp", "rate limited, retry in 60s"),
     "Error: rate limited, retry in 60s"),
    ("error_already_prefixed", ErrorResponse("Yelp", "Error: quota"), "Error: quota"),
    ("error_dict_payload", _tr("error", {"message": "bad"}), "Error: bad"),
    ("file_inline", FileResponse("Files", "report.pdf", "application/pdf", data=b"x" * 3000),
     "File: report.pdf (application/pdf, 2.9 KB)"),
    ("file_small", FileResponse("Files", "a.txt", "text/plain", data=b"hello"),
     "File: a.txt (text/plain, 5 bytes)"),
    ("file_url", FileResponse("Files", "r.pdf", "application/pdf", url="https://f/r.pdf"),
     "File: r.pdf (application/pdf) at https://f/r.pdf"),
    ("link", LinkResponse("Web", "https://x.example", "X site", "An example\nsite"),
     "Link: X site — https://x.example\nAn example site"),
    ("link_untitled", LinkResponse("Web", "https://y.example"), "Link: https://y.example"),
    ("text", TextResponse("Notes", "line one\nline two"), "line one\nline two"),
    ("json", JsonResponse("Data", {"a": [1, 2], "b": "é"}), '{"a":[1,2],"b":"é"}'),
    ("unknown_dict", _tr("weather_report", {"temp": 21.5, "sky": "clear"}),
     '{"temp":21.5,"sky":"clear"}'),
    ("unknown_str", _tr("weather_report", "Sunny, 21°C"), "Sunny, 21°C"),
    ("malformed_known_type_falls_back_to_json",
     _tr("google_email_inbox", {"oops": True}), '{"oops":true}'),
    ("malformed_items_inside_list", _tr("yelp_reviews", ["just text"]),
     'Friendly (1 review):\n1. "just text"'),
]


@pytest.mark.parametrize(("name", "response", "expected"), PLAIN_TEXT_CASES,
                         ids=[case[0] for case in PLAIN_TEXT_CASES])
def test_to_plain_text(name, response, expected):
    assert to_plain_text(response) == expected
    assert to_plain_text(response.to_dict()) == expected
    assert to_plain_text(response.to_dict(include_debug=True)) == expected


@pytest.mark.parametrize("response", [case[1] for case in PLAIN_TEXT_CASES],
                         ids=[case[0] for case in PLAIN_TEXT_CASES])
def test_to_plain_text_never_includes_debug_info(response):
    response.debug_info = {"token": SECRET}
    assert SECRET not in to_plain_text(response)
    assert SECRET not in to_plain_text(response.to_dict(include_debug=True))


def test_non_tool_response_dict_drops_debug_info():
    text = to_plain_text({"rows": [1, 2], "debug_info": {"token": SECRET}})
    assert text == '{"rows":[1,2]}'


def test_content_chunks_are_always_numbered_citations():
    response = JsonResponse("Docs", {"answer": 42})
    response.content_chunks = CHUNKS
    assert to_plain_text(response) == (
        '{"answer":42}\n\n'
        "Sources (cite as [n]):\n"
        "[1] Python — https://python.org\n    The language.\n"
        "[2] PyPI"
    )


def test_error_message_on_a_non_error_result_is_appended():
    response = TextResponse("Mail", "Sent 2 of 3.")
    response.error_message = "one address bounced"
    assert to_plain_text(response) == "Sent 2 of 3.\nError: one address bounced"


def test_plain_strings_and_other_values_are_accepted():
    assert to_plain_text("hello") == "hello"
    assert to_plain_text("Error: nope") == "Error: nope"
    assert to_plain_text([1, 2]) == "[1,2]"


def test_long_json_list_is_cut_at_whole_items_with_a_note():
    text = to_plain_text(JsonResponse("Data", list(range(5000))))
    assert len(text) <= MAX_TEXT_CHARS
    body, note = text.rsplit("\n", 1)
    items = json.loads(body)
    assert items == list(range(len(items)))
    assert note == f"[truncated: showing {len(items)} of 5000 items]"
    assert len(items) > 1000


def test_long_json_dict_is_cut_at_whole_keys():
    data = {f"key{i}": "v" * 50 for i in range(400)}
    text = to_plain_text(_tr("custom", data), max_chars=1000)
    body, note = text.rsplit("\n", 1)
    kept = json.loads(body)
    assert kept == {key: data[key] for key in list(data)[: len(kept)]}
    assert note == f"[truncated: showing {len(kept)} of 400 keys]"


def test_one_huge_value_is_cut_by_characters():
    text = to_plain_text(_tr("custom", {"a": "b" * 9000}))
    assert len(text) <= MAX_TEXT_CHARS
    assert text.startswith('{"a":"bbb')
    assert text.endswith("[truncated: showing 7920 of 9008 characters]")


def test_long_text_is_cut_at_a_line_with_a_note():
    text = to_plain_text(TextResponse("Doc", "line\n" * 3000), max_chars=500)
    assert len(text) <= 500
    kept, note = text.rsplit("\n", 1)
    assert set(kept.split("\n")) == {"line"}
    omitted = 3000 - len(kept.split("\n"))
    assert note.startswith(f"[truncated: {omitted} more lines")


def test_long_email_list_is_cut_but_keeps_citations_readable():
    emails = [{"from": f"p{i}@x", "subject": f"s{i}", "id": str(i), "snippet": "z" * 100}
              for i in range(200)]
    response = _tr("google_email_inbox", emails, "Inbox", content_chunks=CHUNKS)
    text = to_plain_text(response, max_chars=2000)
    assert len(text) <= 2000
    assert text.startswith("Inbox (200 emails):\n1. From p0@x")
    assert "[truncated:" in text
    assert text.endswith("Sources (cite as [n]):\n[1] Python — https://python.org\n"
                         "    The language.\n[2] PyPI")


def test_huge_error_message_on_a_result_is_capped_too():
    response = TextResponse("Mail", "Sent 2 of 3.")
    response.error_message = "bounce " * 2000
    text = to_plain_text(response, max_chars=1000)
    assert len(text) <= 1000
    assert text.startswith("Sent 2 of 3.\nError: bounce bounce")
    assert text.endswith(" more characters not shown]")


def test_unserialisable_payloads_from_raw_dicts_do_not_raise():
    loop: list = []
    loop.append(loop)
    assert to_plain_text(_tr("custom", "x").to_dict() | {"response": {(1, 2): "a"}}) == \
        "{(1, 2): 'a'}"
    assert to_plain_text(_tr("custom", "x").to_dict() | {"response": loop}) == "[[...]]"
    assert to_plain_text(_tr("custom", "x").to_dict() | {"response": {"s": {3}}}) == \
        '{"s":"{3}"}'


def test_no_cap_when_max_chars_is_none():
    text = to_plain_text(JsonResponse("Data", list(range(5000))), max_chars=None)
    assert json.loads(text) == list(range(5000))


def test_max_chars_too_small_is_rejected():
    with pytest.raises(ValueError, match="max_chars must be at least 200"):
        to_plain_text(TextResponse("A", "x"), max_chars=10)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=300)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda children: st.lists(children, max_size=8)
    | st.dictionaries(st.text(max_size=10), children, max_size=8),
    max_leaves=60,
)
_rtypes = st.sampled_from([
    "google_email_inbox", "send_google_email", "plaid_accounts_response",
    "plaid_transactions_response", "yelp_search_results", "yelp_reviews",
    "google_search_results", "account_needed", "open_tab", "open_window", "error", "file",
    "link", "text", "json", "something_else",
])


@settings(max_examples=300, deadline=None)
@given(rtype=_rtypes, payload=_json, error=st.none() | st.text(max_size=50),
       max_chars=st.integers(min_value=200, max_value=3000))
def test_to_plain_text_is_total_and_capped(rtype, payload, error, max_chars):
    data = {"response_type": rtype, "agent_name": "A", "friendly_name": "F",
            "response": payload, "display_response": True, "error_message": error,
            "debug_info": {"token": SECRET}}
    text = to_plain_text(data, max_chars=max_chars)
    assert isinstance(text, str)
    assert len(text) <= max_chars
    assert SECRET not in text


# ------------------------------------------------------------------ function_call_output

def test_function_call_output_item_shape():
    item = to_function_call_output("call_123", ErrorResponse("Yelp", "boom"))
    assert item == {"type": "function_call_output", "call_id": "call_123",
                    "output": "Error: boom"}
    assert TypeAdapter(FunctionCallOutput).validate_python(item) == item


def test_function_call_output_accepts_dicts():
    item = to_function_call_output("c1", TextResponse("A", "hi").to_dict(include_debug=True))
    assert item["output"] == "hi"


@pytest.mark.parametrize(("call_id", "error"), [("", ValueError), (None, TypeError),
                                                 (12, TypeError)])
def test_function_call_output_needs_a_call_id(call_id, error):
    with pytest.raises(error):
        to_function_call_output(call_id, TextResponse("A", "x"))


# ------------------------------------------------------------------ pick_display_segment

DIFF = {"type": "diff", "content": {"path": "a.py", "patch": "-x\n+y"}}
MD = {"type": "markdown", "content": "**hi**"}
TEXT = {"type": "text", "content": "hi"}
TEXT2 = {"type": "text", "content": "second"}


@pytest.mark.parametrize(("segments", "supported", "expected"), [
    ([DIFF, TEXT], {"diff", "text"}, DIFF),
    ([DIFF, TEXT], ["text"], TEXT),
    ([DIFF, MD, TEXT], ("markdown", "text"), MD),
    ([DIFF, MD, TEXT], iter(["markdown"]), MD),
    ([DIFF, TEXT, TEXT2], [], TEXT),
    ([DIFF, MD], ["text"], None),
    ([], ["text"], None),
    (None, ["text"], None),
    (["text", None, {"content": "no type"}, {"type": 3}, TEXT], ["text"], TEXT),
    ([{"type": "card"}, MD], ["card", "markdown"], {"type": "card"}),
])
def test_pick_display_segment(segments, supported, expected):
    assert pick_display_segment(segments, supported) == expected


def test_pick_display_segment_returns_the_segment_itself():
    segments = [DIFF, TEXT]
    assert pick_display_segment(segments, ["text"]) is segments[1]


# ------------------------------------------------------------------ coerce_tool_output

class _Model(BaseModel):
    name: str
    count: int


class _Weird:
    def __repr__(self) -> str:
        return "<Weird thing>"


class _BadRepr:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


def _text_dict(text, agent="Yelp"):
    return {"response_type": "text", "agent_name": agent, "friendly_name": agent,
            "response": text, "display_response": True}


def _error_dict(message, agent="Yelp", **extra):
    return {"response_type": "error", "agent_name": agent, "friendly_name": f"{agent} error",
            "response": message, "display_response": True, "error_message": message, **extra}


def _json_dict(data, agent="Yelp", **extra):
    return {"response_type": "json", "agent_name": agent, "friendly_name": agent,
            "response": data, "display_response": True, **extra}


SHAPED = {"response_type": "yelp_reviews", "agent_name": "Yelp", "friendly_name": "Reviews",
          "response": [], "display_response": False, "debug_info": {"q": 1}}

COERCE_CASES = [
    ("tool_response_keeps_debug",
     ErrorResponse("Yelp", "boom", debug_info={"status": 500}),
     _error_dict("boom", debug_info={"status": 500})),
    ("shaped_dict_kept", SHAPED, SHAPED),
    ("shaped_dict_normalised", {"agent_name": "Yelp", "response": "r", "friendly_name": "F",
                                "response_type": "text", "unknown": 1},
     {"response_type": "text", "agent_name": "Yelp", "friendly_name": "F", "response": "r",
      "display_response": True}),
    ("shaped_json_string", json.dumps(SHAPED), SHAPED),
    ("shaped_dict_bad_display_as",
     {**SHAPED, "display_as": [{"type": "text"}], "error_message": "half"},
     {"response_type": "yelp_reviews", "agent_name": "Yelp", "friendly_name": "Reviews",
      "response": [], "display_response": False, "error_message": "half",
      "debug_info": {"coerce_error": "ToolResponse.display_as[0] is missing 'content'"}}),
    ("shaped_dict_bad_response",
     {"response_type": "x", "agent_name": "Yelp", "friendly_name": "F", "response": {1, 2}},
     _error_dict("The tool returned a response that could not be shown.",
                 debug_info={"coerce_error":
                             "ToolResponse.response must be a dict, list or str, got set"})),
    ("error_string", "Error: rate limited", _error_dict("rate limited")),
    ("error_string_no_colon", "Error 500 from upstream", _error_dict("Error 500 from upstream")),
    ("bare_error", "Error:", _error_dict("Error:")),
    ("errors_word_is_text", "Errors found: none", _text_dict("Errors found: none")),
    ("sdk_error_string", SDK_TOOL_ERROR_PREFIX + ". Please try again.",
     _error_dict(SDK_TOOL_ERROR_PREFIX + ". Please try again.")),
    ("plain_string", "  hello  ", _text_dict("  hello  ")),
    ("json_string_not_shaped", '{"a": 1}', _text_dict('{"a": 1}')),
    ("exception", ValueError("https://api?key=SECRET"),
     _error_dict("The Yelp tool failed (ValueError).",
                 debug_info={"exception_type": "ValueError",
                             "exception": "https://api?key=SECRET"})),
    ("dict", {"a": 1}, _json_dict({"a": 1})),
    ("dict_with_debug_info", {"a": 1, "debug_info": {"t": 2}},
     _json_dict({"a": 1}, debug_info={"t": 2})),
    ("dict_with_bad_debug_info", {"a": 1, "debug_info": "x"}, _json_dict({"a": 1})),
    ("list", [1, "two"], _json_dict([1, "two"])),
    ("tuple", (1, 2), _json_dict([1, 2])),
    ("pydantic", _Model(name="n", count=2), _json_dict({"name": "n", "count": 2})),
    ("int", 42, _text_dict("42")),
    ("none", None, _text_dict("null")),
    ("bool", True, _text_dict("true")),
    ("non_json_dict", {"when": {1, 2}}, _text_dict("{'when': {1, 2}}")),
    ("set", {1, 2}, _text_dict("{1, 2}")),
    ("object", _Weird(), _text_dict("<Weird thing>")),
    ("bytes", b"\x00ab", _text_dict("b'\\x00ab'")),
    ("bad_repr", _BadRepr(),
     _error_dict("The Yelp tool failed (RuntimeError).",
                 debug_info={"exception_type": "RuntimeError", "exception": "no repr"})),
]


@pytest.mark.parametrize(("name", "value", "expected"), COERCE_CASES,
                         ids=[case[0] for case in COERCE_CASES])
def test_coerce_tool_output(name, value, expected):
    result = coerce_tool_output(value, "Yelp")
    assert result == expected
    assert list(result) == list(expected)


def test_coerce_without_agent_name_uses_tool():
    assert coerce_tool_output("hi", "")["agent_name"] == "Tool"


def test_coerce_long_repr_is_capped():
    class Long:
        def __repr__(self) -> str:
            return "x" * 10_000

    text = coerce_tool_output(Long(), "A")["response"]
    assert text == "x" * 4000 + "… [truncated: 6000 more characters]"


def test_coerced_error_reads_as_error_for_the_model():
    assert to_plain_text(coerce_tool_output("Error: quota exceeded", "A")) == \
        "Error: quota exceeded"


@settings(max_examples=300, deadline=None)
@given(st.one_of(
    _json, st.text(), st.binary(max_size=20), st.sets(st.integers(), max_size=3),
    st.builds(ValueError, st.text(max_size=20)),
    st.dictionaries(st.sampled_from(["response_type", "agent_name", "friendly_name",
                                     "response", "display_response", "display_as",
                                     "content_chunks", "debug_info", "error_message"]),
                    _json | st.text(min_size=1, max_size=5)),
))
def test_coerce_always_gives_a_valid_tool_response(value):
    result = coerce_tool_output(value, "Agent")
    rebuilt = ToolResponse.from_dict(result)
    assert rebuilt.to_dict(include_debug=True) == result
    json.dumps(result, allow_nan=False)
    assert isinstance(to_plain_text(result), str)
