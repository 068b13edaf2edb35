"""HTML email bodies as readable text or markdown. Pure; CSS is read with tinycss2.

Good enough for mail: paragraphs, line breaks, headings, lists, links, emphasis, quotes,
preformatted text and simple tables.

Only what a person reading the mail can see is kept. Hidden text is how a mail smuggles
instructions to an assistant, so text a mail client would not show never gets through:
``display:none``, ``visibility:hidden``, font sizes under 3px, text that is transparent,
faded out (opacity) or coloured like its background, boxes clipped to nothing or moved off
screen, the ``hidden`` attribute, elements never rendered (``<script>``, ``<style>``,
``<template>``, ``<head>``, ``<svg>``, ...), comments, and ``<style>`` rules that hide a class.
When unsure whether something shows, it is left out. What hides an element is decided in
:mod:`connectors.gmail.css_visibility` (colours in :mod:`connectors.gmail.css_colour`), the
``<style>`` rules are read in :mod:`connectors.gmail.stylesheets`; this module is the walk
and the public API.

The parser keeps a stack of open elements like a browser does (implied end tags, end tags
that do not match, formatting elements carried into the next paragraph), because a
mismatch there is exactly where hidden text would leak out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from html.parser import HTMLParser

from connectors.gmail.css_colour import parse_colour
from connectors.gmail.css_visibility import (
    Look,
    declarations,
    element_look,
    style_attribute,
    tiny_image,
)
from connectors.gmail.stylesheets import Compound, Rule, TooMuchStyle, style_rules

# parse_colour and declarations are imported from here by callers and tests.
__all__ = ["declarations", "html_to_markdown", "html_to_text", "parse_colour"]

_BLOCKS = frozenset(
    {
        "p",
        "div",
        "section",
        "article",
        "header",
        "footer",
        "table",
        "tr",
        "ul",
        "ol",
        "blockquote",
        "pre",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "hr",
        "center",
        "address",
        "figure",
    }
)
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_VOID = frozenset(
    {
        "area",
        "base",
        "basefont",
        "bgsound",
        "br",
        "col",
        "embed",
        "hr",
        "img",
        "image",
        "input",
        "keygen",
        "link",
        "meta",
        "param",
        "source",
        "track",
        "wbr",
    }
)
_EMPHASIS = {"strong": "**", "b": "**", "em": "_", "i": "_", "code": "`"}
_BREAK = "\x00"  # a paragraph break, resolved when the text is assembled

# Tree building, after the HTML standard ("in body" insertion mode), reduced to what decides
# which element a piece of text ends up in.
_FORMATTING = frozenset(
    {
        "a",
        "b",
        "big",
        "code",
        "em",
        "font",
        "i",
        "nobr",
        "s",
        "small",
        "strike",
        "strong",
        "tt",
        "u",
    }
)
_SPECIAL = frozenset(
    {
        "address",
        "applet",
        "area",
        "article",
        "aside",
        "base",
        "basefont",
        "bgsound",
        "blockquote",
        "body",
        "br",
        "button",
        "caption",
        "center",
        "col",
        "colgroup",
        "dd",
        "details",
        "dialog",
        "dir",
        "div",
        "dl",
        "dt",
        "embed",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "form",
        "frame",
        "frameset",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "head",
        "header",
        "hgroup",
        "hr",
        "html",
        "iframe",
        "img",
        "input",
        "keygen",
        "li",
        "link",
        "listing",
        "main",
        "marquee",
        "menu",
        "meta",
        "nav",
        "noembed",
        "noframes",
        "noscript",
        "object",
        "ol",
        "p",
        "param",
        "plaintext",
        "pre",
        "script",
        "search",
        "section",
        "select",
        "source",
        "style",
        "summary",
        "table",
        "tbody",
        "td",
        "template",
        "textarea",
        "tfoot",
        "th",
        "thead",
        "title",
        "tr",
        "track",
        "ul",
        "wbr",
        "xmp",
    }
)
_SCOPE = frozenset(
    {"applet", "caption", "html", "marquee", "object", "table", "td", "template", "th"}
)
_TABLE_SCOPE = frozenset({"html", "table", "template"})
_TABLE_PARTS = frozenset({"caption", "table", "tbody", "td", "tfoot", "th", "thead", "tr"})
_MARKER_TAGS = frozenset({"applet", "caption", "marquee", "object", "td", "template", "th"})
_CLOSES_P = frozenset(
    {
        "address",
        "article",
        "aside",
        "blockquote",
        "center",
        "dd",
        "details",
        "dialog",
        "dir",
        "div",
        "dl",
        "dt",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "form",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "header",
        "hgroup",
        "hr",
        "li",
        "listing",
        "main",
        "menu",
        "nav",
        "ol",
        "p",
        "pre",
        "search",
        "section",
        "summary",
        "ul",
        "xmp",
    }
)  # not <table>: quirks
_IN_HEAD = frozenset(
    {
        "base",
        "basefont",
        "bgsound",
        "link",
        "meta",
        "noscript",
        "script",
        "style",
        "template",
        "title",
    }
)
# A start tag closes the nearest open element of its group, searching no further than...
_IMPLIED: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "li": (frozenset({"li"}), _SPECIAL - {"address", "div", "p", "li"}),
    "dt": (frozenset({"dt", "dd"}), _SPECIAL - {"address", "div", "p", "dt", "dd"}),
    "dd": (frozenset({"dt", "dd"}), _SPECIAL - {"address", "div", "p", "dt", "dd"}),
    "td": (frozenset({"td", "th"}), frozenset({"tr"}) | _TABLE_SCOPE),
    "th": (frozenset({"td", "th"}), frozenset({"tr"}) | _TABLE_SCOPE),
    "tr": (frozenset({"tr"}), frozenset({"tbody", "thead", "tfoot"}) | _TABLE_SCOPE),
    "tbody": (frozenset({"tbody", "thead", "tfoot"}), _TABLE_SCOPE),
    "thead": (frozenset({"tbody", "thead", "tfoot"}), _TABLE_SCOPE),
    "tfoot": (frozenset({"tbody", "thead", "tfoot"}), _TABLE_SCOPE),
    "option": (frozenset({"option"}), frozenset({"select", "optgroup"}) | _SCOPE),
    "optgroup": (frozenset({"option", "optgroup"}), frozenset({"select"}) | _SCOPE),
    "a": (frozenset({"a"}), _SCOPE),
    "body": (frozenset({"head"}), frozenset()),
}

# Bounds on work, so a hostile mail cannot make the walk slow. Past _MAX_WORK steps (stack
# scans, selector checks) the rest of the mail is left out: hidden, as when unsure.
_MAX_WORK = 400_000  # ~1 s at worst on a slow core; ordinary mail needs a few thousand


# ----------------------------------------------------------------------------- the walk


@dataclass(eq=False)  # identity: the same tag can be open twice
class _Open:
    """An open element, and what was written when it opened (undone when it closes)."""

    tag: str
    attrs: dict[str, str]
    look: Look
    open: bool = True  # still on the stack of open elements
    drawn: bool = False  # breaks and structure were written: it is rendered
    shown: bool = False  # marks (bullets, emphasis, links) were written: its text shows
    link: bool = False


class _Walker(HTMLParser):
    def __init__(self, markdown: bool, rules: dict[str, list[Rule]]) -> None:
        super().__init__(convert_charrefs=True)
        self.markdown = markdown
        self.rules = rules
        self.out: list[str] = []
        self.stack: list[_Open] = []
        self.formatting: list[_Open | None] = []  # active formatting elements; None: marker
        self.pre_depth = 0
        self.lists: list[list[int]] = []  # one [counter] per open list; -1 for bullets
        self.links: list[tuple[str, list[str]]] = []  # (href, text parts) of open <a>
        self.quote_depth = 0
        self.work = 0

    @property
    def exhausted(self) -> bool:
        return self.work > _MAX_WORK

    # ------------------------------------------------------------------ output

    @property
    def look(self) -> Look:
        return self.stack[-1].look if self.stack else Look()

    def emit(self, text: str) -> None:
        if self.links:
            self.links[-1][1].append(text)
        else:
            self.out.append(text)

    # ------------------------------------------------------------------ tree building

    def _find(self, tags: Iterable[str], boundary: frozenset[str]) -> int | None:
        """Index of the nearest open element among ``tags``, unless a boundary comes first."""
        wanted = frozenset(tags)
        for index in range(len(self.stack) - 1, -1, -1):
            self.work += 1
            tag = self.stack[index].tag
            if tag in wanted:
                return index
            if tag in boundary:
                return None
        return None

    def _pop_to(self, index: int, closing: str | None = None) -> None:
        """Close every element from the top of the stack down to ``index``."""
        while len(self.stack) > index:
            entry = self.stack.pop()
            entry.open = False
            explicit = entry.tag == closing and len(self.stack) == index
            self._close(entry, at_end=False)
            if entry.tag in _MARKER_TAGS:
                while self.formatting and self.formatting.pop() is not None:
                    pass
            elif explicit:
                self.formatting = [kept for kept in self.formatting if kept is not entry]

    def _reconstruct(self) -> None:
        """Reopen formatting elements closed only implicitly, as browsers do: in
        ``<p><font style="font-size:0">x</p><p>y``, y is inside a new tiny <font>."""
        if not self.formatting or self.formatting[-1] is None or self.formatting[-1].open:
            return
        first = len(self.formatting) - 1
        while first > 0:
            before = self.formatting[first - 1]
            if before is None or before.open:
                break
            first -= 1
        for position in range(first, len(self.formatting)):
            old = self.formatting[position]
            assert old is not None
            self.work += 1
            if self.exhausted:
                return
            self.formatting[position] = self._open(old.tag, old.attrs)

    def _remember(self, entry: _Open) -> None:
        """Put a formatting element on the active list; as browsers do, at most three
        alike (same tag and attributes) since the last marker, so reopening stays cheap."""
        alike = []
        for index in range(len(self.formatting) - 1, -1, -1):
            other = self.formatting[index]
            self.work += 1
            if other is None:
                break
            if other.tag == entry.tag and other.attrs == entry.attrs:
                alike.append(index)
        if len(alike) >= 3:
            del self.formatting[alike[-1]]
        self.formatting.append(entry)

    def _open(self, tag: str, attrs: dict[str, str]) -> _Open:
        self.work += 3  # what making an element costs, next to one step of a scan
        css = self._css(tag, attrs)
        entry = _Open(tag, attrs, element_look(self.look, tag, attrs, css))
        self.stack.append(entry)
        self._start(entry)
        return entry

    def _css(self, tag: str, attrs: dict[str, str]) -> dict[str, str]:
        """The element's declarations after the cascade: rules by importance, origin,
        specificity and order; the style attribute over rules unless they are important."""
        found: list[tuple[tuple[bool, bool, tuple[int, int, int], int], str, str]] = []
        if self.rules:
            keys = ["*", tag, *(f".{c}" for c in attrs.get("class", "").lower().split())]
            if attrs.get("id"):
                keys.append(f"#{attrs['id'].lower()}")
            for key in dict.fromkeys(keys):
                for rule in self.rules.get(key, ()):
                    if self._matches(rule.compounds, tag, attrs):
                        found.extend(
                            ((important, False, rule.specificity, rule.order), name, value)
                            for name, value, important in rule.css
                        )
        for order, (name, value, important) in enumerate(style_attribute(attrs.get("style", ""))):
            found.append(((important, True, (0, 0, 0), order), name, value))
        found.sort(key=lambda item: item[0])
        return {name: value for _key, name, value in found}

    def _matches(self, compounds: list[Compound], tag: str, attrs: dict[str, str]) -> bool:
        self.work += 1
        if not compounds[-1].matches(tag, attrs):
            return False
        return self._ancestors(compounds, len(compounds) - 1, len(self.stack), {})

    def _ancestors(
        self, compounds: list[Compound], subject: int, below: int, memo: dict[tuple[int, int], bool]
    ) -> bool:
        """Whether ``compounds[:subject]`` match around an element whose ancestors are
        ``self.stack[:below]``, as ``compounds[subject].combinator`` relates them.

        Sibling combinators (+ ~) are not tracked and are taken as matching: hide more.
        """
        if subject == 0:
            return True
        if (subject, below) not in memo:
            combinator, wanted = compounds[subject].combinator, compounds[subject - 1]
            if combinator in "+~":
                found = self._ancestors(compounds, subject - 1, below, memo)
            else:
                found = False
                for index in [below - 1] if combinator == ">" else range(below - 1, -1, -1):
                    self.work += 1
                    entry = self.stack[index] if index >= 0 else None
                    if (
                        entry
                        and wanted.matches(entry.tag, entry.attrs)
                        and self._ancestors(compounds, subject - 1, index, memo)
                    ):
                        found = True
                        break
            memo[(subject, below)] = found
        return memo[(subject, below)]

    # ------------------------------------------------------------------ parser events

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.exhausted:
            return
        values = {name: value or "" for name, value in attrs}
        tag = "img" if tag == "image" else tag
        if self.stack and self.stack[-1].tag == "head" and tag not in _IN_HEAD:
            self._pop_to(len(self.stack) - 1)  # content in <head>: browsers move to <body>
        implied = _IMPLIED.get(tag)
        if implied:
            index = self._find(*implied)
            if index is not None:  # an <a> in an <a> ends it for good, as </a> would
                self._pop_to(index, closing=self.stack[index].tag)
        if tag in _CLOSES_P:
            index = self._find(("p",), _SCOPE | {"button"})
            if index is not None:
                self._pop_to(index)
        if tag in _HEADINGS and self.stack and self.stack[-1].tag in _HEADINGS:
            self._pop_to(len(self.stack) - 1)
        if tag not in _SPECIAL or tag in ("img", "br", "input"):
            self._reconstruct()
        if tag in _VOID:
            self._void(tag, values)
            return
        entry = self._open(tag, values)
        if tag in _FORMATTING:
            self._remember(entry)
        elif tag in _MARKER_TAGS:
            self.formatting.append(None)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)  # "<div/>" opens a div, as in browsers

    def handle_endtag(self, tag: str) -> None:
        if tag == "br":
            self.handle_starttag("br", [])
            return
        if tag in ("body", "html") or tag in _VOID or self.exhausted:
            return
        if tag in _TABLE_PARTS:
            index = self._find((tag,), _TABLE_SCOPE - {tag})
        elif tag == "li":
            index = self._find((tag,), _SCOPE | {"ol", "ul"})
        elif tag == "p":
            index = self._find((tag,), _SCOPE | {"button"})
        elif tag in _SPECIAL or tag in _FORMATTING:
            index = self._find((tag,), _SCOPE)
        else:  # any other end tag: no further than the nearest "special" element
            index = self._find((tag,), _SPECIAL)
        if index is not None:
            self._pop_to(index, closing=tag)
        elif tag == "p" and not self.look.removed:  # a stray </p> is an empty paragraph
            self.emit(_BREAK)
        elif tag in _FORMATTING:
            self.formatting = [
                entry for entry in self.formatting if entry is None or entry.tag != tag
            ]

    def handle_data(self, data: str) -> None:
        if self.exhausted:
            return
        if not data.strip():  # whitespace shows nothing: it need not reopen formatting
            if not self.look.removed:
                self.emit(data if self.pre_depth else " ")
            return
        if self.stack and self.stack[-1].tag == "head":
            self._pop_to(len(self.stack) - 1)
        self._reconstruct()
        if self.look.hidden:
            return
        text = data if self.pre_depth else re.sub(r"\s+", " ", data)
        if self.quote_depth and self.markdown and not self.pre_depth:
            text = text.replace("\n", "\n> ")
        self.emit(text)

    # ------------------------------------------------------------------ rendering

    def _void(self, tag: str, attrs: dict[str, str]) -> None:
        css = self._css(tag, attrs)
        look = element_look(self.look, tag, attrs, css)
        if look.removed:
            return
        if tag == "br":
            self.emit("\n")
        elif tag == "hr":
            self.emit(_BREAK)
            self.emit("---" if self.markdown else "")
            self.emit(_BREAK)
        elif (
            tag == "img"
            and attrs.get("alt", "").strip()
            and not look.hidden
            and not tiny_image(attrs, css)
        ):
            self.emit(attrs["alt"].strip())

    def _start(self, entry: _Open) -> None:
        tag, look = entry.tag, entry.look
        if look.removed:
            return
        entry.drawn = True
        entry.shown = not look.hidden
        if tag in _BLOCKS and not (tag in ("ul", "ol") and self.lists):  # nested lists: tight
            self.emit(_BREAK)
        if tag in _HEADINGS and self.markdown and entry.shown:
            self.emit("#" * int(tag[1]) + " ")
        elif tag in ("ul", "ol"):
            self.lists.append([0 if tag == "ol" else -1])
        elif tag == "li":
            counter = self.lists[-1] if self.lists else [-1]
            indent = "  " * max(0, len(self.lists) - 1)
            if counter[0] >= 0:
                counter[0] += 1
            marker = f"{counter[0]}. " if counter[0] >= 0 else "- "
            self.emit(f"\n{indent}{marker if entry.shown else ''}")
        elif tag == "a" and entry.shown:
            entry.link = True
            self.links.append((entry.attrs.get("href", "").strip(), []))
        elif tag in _EMPHASIS and self.markdown and entry.shown:
            self.emit(_EMPHASIS[tag])
        elif tag == "pre":
            self.pre_depth += 1
            if self.markdown:
                self.emit("```\n")
        elif tag == "blockquote":
            self.quote_depth += 1
            if self.markdown:
                self.emit("> ")
        elif tag in ("td", "th"):
            self.emit(" | " if self.markdown else " ")

    def _close(self, entry: _Open, at_end: bool) -> None:
        if not entry.drawn:
            return
        tag = entry.tag
        if entry.link and self.links:
            href, parts = self.links.pop()
            text = " ".join("".join(parts).split())
            self.emit(text if at_end else self._link(text, href))  # unclosed <a>: its text
        elif tag in _EMPHASIS and self.markdown and entry.shown:
            self.emit(_EMPHASIS[tag])
        elif tag in ("ul", "ol") and self.lists:
            self.lists.pop()
            if not self.lists:
                self.emit(_BREAK)
        elif tag == "pre":
            self.pre_depth = max(0, self.pre_depth - 1)
            if self.markdown:
                self.emit("\n```")
            self.emit(_BREAK)
        elif tag == "blockquote":
            self.quote_depth = max(0, self.quote_depth - 1)
            self.emit(_BREAK)
        elif tag in _BLOCKS:
            self.emit(_BREAK)

    def finish(self) -> None:
        """End of input: drop an unfinished tag or comment (browsers never show one), then
        close what is still open."""
        if re.match(r"<[a-zA-Z!/?]", self.rawdata):
            self.rawdata = ""
        self.close()
        while self.stack:
            self._close(self.stack.pop(), at_end=True)

    def _link(self, text: str, href: str) -> str:
        if not href.lower().startswith(("http://", "https://", "mailto:")):
            return text
        shown = href.removeprefix("mailto:")
        if self.markdown:
            return f"[{text or shown}]({href})"
        return text if not text or text == shown or text == href else f"{text} ({shown})"


def _assemble(parts: list[str]) -> str:
    text = "".join(parts).replace(_BREAK, "\n\n")
    lines = [
        line.strip() if not line.startswith("  ") else line.rstrip() for line in text.split("\n")
    ]
    text = "\n".join(lines)
    text = re.sub(r"\n{3,}", "\n\n", text)
    text = re.sub(r"\| (?:\| )+", "| ", text)
    return text.strip()


# What the model reads of a mail whose styles are too large to tell what they hide.
UNREADABLE_STYLES = (
    "[This email's styles are too large to tell which of its text is hidden, "
    "so its text is not shown.]"
)


def _convert(html: str, markdown: bool) -> str:
    try:
        rules = style_rules(html) if "<style" in html.lower() else {}
    except TooMuchStyle:
        return UNREADABLE_STYLES
    walker = _Walker(markdown, rules)
    walker.feed(html)
    walker.finish()
    return _assemble(walker.out)


def html_to_text(html: str) -> str:
    return _convert(html, markdown=False)


def html_to_markdown(html: str) -> str:
    return _convert(html, markdown=True)
