"""connectors.responses: the ToolResponse family (seed 000 keys, PROTOCOL.md §6 names)."""

from __future__ import annotations

import base64
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from connectors.gmail.responses import ConnectGoogleAccount, GoogleAccountNeededResponse
from connectors.plaid.responses import ConnectPlaidAccountResponse
from connectors.responses import (
    CORE_KEYS,
    DISPLAY_TYPES,
    RESPONSE_CLASSES,
    AccountNeeded,
    ErrorResponse,
    FileResponse,
    JsonResponse,
    LinkResponse,
    OpenTabResponse,
    OpenWindowResponse,
    TextResponse,
    ToolResponse,
    describe_problems,
)
from wire.tool_response import MAX_JSON_DEPTH, ToolResponseData

SEED_000_KEYS = ["response_type", "agent_name", "friendly_name", "response", "display_response"]

# (id, factory, response_type, agent_name, friendly_name, response, extra keys in to_dict())
SUBCLASSES = [
    (
        "account_needed",
        lambda: AccountNeeded("Yelp", "yelp"),
        "account_needed",
        "Yelp",
        "Connect your Yelp account",
        {"connector": "yelp", "message": "Connect your Yelp account to continue."},
        {},
    ),
    (
        "google_account_needed",
        GoogleAccountNeededResponse,
        "google_account_needed",
        "GMail",
        "Connect your Google account",
        {
            "connector": "gmail",
            "message": "Connect your Google account so I can read and send email.",
        },
        {},
    ),
    (
        "connect_google_account",
        ConnectGoogleAccount,
        "connect_google_account",
        "GMail",
        "Connect your Google account",
        {"connector": "gmail", "message": "Connect your Google account to continue."},
        {},
    ),
    (
        "connect_plaid_account",
        ConnectPlaidAccountResponse,
        "connect_plaid_account",
        "Plaid",
        "Connect your bank",
        {
            "connector": "plaid",
            "message": "Connect a bank account so I can see balances and transactions.",
        },
        {},
    ),
    (
        "open_window",
        lambda: OpenWindowResponse("Browser", "https://example.com"),
        "open_window",
        "Browser",
        "Open https://example.com",
        {"url": "https://example.com"},
        {},
    ),
    (
        "open_tab",
        lambda: OpenTabResponse("Browser", "https://example.com/t", "Docs"),
        "open_tab",
        "Browser",
        "Docs",
        {"url": "https://example.com/t"},
        {},
    ),
    (
        "error",
        lambda: ErrorResponse("Yelp", "rate limited"),
        "error",
        "Yelp",
        "Yelp error",
        "rate limited",
        {"error_message": "rate limited"},
    ),
    ("text", lambda: TextResponse("Notes", "hello"), "text", "Notes", "Notes", "hello", {}),
    (
        "json",
        lambda: JsonResponse("Data", {"a": [1, 2]}, "Some data"),
        "json",
        "Data",
        "Some data",
        {"a": [1, 2]},
        {},
    ),
    (
        "file_inline",
        lambda: FileResponse("Files", "a.txt", "text/plain", data=b"hi!"),
        "file",
        "Files",
        "a.txt",
        {"name": "a.txt", "mime_type": "text/plain", "size": 3, "data_base64": "aGkh"},
        {},
    ),
    (
        "file_url",
        lambda: FileResponse("Files", "r.pdf", "application/pdf", url="https://f.example/r.pdf"),
        "file",
        "Files",
        "r.pdf",
        {"name": "r.pdf", "mime_type": "application/pdf", "url": "https://f.example/r.pdf"},
        {},
    ),
    (
        "link",
        lambda: LinkResponse("Web", "https://x.example", "X", "An example"),
        "link",
        "Web",
        "X",
        {"url": "https://x.example", "title": "X", "description": "An example"},
        {},
    ),
    (
        "link_no_title",
        lambda: LinkResponse("Web", "https://y.example"),
        "link",
        "Web",
        "https://y.example",
        {"url": "https://y.example", "title": "https://y.example"},
        {},
    ),
]
IDS = [case[0] for case in SUBCLASSES]


@pytest.mark.parametrize(
    ("name", "factory", "rtype", "agent", "friendly", "payload", "extra"), SUBCLASSES, ids=IDS
)
def test_subclass_fields(name, factory, rtype, agent, friendly, payload, extra):
    response = factory()
    assert response.response_type == rtype
    assert response.agent_name == agent
    assert response.friendly_name == friendly
    assert response.response == payload
    assert response.display_response is True
    assert response.to_dict() == {
        "response_type": rtype,
        "agent_name": agent,
        "friendly_name": friendly,
        "response": payload,
        "display_response": True,
        **extra,
    }


@pytest.mark.parametrize(
    ("name", "factory", "rtype", "agent", "friendly", "payload", "extra"), SUBCLASSES, ids=IDS
)
def test_to_dict_keys_are_seed_000_keys_in_order_plus_set_optional(
    name, factory, rtype, agent, friendly, payload, extra
):
    keys = list(factory().to_dict())
    assert keys[:5] == SEED_000_KEYS
    assert keys[5:] == list(extra)


@pytest.mark.parametrize(
    ("name", "factory", "rtype", "agent", "friendly", "payload", "extra"), SUBCLASSES, ids=IDS
)
def test_round_trip_rebuilds_the_subclass(name, factory, rtype, agent, friendly, payload, extra):
    response = factory()
    response.debug_info = {"request_id": "r-1"}
    for data in (
        response.to_dict(include_debug=True),
        json.loads(json.dumps(response.to_dict(include_debug=True))),
    ):
        rebuilt = ToolResponse.from_dict(data)
        assert type(rebuilt) is type(response)
        assert rebuilt == response
        assert rebuilt.to_dict(include_debug=True) == data
    without_debug = ToolResponse.from_dict(response.to_dict())
    assert without_debug.debug_info is None
    assert without_debug.to_dict() == response.to_dict()


def test_protocol_response_types_have_classes():
    assert set(RESPONSE_CLASSES) == {
        "account_needed",
        "google_account_needed",
        "connect_google_account",
        "connect_plaid_account",
        "open_window",
        "open_tab",
        "error",
        "text",
        "json",
        "file",
        "link",
    }
    for rtype, cls in RESPONSE_CLASSES.items():
        assert cls.response_type_name == rtype


def test_from_dict_unknown_type_is_plain_tool_response():
    data = {
        "response_type": "yelp_reviews",
        "agent_name": "Yelp",
        "friendly_name": "Reviews",
        "response": [{"rating": 5}],
        "display_response": False,
    }
    rebuilt = ToolResponse.from_dict(data)
    assert type(rebuilt) is ToolResponse
    assert rebuilt.to_dict() == data


def test_from_dict_defaults_display_response_and_ignores_unknown_keys():
    rebuilt = ToolResponse.from_dict(
        {"response_type": "x", "agent_name": "A", "friendly_name": "F", "response": "r", "extra": 1}
    )
    assert rebuilt.display_response is True
    assert rebuilt.to_dict() == {
        "response_type": "x",
        "agent_name": "A",
        "friendly_name": "F",
        "response": "r",
        "display_response": True,
    }


def _problems(call) -> list[tuple[tuple, str]]:
    """Where (``loc``) and what (pydantic's error ``type``) each problem of ``call()`` is."""
    with pytest.raises(ValidationError) as info:
        call()
    return [(error["loc"], error["type"]) for error in info.value.errors()]


def test_from_dict_rejects_a_non_dict():
    with pytest.raises(TypeError, match="expected a ToolResponse dict, got list"):
        ToolResponse.from_dict([])


@pytest.mark.parametrize(
    ("data", "problems"),
    [
        (
            {"agent_name": "A", "friendly_name": "F", "response": "r"},
            [(("response_type",), "missing")],
        ),
        (
            {"response_type": "x", "agent_name": "A"},
            [(("friendly_name",), "missing"), (("response",), "missing")],
        ),
        (
            {"response_type": "x", "agent_name": "A", "friendly_name": "F", "response": 5},
            [(("response",), "payload_type")],
        ),
        (
            {"response_type": 3, "agent_name": "A", "friendly_name": "F", "response": "r"},
            [(("response_type",), "string_type")],
        ),
    ],
)
def test_from_dict_rejects_bad_input_naming_the_field(data, problems):
    assert _problems(lambda: ToolResponse.from_dict(data)) == problems


def _full(**overrides):
    values = dict(
        response_type="google_search_results",
        agent_name="Search",
        friendly_name="Searching",
        response=[{"title": "t"}],
        display_as=[{"type": "markdown", "content": "**t**"}, {"type": "text", "content": "t"}],
        content_chunks=[{"id": "c1", "title": "T", "url": "https://t", "snippet": "s"}],
        debug_info={"q": "t"},
        error_message="partial",
    )
    values.update(overrides)
    return ToolResponse(**values)


def test_to_dict_optional_keys_order_and_debug_only_when_asked():
    response = _full()
    assert list(response.to_dict()) == SEED_000_KEYS + [
        "display_as",
        "content_chunks",
        "error_message",
    ]
    assert "debug_info" not in response.to_dict()
    full = response.to_dict(include_debug=True)
    assert list(full)[-1] == "debug_info"
    assert full["debug_info"] == {"q": "t"}
    assert ToolResponse.from_dict(full) == response


def test_to_dict_without_debug_info_set_has_no_debug_key_even_when_asked():
    assert "debug_info" not in TextResponse("A", "x").to_dict(include_debug=True)


def test_core_keys_constant_matches_seed():
    assert list(CORE_KEYS) == SEED_000_KEYS


@pytest.mark.parametrize(
    ("field", "value", "loc", "kind"),
    [
        ("response", {"when": {1, 2}}, ("response", "object", "when"), "not_json"),
        ("response", [1, object()], ("response", "array", 1), "not_json"),
        ("response", {"x": math.nan}, ("response", "object", "x", "number"), "finite_number"),
        ("response", [math.inf], ("response", "array", 0, "number"), "finite_number"),
        (
            "response",
            {"a": {2: "b"}},
            ("response", "object", "a", "object", 2, "[key]"),
            "string_type",
        ),
        ("response", {"raw": b"bytes"}, ("response", "object", "raw"), "not_json"),
        (
            "display_as",
            [{"type": "json", "content": {"d": 1j}}],
            ("display_as", 0, "data", "content", "object", "d"),
            "not_json",
        ),
        (
            "content_chunks",
            [{"id": 1, "title": "t", "url": None, "snippet": "s", "x": {1}}],
            ("content_chunks", 0, "x"),
            "not_json",
        ),
        ("debug_info", {"exc": ValueError("x")}, ("debug_info", "exc"), "not_json"),
    ],
)
def test_non_json_values_are_refused_where_they_are(field, value, loc, kind):
    assert _problems(lambda: _full(**{field: value})) == [(loc, kind)]


def test_the_message_names_the_path_and_the_problem():
    with pytest.raises(ValidationError) as info:
        _full(response={"items": [1, 2, {1, 2}]})
    assert "response.object.items.array.2\n  is not JSON-serialisable" in str(info.value)
    assert describe_problems(info.value) == (
        "response.object.items.array.2: is not JSON-serialisable (got set)"
    )


def test_circular_reference_is_reported():
    loop: list = []
    loop.append(loop)
    [(loc, kind)] = _problems(lambda: _full(response=loop))
    assert loc[0] == "response" and kind == "recursion_loop"


def test_deep_nesting_is_reported():
    deep: list = []
    for _ in range(MAX_JSON_DEPTH):  # MAX_JSON_DEPTH + 1 nested lists
        deep = [deep]
    with pytest.raises(ValidationError, match=f"nested more than {MAX_JSON_DEPTH} levels"):
        _full(response=deep)
    assert _full(response=deep[0]).response == deep[0]  # one level less is fine


def test_shared_but_acyclic_values_are_fine():
    shared = {"a": 1}
    assert _full(response=[shared, shared]).response == [{"a": 1}, {"a": 1}]


def test_tuples_are_accepted_as_json_arrays():
    data = _full(response={"t": (1, 2)}).to_dict()
    assert json.loads(json.dumps(data))["response"] == {"t": [1, 2]}


@pytest.mark.parametrize(
    ("overrides", "problems"),
    [
        ({"response_type": ""}, [(("response_type",), "string_too_short")]),
        ({"agent_name": None}, [(("agent_name",), "string_type")]),
        ({"friendly_name": 1}, [(("friendly_name",), "string_type")]),
        ({"display_response": "yes"}, [(("display_response",), "bool_type")]),
        ({"display_response": 1}, [(("display_response",), "bool_type")]),
        ({"response": None}, [(("response",), "payload_type")]),
        ({"response": 3.5}, [(("response",), "payload_type")]),
        ({"debug_info": ["x"]}, [(("debug_info",), "dict_type")]),
        ({"error_message": 404}, [(("error_message",), "string_type")]),
        # display_as hints: {type, content}, any non-empty type
        ({"display_as": {"type": "text"}}, [(("display_as",), "list_type")]),
        ({"display_as": ["text"]}, [(("display_as", 0), "hint_type")]),
        ({"display_as": [{"content": "x"}]}, [(("display_as", 0, "data", "type"), "missing")]),
        (
            {"display_as": [{"type": "text", "content": "a"}, {"type": 2, "content": "x"}]},
            [(("display_as", 1, "data", "type"), "string_type")],
        ),
        (
            {"display_as": [{"type": "", "content": "x"}]},
            [(("display_as", 0, "data", "type"), "string_too_short")],
        ),
        ({"display_as": [{"type": "diff"}]}, [(("display_as", 0, "data", "content"), "missing")]),
        (
            {"display_as": [{"type": "text", "content": {"a": 1}}]},
            [(("display_as", 0, "text", "content"), "string_type")],
        ),
        (
            {"display_as": [{"type": "markdown", "content": None}]},
            [(("display_as", 0, "text", "content"), "string_type")],
        ),
        # content_chunks: {id, title, url, snippet}
        ({"content_chunks": "c"}, [(("content_chunks",), "list_type")]),
        ({"content_chunks": [None]}, [(("content_chunks", 0), "dict_type")]),
        (
            {"content_chunks": [{"id": "1", "title": "t"}]},
            [
                (("content_chunks", 0, "url"), "missing"),
                (("content_chunks", 0, "snippet"), "missing"),
            ],
        ),
        (
            {"content_chunks": [{"id": True, "title": "t", "url": None, "snippet": ""}]},
            [
                (("content_chunks", 0, "id", "str"), "string_type"),
                (("content_chunks", 0, "id", "int"), "int_type"),
            ],
        ),
        (
            {"content_chunks": [{"id": 1, "title": None, "url": None, "snippet": ""}]},
            [(("content_chunks", 0, "title"), "string_type")],
        ),
        (
            {"content_chunks": [{"id": 1, "title": "t", "url": 5, "snippet": ""}]},
            [(("content_chunks", 0, "url"), "string_type")],
        ),
        (
            {"content_chunks": [{"id": 1, "title": "t", "url": "u", "snippet": ["s"]}]},
            [(("content_chunks", 0, "snippet"), "string_type")],
        ),
    ],
)
def test_invalid_fields_are_refused_naming_the_field(overrides, problems):
    assert _problems(lambda: _full(**overrides)) == problems


def test_documented_and_own_display_types_are_accepted():
    hints = [{"type": kind, "content": "x"} for kind in DISPLAY_TYPES if kind != "link"]
    hints.append({"type": "link", "content": "https://x.example/doc"})
    assert set(DISPLAY_TYPES) == {"text", "markdown", "json", "diff", "link", "card"}
    # A connector's own type: a client that does not know it skips it (docs/protocol.md §3).
    hints.append({"type": "image", "content": {"url": "https://x.example/a.png"}})
    assert _full(display_as=hints).display_as == hints


@pytest.mark.parametrize(
    "url", ["https://x.example/doc?q=1#top", "http://127.0.0.1:8000", "HTTPS://X.EXAMPLE"]
)
def test_a_link_hint_leads_to_a_web_page(url):
    hints = [
        {"type": "link", "content": url},
        {"type": "link", "content": {"url": url, "title": "Doc", "rank": 1}},
    ]
    assert _full(display_as=hints).display_as == hints


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("javascript:alert(1)", "not javascript:"),
        ({"url": " JavaScript:alert(1)", "title": "Open"}, "not javascript:"),
        ("data:text/html,<script>alert(1)</script>", "not data:"),
        ("file:///etc/passwd", "not file:"),
        ("notes/report", "with a host, no spaces"),
        (" https://x.example", "with a host, no spaces"),
        ({"title": "no url"}, "Field required"),
        (3, "must be a URL or an object with a url"),
    ],
)
def test_a_link_hint_that_is_no_web_page_is_refused(content, problem):
    # Every client (the bundled UI, AG-UI, Open Responses, a socket client) may put a
    # link's URL in a page as it is: only an http(s) page is one to open.
    with pytest.raises(ValidationError) as info:
        _full(display_as=[{"type": "text", "content": "t"}, {"type": "link", "content": content}])
    [error] = info.value.errors()
    assert error["loc"][:2] == ("display_as", 1)
    assert problem in error["msg"]


def test_assignment_is_validated():
    response = _full()
    response.debug_info = {"request_id": "r-1"}
    assert response.to_dict(include_debug=True)["debug_info"] == {"request_id": "r-1"}
    assert _problems(lambda: setattr(response, "debug_info", {"when": {1}})) == [
        (("debug_info", "when"), "not_json")
    ]
    assert response.debug_info == {"request_id": "r-1"}


def test_the_schema_is_what_the_wire_dump_gives():
    response = _full()
    assert response.model_dump() == response.to_dict(include_debug=True)
    assert json.loads(response.model_dump_json()) == response.to_dict(include_debug=True)
    bare = TextResponse("A", "x")
    assert bare.model_dump() == bare.to_dict()
    assert ToolResponseData.model_validate(bare.to_dict()).model_dump() == bare.to_dict()


def test_other_segment_types_may_hold_objects_and_extra_keys():
    segments = [
        {"type": "diff", "content": {"path": "a", "patch": "-"}, "lang": "py"},
        {"type": "text", "content": "edited a"},
    ]
    assert _full(display_as=segments).to_dict()["display_as"] == segments


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({}, ValueError, "exactly one of data or url"),
        ({"data": b"x", "url": "https://u"}, ValueError, "exactly one of data or url"),
        ({"data": "text"}, TypeError, "FileResponse data must be bytes, got str"),
        ({"url": ""}, TypeError, "FileResponse url must be a non-empty string"),
    ],
)
def test_file_response_arguments(kwargs, error, message):
    with pytest.raises(error, match=message):
        FileResponse("Files", "a.bin", "application/octet-stream", **kwargs)


def test_file_response_base64_decodes_to_the_data():
    data = bytes(range(256))
    payload = FileResponse("Files", "b.bin", "application/octet-stream", data=data).response
    assert base64.b64decode(payload["data_base64"]) == data
    assert payload["size"] == 256


@pytest.mark.parametrize("url", ["", None])
def test_open_window_needs_a_url(url):
    with pytest.raises(TypeError, match="OpenWindowResponse url must be a non-empty string"):
        OpenWindowResponse("Browser", url)


def test_json_response_rejects_scalars():
    with pytest.raises(TypeError, match="JsonResponse data must be a dict or list, got int"):
        JsonResponse("Data", 5)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"response_type": "t", "agent_name": "A", "friendly_name": "F", "response": ""}, True),
        ({"response_type": "t", "agent_name": "A", "friendly_name": "F"}, False),
        ({"response_type": None, "agent_name": "A", "friendly_name": "F", "response": 1}, False),
        ({"type": "text", "content": "x"}, False),
        ("response_type", False),
        (None, False),
    ],
)
def test_is_tool_response(value, expected):
    assert ToolResponse.is_tool_response(value) is expected


def test_is_tool_response_accepts_every_subclass_dict():
    for _name, factory, *_ in SUBCLASSES:
        assert ToolResponse.is_tool_response(factory().to_dict()) is True


# ---------------------------------------------------------------- property-based round trip

_text = st.text(max_size=20)
_names = st.text(min_size=1, max_size=20)
_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | _text
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(_text, children, max_size=4),
    max_leaves=12,
)
_payload = _text | st.lists(_json, max_size=4) | st.dictionaries(_text, _json, max_size=4)
_segment = st.one_of(
    st.fixed_dictionaries({"type": st.sampled_from(["text", "markdown"]), "content": _text}),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["json", "diff", "card", "x-custom"]), "content": _json}
    ),
)
_chunk = st.fixed_dictionaries(
    {
        "id": st.one_of(_text, st.integers()),
        "title": _text,
        "url": st.none() | _text,
        "snippet": _text,
    }
)


@st.composite
def tool_responses(draw):
    return ToolResponse(
        response_type=draw(_names),
        agent_name=draw(_names),
        friendly_name=draw(_names),
        response=draw(_payload),
        display_response=draw(st.booleans()),
        display_as=draw(st.none() | st.lists(_segment, max_size=3)),
        content_chunks=draw(st.none() | st.lists(_chunk, max_size=3)),
        debug_info=draw(st.none() | st.dictionaries(_text, _json, max_size=3)),
        error_message=draw(st.none() | _text),
    )


_subclass_responses = st.one_of(
    st.builds(AccountNeeded, _names, _names, st.none() | _names, st.none() | _names),
    st.builds(GoogleAccountNeededResponse, _names, st.none() | _names),
    st.builds(ConnectGoogleAccount, _names),
    st.builds(ConnectPlaidAccountResponse, _names),
    st.builds(OpenWindowResponse, _names, _names, st.none() | _names),
    st.builds(OpenTabResponse, _names, _names),
    st.builds(
        ErrorResponse,
        _names,
        _text,
        st.none() | _names,
        st.none() | st.dictionaries(_text, _json, max_size=3),
    ),
    st.builds(TextResponse, _names, _text, st.none() | _names, st.booleans()),
    st.builds(JsonResponse, _names, st.lists(_json, max_size=3) | st.dictionaries(_text, _json)),
    st.builds(
        lambda a, n, m, d: FileResponse(a, n, m, data=d),
        _names,
        _names,
        _names,
        st.binary(max_size=64),
    ),
    st.builds(lambda a, n, m, u: FileResponse(a, n, m, url=u), _names, _names, _names, _names),
    st.builds(LinkResponse, _names, _names, st.none() | _text, st.none() | _text),
)


@settings(max_examples=200, deadline=None)
@given(tool_responses() | _subclass_responses)
def test_round_trip_property(response):
    data = response.to_dict(include_debug=True)
    wire = json.loads(json.dumps(data, allow_nan=False))
    rebuilt = ToolResponse.from_dict(wire)
    assert rebuilt.to_dict(include_debug=True) == data
    assert list(rebuilt.to_dict(include_debug=True)) == list(data)
    public = response.to_dict()
    assert "debug_info" not in public
    assert ToolResponse.from_dict(public).to_dict() == public
    if type(response) is not ToolResponse:
        assert type(rebuilt) is type(response)
        assert rebuilt == response
