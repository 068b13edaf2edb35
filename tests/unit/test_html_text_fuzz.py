"""connectors.gmail.html_text under generated mail: hidden text never comes out, seen text does.

Each generated mail is a tree of elements, nested as HTML allows (so the browser's tree is
the markup's), holding unique words: ``seen<n>`` where a mail client shows the word and
``hidden<n>`` where one of the policy's techniques hides it, or an ancestor's does. The
techniques are those of the policy in html_text: inline styles, ``<style>`` rules on a class,
an id or an attribute (``!important`` beating an inline style), the ``hidden`` attribute,
elements never rendered, and comments; rules that do not apply to a desktop reader at rest
(mobile-only, print, dark mode, ``:hover``) hide nothing. Nothing generated can undo a
parent's hiding (no ``visibility:visible``, no font size of its own, and only colours that
cannot be read on the near-white backgrounds generated), so the expected words follow from
the tree alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import count

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from connectors.gmail.html_text import html_to_markdown, html_to_text

# Declarations that hide an element and everything in it (as the policy reads them).
HIDING_STYLES = [
    "display:none",
    "DISPLAY : None",
    "visibility:hidden",
    "visibility:collapse",
    "font-size:0",
    "font-size:1px",
    "font-size:0.5pt",
    "opacity:0",
    "opacity:0.05",
    "color:transparent",
    "color:rgba(0,0,0,0)",
    "color:#ffffff",
    "color:white",
    # Coloured like its background. Every background here is near white, so that a colour
    # a child takes from this list hides it too (white on dark blue would show).
    "color:#f0f0f0;background-color:#f4f4f4",
    "color:#fff;background:#fafafa",
    "max-height:0;overflow:hidden",
    "height:0px;overflow:hidden",
    "width:0;overflow-x:hidden",
    "position:absolute;left:-9999px",
    "position:fixed;top:-5000px",
    "text-indent:-9999px",
    "transform:scale(0)",
    "clip-path:inset(50%)",
    "position:absolute;clip:rect(0 0 0 0)",
    "mso-hide:all",
    "content-visibility:hidden",
    "displ\\61y:none",
    "display:/* x */none",
]
# Declarations that hide nothing.
HARMLESS_STYLES = [
    "",
    "margin:0;padding:4px",
    "font-family:Arial,sans-serif",
    "height:0",  # no clipping: the text overflows and shows
    "display:block",
]
# Elements never rendered, and how each holds text.
UNRENDERED = ["template", "noscript", "object", "iframe", "svg", "dialog", "script", "title"]
BLOCKS = ["div", "section", "blockquote", "td", "li"]
INLINES = ["span", "b", "em", "i", "font", "strong", "u"]


@dataclass
class Sheet:
    """The mail's ``<style>`` rules, gathered while its elements are generated."""

    rules: list[str] = field(default_factory=list)
    names: count[int] = field(default_factory=count)

    def rule(self, selector_of: str, declarations: str, wrap: str) -> str:
        """A new rule for a fresh class, id or attribute; the attribute text that selects it."""
        n = next(self.names)
        selector, attribute = {
            "class": (f".k{n}", f'class="x k{n}"'),
            "id": (f"#k{n}", f'id="k{n}"'),
            "attr": (f"[data-k{n}]", f"data-k{n}"),
        }[selector_of]
        body = f"{selector}{{{declarations}}}"
        self.rules.append(wrap.replace("{}", body))
        return attribute


@dataclass
class Words:
    counter: count[int] = field(default_factory=count)
    seen: list[str] = field(default_factory=list)
    hidden: list[str] = field(default_factory=list)

    def word(self, shown: bool) -> str:
        name = f"{'seen' if shown else 'hidden'}{next(self.counter)}"
        (self.seen if shown else self.hidden).append(name)
        return name


# Wrappers for a rule: those that apply to a desktop reader, and those that do not.
APPLYING = ["{}", "@media screen { {} }", "@media (min-width: 1px) { {} }"]
NOT_APPLYING = [
    "@media only screen and (max-width:600px) { {} }",
    "@media print { {} }",
    "@media (prefers-color-scheme: dark) { {} }",
]


@st.composite
def _attributes(draw: st.DrawFn, sheet: Sheet, inline: bool) -> tuple[str, bool]:
    """An element's attributes, and whether they hide it."""
    how = draw(st.sampled_from(["none", "style", "rule", "important", "decoy", "attribute"]))
    if how == "style":
        hides = draw(st.booleans())
        style = draw(st.sampled_from(HIDING_STYLES if hides else HARMLESS_STYLES))
        return f'style="{style}"', hides
    if how == "rule":
        style = draw(st.sampled_from(HIDING_STYLES))
        selector_of = draw(st.sampled_from(["class", "id", "attr"]))
        return sheet.rule(selector_of, style, draw(st.sampled_from(APPLYING))), True
    if how == "important":  # a rule's !important beats the element's own style
        attribute = sheet.rule("class", "display:none !important", "{}")
        return f'{attribute} style="display:block"', True
    if how == "decoy":  # a rule that does not apply here: it hides nothing
        style = draw(st.sampled_from(HIDING_STYLES))
        if draw(st.booleans()):
            n = next(sheet.names)
            sheet.rules.append(f".k{n}:hover{{{style}}}")
            return f'class="k{n}"', False
        wrap = draw(st.sampled_from(NOT_APPLYING))
        return sheet.rule("class", style, wrap), False
    if how == "attribute" and not inline:
        return "hidden", True
    return "", False


def _element(draw: st.DrawFn, sheet: Sheet, words: Words, shown: bool, depth: int) -> str:
    """One element (or a comment) and its content, as markup."""
    kind = draw(st.sampled_from(["block", "inline", "p", "unrendered", "comment", "table"]))
    if kind == "comment":
        return f"<!-- {words.word(False)} <p>{words.word(False)}</p> -->"
    if kind == "unrendered":
        tag = draw(st.sampled_from(UNRENDERED))
        inner = words.word(False)
        if tag == "svg":
            return f"<svg><text>{inner}</text></svg>"
        if tag == "script":
            return f"<script>var {inner} = 1;</script>"
        return f"<{tag}>{inner}</{tag}>"
    inline = kind in ("inline", "p")
    attributes, hides = draw(_attributes(sheet, inline))
    inner_shown = shown and not hides
    content = _content(draw, sheet, words, inner_shown, depth + 1, inline_only=inline)
    if kind == "table":
        return f"<table><tr><td {attributes}>{content}</td></tr></table>"
    if kind == "p":
        return f"<p {attributes}>{content}</p>"
    tag = draw(st.sampled_from(INLINES if kind == "inline" else BLOCKS))
    end = draw(st.sampled_from([f"</{tag}>", f"</{tag.upper()}>", ""]))
    if tag == "li":  # an end tag the parser implies before </ul>
        return f"<ul><li {attributes}>{content}{end}</ul>"
    if tag == "td":  # likewise before </tr>
        return f"<table><tbody><tr><td {attributes}>{content}{end}</tr></tbody></table>"
    return f"<{tag} {attributes}>{content}{end or f'</{tag}>'}"


def _content(
    draw: st.DrawFn, sheet: Sheet, words: Words, shown: bool, depth: int, inline_only: bool
) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        if depth >= 5 or draw(st.booleans()):
            parts.append(f" {words.word(shown)} ")
        elif inline_only:
            tag = draw(st.sampled_from(INLINES))
            attributes, hides = draw(_attributes(sheet, inline=True))
            inner = _content(draw, sheet, words, shown and not hides, depth + 1, True)
            parts.append(f"<{tag} {attributes}>{inner}</{tag}>")
        else:
            parts.append(_element(draw, sheet, words, shown, depth))
    return "".join(parts)


@st.composite
def mails(draw: st.DrawFn) -> tuple[str, Words]:
    sheet, words = Sheet(), Words()
    body = _content(draw, sheet, words, True, 0, inline_only=False)
    where = draw(st.sampled_from(["head", "body", "none"]))
    style = f"<style>{' '.join(sheet.rules)}</style>" if sheet.rules else ""
    if where == "head":
        return f"<html><head>{style}</head><body>{body}</body></html>", words
    if where == "body":
        return f"<html><body>{body}{style}</body></html>", words
    return f"{style}{body}", words


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mails())
def test_generated_mail_shows_exactly_its_seen_words(mail: tuple[str, Words]) -> None:
    html, words = mail
    for convert in (html_to_text, html_to_markdown):
        found = set(re.findall(r"\b(?:seen|hidden)\d+\b", convert(html)))
        leaked = found.intersection(words.hidden)
        assert not leaked, f"hidden words came out: {sorted(leaked)} of {html}"
        missing = set(words.seen) - found
        assert not missing, f"seen words were left out: {sorted(missing)} of {html}"
