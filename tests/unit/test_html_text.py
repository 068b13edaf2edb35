"""connectors.gmail.html_text: only what a person reading the mail can see reaches the text.

Every hidden-text case holds the word HIDDEN where a mail client would show nothing and
the word SEEN where it shows text: the first must never come out, the second always must.
(Visible formatting itself is covered in tests/connectors/test_connector_parts.py.)
"""

from __future__ import annotations

import time

import pytest

from connectors.gmail.html_text import (
    UNREADABLE_STYLES,
    declarations,
    html_to_markdown,
    html_to_text,
    parse_colour,
)

HIDDEN_CASES: list[tuple[str, str]] = [
    # display:none, and the nested start tags that once ended the hidden part too early
    ("display_none_nested", '<div style="display:none"><p>a</p><p>HIDDEN</p></div><p>SEEN</p>'),
    (
        "display_none_deep",
        '<div style="display:none"><div><span><b>x</b></span></div>HIDDEN</div>SEEN',
    ),
    (
        "display_none_void_inside",
        '<div style="display:none">a<br>b<img src=x alt=HIDDEN><hr>HIDDEN</div>SEEN',
    ),
    (
        "display_none_unclosed_paragraphs",
        '<div style="display:none"><p>one<p>HIDDEN<li>HIDDEN</div>SEEN',
    ),
    # style parsing: case, spaces, !important, several declarations, comments, escapes
    ("style_case_and_spaces", '<div STYLE=" Display : NONE ">HIDDEN</div>SEEN'),
    ("style_important", '<div style="display:none !important">HIDDEN</div>SEEN'),
    ("style_important_spaced", '<div style="display: none ! IMPORTANT;">HIDDEN</div>SEEN'),
    (
        "style_important_beats_later",
        '<div style="display:none!important;display:block">HIDDEN</div>SEEN',
    ),
    ("style_several", '<div style="color:red;margin:0;display:none;">HIDDEN</div>SEEN'),
    ("style_comment", '<div style="display:/* x */none">HIDDEN</div>SEEN'),
    ("style_escape", '<div style="displ\\61y:none">HIDDEN</div>SEEN'),
    ("visibility_hidden", '<p style="visibility:hidden">HIDDEN</p><p>SEEN</p>'),
    ("visibility_collapse", '<p style="visibility: collapse">HIDDEN</p><p>SEEN</p>'),
    (
        "visibility_undone_by_child",
        '<div style="visibility:hidden">HIDDEN <span style="visibility:visible">SEEN</span></div>',
    ),
    # tiny text, in any unit, inherited, and relative sizes of nothing
    ("font_size_0", '<span style="font-size:0">HIDDEN</span>SEEN'),
    ("font_size_0px", '<span style="font-size:0px">HIDDEN</span>SEEN'),
    ("font_size_0em", '<span style="font-size:0em">HIDDEN</span>SEEN'),
    ("font_size_0_percent", '<span style="font-size:0%">HIDDEN</span>SEEN'),
    ("font_size_1px", '<span style="font-size:1px">HIDDEN</span>SEEN'),
    ("font_size_inherited", '<div style="font-size:0"><p><b>HIDDEN</b></p></div><p>SEEN</p>'),
    (
        "font_size_relative_to_zero",
        '<div style="font-size:0"><span style="font-size:2em">HIDDEN</span></div>SEEN',
    ),
    (
        "font_size_reset_by_child",
        '<div style="font-size:0">HIDDEN<span style="font-size:14px">SEEN</span></div>',
    ),
    # boxes of no size that clip what is in them
    ("max_height_0", '<div style="max-height:0;overflow:hidden">HIDDEN</div>SEEN'),
    ("height_0px", '<div style="height:0px; overflow: hidden">HIDDEN</div>SEEN'),
    ("width_0em", '<div style="width:0em;overflow:hidden">HIDDEN</div>SEEN'),
    ("max_width_0_clip", '<div style="max-width:0;overflow-x:clip">HIDDEN</div>SEEN'),
    ("one_pixel_box", '<div style="width:1px;height:1px;overflow:hidden">HIDDEN</div>SEEN'),
    (
        "preheader",
        '<div style="display:none;font-size:1px;color:#ffffff;line-height:1px;max-height:0px;'
        'max-width:0px;opacity:0;overflow:hidden;mso-hide:all;">HIDDEN</div><p>SEEN</p>',
    ),
    ("mso_hide", '<div style="mso-hide:all">HIDDEN</div>SEEN'),
    ("clip_rect", '<div style="position:absolute;clip:rect(0 0 0 0)">HIDDEN</div>SEEN'),
    ("clip_path", '<div style="clip-path:inset(50%)">HIDDEN</div>SEEN'),
    ("scale_0", '<div style="transform:scale(0)">HIDDEN</div>SEEN'),
    ("off_screen", '<div style="position:absolute;left:-9999px">HIDDEN</div>SEEN'),
    ("text_indent", '<div style="text-indent:-9999px">HIDDEN</div>SEEN'),
    # faded and transparent text
    ("opacity_0", '<span style="opacity:0">HIDDEN</span>SEEN'),
    ("opacity_0_percent", '<span style="opacity:0%">HIDDEN</span>SEEN'),
    ("opacity_multiplies", '<i style="opacity:.5"><b style="opacity:.1">HIDDEN</b></i>SEEN'),
    ("color_transparent", '<span style="color:transparent">HIDDEN</span>SEEN'),
    ("color_rgba_0", '<span style="color:rgba(0, 0, 0, 0)">HIDDEN</span>SEEN'),
    ("color_rgb_slash_0", '<span style="color:rgb(0 0 0 / 0%)">HIDDEN</span>SEEN'),
    ("color_hsla_0", '<span style="color:hsla(120,50%,50%,0.0)">HIDDEN</span>SEEN'),
    ("color_hex8_00", '<span style="color:#12345600">HIDDEN</span>SEEN'),
    ("color_hex4_0", '<span style="color:#1230">HIDDEN</span>SEEN'),
    (
        "text_fill_transparent",
        '<span style="-webkit-text-fill-color:transparent">HIDDEN</span>SEEN',
    ),
    ("white_on_white", '<span style="color:#fff">HIDDEN</span>SEEN'),
    ("same_as_background", '<td bgcolor="#336699"><font color="#336699">HIDDEN</font> SEEN</td>'),
    (
        "near_background",
        '<div style="background:#000"><p style="color:#050505">HIDDEN</p>'
        '<p style="color:#fff">SEEN</p></div>',
    ),
    ("white_link_on_white", '<a href="https://x.example" style="color:white">HIDDEN</a>SEEN'),
    # every CSS colour a browser knows: all named colours, CSS Color 4 spaces
    (
        "named_colour_near_background",
        '<div style="background:navy"><span style="color:darkblue">HIDDEN</span></div>SEEN',
    ),
    ("oklch_white", '<span style="color:oklch(100% 0 0)">HIDDEN</span>SEEN'),
    ("hwb_white", '<span style="color:hwb(0 100% 0%)">HIDDEN</span>SEEN'),
    ("color_function_white", '<span style="color:color(srgb 1 1 1)">HIDDEN</span>SEEN'),
    # attributes and elements that are never shown
    ("hidden_attribute", "<p hidden>HIDDEN</p><p>SEEN</p>"),
    ("hidden_attribute_nested", "<div hidden><p>a<p>HIDDEN</div><p>SEEN</p>"),
    ("input_hidden", '<input type="hidden" value="HIDDEN" name="HIDDEN">SEEN'),
    ("template", "<template><p>HIDDEN</p></template>SEEN"),
    ("script", "<script>var HIDDEN = 1;</script>SEEN"),
    ("style", "<style>.HIDDEN{}</style>SEEN"),
    (
        "head_title",
        "<html><head><title>HIDDEN</title><meta name=x content=HIDDEN></head>"
        "<body>SEEN</body></html>",
    ),
    ("noscript", "<noscript>HIDDEN</noscript>SEEN"),
    ("object", '<object data="x.swf"><p>HIDDEN</p></object>SEEN'),
    ("iframe", '<iframe src="https://x.example">HIDDEN</iframe>SEEN'),
    ("svg", "<svg><text>HIDDEN</text><title>HIDDEN</title></svg>SEEN"),
    ("closed_dialog", "<dialog>HIDDEN</dialog><dialog open>SEEN</dialog>"),
    ("tracking_pixel_alt", '<img src="p.gif" width="1" height="1" alt="HIDDEN">SEEN'),
    # comments
    ("comment", "<p>SEEN</p><!-- HIDDEN -->"),
    ("conditional_comment", "<!--[if mso]><p>HIDDEN</p><![endif]--><p>SEEN</p>"),
    ("comment_with_tags", "<!-- <div>HIDDEN</div> --><p>SEEN</p>"),
    ("unclosed_comment_at_end", "<p>SEEN</p><!-- HIDDEN"),
    ("unfinished_tag_at_end", '<p>SEEN</p><span title="HIDDEN'),
    # <style> rules that hide a class, an id, a descendant
    ("class_rule", '<style>.pre { display: none }</style><div class="pre">HIDDEN</div>SEEN'),
    ("class_rule_case", '<style>.Hide{DISPLAY:NONE}</style><p class="x hide">HIDDEN</p>SEEN'),
    (
        "id_rule_in_media_screen",
        '<style>@media screen { #x { visibility: hidden } }</style><p id="x">HIDDEN</p>SEEN',
    ),
    (
        "media_rule_that_always_holds",
        "<style>@media (min-width: 1px) { .h { font-size: 0 } }</style><p class=h>HIDDEN</p>SEEN",
    ),
    (
        "descendant_rule",
        "<style>.a .b{display:none}</style><div class=a><p class=b>HIDDEN</p></div>"
        "<p class=b>SEEN</p>",
    ),
    (
        "child_rule",
        "<style>div > span.c{opacity:0}</style><div><span class=c>HIDDEN</span>"
        "</div><p><span class=c>SEEN</span></p>",
    ),
    ("attribute_rule", "<style>[data-x]{display:none}</style><p data-x>HIDDEN</p>SEEN"),
    (
        "rule_important_beats_inline",
        '<style>.h{display:none!important}</style><p class=h style="display:block">HIDDEN</p>SEEN',
    ),
    (
        "style_in_a_comment_is_no_sheet",
        "<!-- <style>.x{display:block!important}</style> -->"
        '<div class="x" style="display:none">HIDDEN</div>SEEN',
    ),
    (
        "style_in_an_attribute_is_no_sheet",
        '<p title="<style>.x{display:block!important}</style>">SEEN</p>'
        '<div class="x" style="display:none">HIDDEN</div>',
    ),
    (
        "style_in_a_textarea_is_no_sheet",
        "<textarea><style>.x{visibility:visible!important}</style></textarea>"
        '<div class="x" style="visibility:hidden">HIDDEN</div>SEEN',
    ),
    (
        "id_rule_beats_later_class_rule",
        "<style>#h{display:none} .v{display:block}</style><p id=h class=v>HIDDEN</p>SEEN",
    ),
    # tree building: where a browser puts the text is what decides if it shows
    (
        "end_tag_of_a_span_cannot_close_a_div",
        '<span style="display:none"><div></span>HIDDEN</div></span><p>SEEN</p>',
    ),
    (
        "end_tag_stops_at_a_table_cell",
        '<div style="display:none"><table><tr><td></div>HIDDEN</td></tr></table></div>SEEN',
    ),
    (
        "formatting_carried_into_next_paragraph",
        '<p><font style="font-size:0">a</p><p>HIDDEN</p></font><p>SEEN</p>',
    ),
    ("self_closing_div_stays_open", '<div style="display:none"/>HIDDEN</div>SEEN'),
    ("unclosed_li", '<ul style="display:none"><li>HIDDEN<li>HIDDEN</ul><ul><li>SEEN</ul>'),
    ("unclosed_td", '<table><tr><td style="display:none">HIDDEN<td>SEEN</table>'),
    ("paragraph_closed_by_div", '<p style="display:none">HIDDEN<div>SEEN</div>'),
    ("misnested_formatting", '<b style="display:none"><div>HIDDEN</b>SEEN</div>'),
]


@pytest.mark.parametrize(
    "html", [case[1] for case in HIDDEN_CASES], ids=[case[0] for case in HIDDEN_CASES]
)
def test_hidden_text_never_comes_out_and_visible_text_does(html: str) -> None:
    for convert in (html_to_text, html_to_markdown):
        text = convert(html)
        assert "HIDDEN" not in text.upper()
        assert "SEEN" in text


VISIBLE_CASES: list[tuple[str, str, str]] = [
    ("aria_hidden_is_for_screen_readers", '<p aria-hidden="true">Logo text</p>', "Logo text"),
    ("zero_height_without_clipping_overflows", '<div style="height:0">Shown</div>', "Shown"),
    (
        "white_on_dark_cell",
        '<td bgcolor="#000000"><span style="color:#fff">Dark</span></td>',
        "Dark",
    ),
    (
        "white_on_dark_class",
        '<style>.dark{background-color:#111}</style><div class=dark style="color:#fff">On dark'
        "</div>",
        "On dark",
    ),
    (
        "white_on_background_image",
        '<td background="hero.jpg" style="color:#ffffff">Over the picture</td>',
        "Over the picture",
    ),
    (
        "gradient_text",
        '<h1 style="background:linear-gradient(red,blue);'
        '-webkit-background-clip:text;color:transparent">Sale</h1>',
        "Sale",
    ),
    (
        "link_in_white_text_is_blue",
        '<div style="color:#fff"><a href="https://x.example">Go</a></div>',
        "Go (https://x.example)",
    ),
    (
        "inline_block_columns",
        '<td style="font-size:0"><div style="display:inline-block;font-size:14px">Left</div> '
        '<div style="display:inline-block;font-size:14px">Right</div></td>',
        "Left",
    ),
    (
        "mobile_only_rule_does_not_hide_on_desktop",
        "<style>@media only screen and (max-width:600px){.m{display:none!important}}</style>"
        "<p class=m>Desktop</p>",
        "Desktop",
    ),
    (
        "print_rule_does_not_hide",
        "<style>@media print{p{display:none}}</style><p>Screen</p>",
        "Screen",
    ),
    ("hover_rule_does_not_hide", '<style>a:hover{opacity:0}</style><a href="#">Hover</a>', "Hover"),
    (
        "dark_mode_rule_does_not_hide",
        "<style>@media (prefers-color-scheme: dark){.light{display:none}}</style>"
        "<p class=light>Light</p>",
        "Light",
    ),
    ("content_after_head_without_body", "<html><head><title>t</title><p>Body text", "Body text"),
    ("paragraphs_without_end_tags", "<p>one<p>two<p>three", "one\n\ntwo\n\nthree"),
    ("list_items_without_end_tags", "<ul><li>a<li>b</ul>", "- a\n- b"),
    ("cells_without_end_tags", "<table><tr><td>a<td>b<tr><td>c</table>", "a b\n\nc"),
    ("stray_paragraph_end", "line one</p>line two", "line one\n\nline two"),
]


@pytest.mark.parametrize(
    ("html", "expected"),
    [case[1:] for case in VISIBLE_CASES],
    ids=[case[0] for case in VISIBLE_CASES],
)
def test_visible_text_is_kept(html: str, expected: str) -> None:
    assert expected in html_to_text(html)


def test_formatting_carried_into_the_next_paragraph_reads_well() -> None:
    html = "<p><b>bold</p><p>still bold</p>"
    assert html_to_text(html) == "bold\n\nstill bold"
    assert html_to_markdown(html) == "**bold**\n\n**still bold**"


@pytest.mark.parametrize(
    ("style", "expected"),
    [
        (
            "Display : None !important; COLOR:Red",
            [("display", "none", True), ("color", "red", False)],
        ),
        ("font-size:  0 ;;opacity:0/* c */", [("font-size", "0", False), ("opacity", "0", False)]),
        ("no colon; :x; display:none", [("display", "none", False)]),
        ("v\\69sibility:hidden", [("visibility", "hidden", False)]),
    ],
)
def test_declarations(style: str, expected: list[tuple[str, str, bool]]) -> None:
    assert declarations(style) == expected


@pytest.mark.parametrize(
    ("value", "alpha"),
    [
        ("transparent", 0.0),
        ("#fff", 1.0),
        ("#ffffff00", 0.0),
        ("#0000", 0.0),
        ("rgba(1,2,3,0.5)", 0.5),
        ("rgb(1 2 3 / 25%)", 0.25),
        ("hsla(0, 0%, 0%, 0)", 0.0),
        ("White", 1.0),
        ("notacolour", None),
        ("rgb(1,2)", None),
    ],
)
def test_parse_colour_alpha(value: str, alpha: float | None) -> None:
    colour = parse_colour(value)
    assert (colour[3] if colour else None) == alpha


@pytest.mark.parametrize(
    "html",
    [
        "<div>" * 100_000 + "x",
        "<style>"
        + "".join(f"div div div div div div .c{i}{{display:none}}" for i in range(3000))
        + "</style>"
        + "<div>" * 300
        + '<span class="c1">y</span>' * 1000,
        "".join(f"<p><b id={i}>" for i in range(20_000)) + "x",
        "<style>" * 50_000 + "x",
        '<p style="color:' + "(" * 100_000 + '">x</p><style>' + ":is(" * 100_000 + "{}</style>",
    ],
    ids=["deep", "many_selectors", "many_formatting_elements", "many_style_tags", "deep_css"],
)
def test_hostile_markup_cannot_make_it_slow(html: str) -> None:
    started = time.perf_counter()
    html_to_text(html)
    assert time.perf_counter() - started < 15


def test_a_style_attribute_too_long_to_read_hides_its_element() -> None:
    # Whatever it holds past the limit could hide the text: nothing of it is taken as shown.
    style = "color:black;" + "margin:0;" * 2_000
    out = html_to_text(f'<p>seen</p><p style="{style}">unread <b>inside</b></p>')
    assert "seen" in out and "unread" not in out and "inside" not in out
    assert "unread" in html_to_text('<p style="color:black;margin:0">unread</p>')


def test_style_sheets_too_large_to_read_show_none_of_the_text() -> None:
    sheets = "<style>" + ".a{color:red}" * 25_000 + ".b{display:none}</style>"
    html = sheets + '<p>seen</p><p class="b">hidden</p>'
    assert html_to_text(html) == UNREADABLE_STYLES
    assert html_to_markdown(html) == UNREADABLE_STYLES
    assert html_to_text("<style>.b{display:none}</style><p>seen</p>") == "seen"
