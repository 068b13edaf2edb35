"""The mail's ``<style>`` rules: selectors, specificity and ``@media`` queries.

Pure; the sheets are read with tinycss2. ``<style>`` rules that hide a class are one of the
ways a mail hides text, so each element's declarations are taken after the cascade, as a
browser would.
Sheets are read for a desktop mail reader in light mode; what cannot be judged (sibling
combinators, most pseudo-classes) is taken as matching: when unsure, hide more.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from html.parser import HTMLParser

import tinycss2
from tinycss2.ast import AtRule, Node, QualifiedRule

from connectors.gmail.css_visibility import VIEWPORT, css_text, declarations, number

# Bounds on work, so a hostile mail cannot make the walk slow.
_MAX_NESTING = 8  # @media inside @media...
_MAX_COMPOUNDS = 16  # "a b c d ..." selectors


# ----------------------------------------------------------------------------- style sheets

_STATEFUL = frozenset(
    {
        "hover",
        "focus",
        "active",
        "visited",
        "focus-within",
        "focus-visible",
        "target",
        "checked",
        "indeterminate",
        "default",
        "invalid",
        "valid",
    }
)
_SELECTOR_TOKEN = re.compile(
    r"""
    \s*(?P<comb>[>+~])\s* | (?P<space>\s+) | (?P<tag>\*|[a-z][\w-]*)
  | \#(?P<id>[\w-]+) | \.(?P<cls>[\w-]+)
  | \[\s*(?P<attr>[\w-]+)\s*(?:(?P<op>[~|^$*]?=)\s*(?P<val>"[^"]*"|'[^']*'|[^\]\s]*)
       \s*(?P<flag>[is])?\s*)?\]
  | (?P<colons>::?)(?P<pseudo>[\w-]+)(?:\((?P<arg>[^()]*)\))?
""",
    re.X,
)


@dataclass
class Compound:
    """One compound selector (``div.note#x[data-a]``) and the combinator before it."""

    combinator: str = " "
    tag: str | None = None
    ids: list[str] = field(default_factory=list)
    classes: list[str] = field(default_factory=list)
    attrs: list[tuple[str, str, str, bool]] = field(default_factory=list)
    negations: list[Compound] = field(default_factory=list)
    never: bool = False  # a state (:hover) or a pseudo-element: not the element at rest

    def matches(self, tag: str, attrs: dict[str, str]) -> bool:
        if self.never or (self.tag not in (None, "*") and self.tag != tag):
            return False
        # Lower case on both sides: quirks mode, which most mail is in, ignores case.
        if any(attrs.get("id", "").lower() != wanted for wanted in self.ids):
            return False
        classes = attrs.get("class", "").lower().split()
        if any(wanted not in classes for wanted in self.classes):
            return False
        if not all(_attr_matches(attrs, *test) for test in self.attrs):
            return False
        return not any(negated.matches(tag, attrs) for negated in self.negations)


def _attr_matches(attrs: dict[str, str], name: str, op: str, wanted: str, fold: bool) -> bool:
    if name not in attrs:
        return False
    value = attrs[name]
    if fold:
        value, wanted = value.lower(), wanted.lower()
    return {
        "": True,
        "=": value == wanted,
        "~=": wanted in value.split(),
        "|=": value == wanted or value.startswith(wanted + "-"),
        "^=": bool(wanted) and value.startswith(wanted),
        "$=": bool(wanted) and value.endswith(wanted),
        "*=": bool(wanted) and wanted in value,
    }.get(op, False)


def _parse_selector(text: str) -> tuple[list[Compound], tuple[int, int, int]] | None:
    """Compounds left to right and the specificity; None when unreadable."""
    compounds = [Compound()]
    fresh = True
    position = 0
    text = text.strip()
    while position < len(text):
        match = _SELECTOR_TOKEN.match(text, position)
        if not match or match.end() == position:
            return None
        position = match.end()
        groups = match.groupdict()
        if groups["comb"] or groups["space"]:
            if not fresh:
                compounds.append(Compound(combinator=groups["comb"] or " "))
                fresh = True
            elif groups["comb"]:
                compounds[-1].combinator = groups["comb"]
            continue
        fresh = False
        current = compounds[-1]
        if groups["tag"]:
            current.tag = groups["tag"]
        elif groups["id"]:
            current.ids.append(groups["id"])
        elif groups["cls"]:
            current.classes.append(groups["cls"])
        elif groups["attr"]:
            current.attrs.append(
                (
                    groups["attr"],
                    groups["op"] or "",
                    (groups["val"] or "").strip("\"'"),
                    groups["flag"] == "i",
                )
            )
        elif groups["pseudo"]:
            name = groups["pseudo"]
            if (
                groups["colons"] == "::"
                or name in ("before", "after", "first-line", "first-letter")
                or name in _STATEFUL
            ):
                current.never = True
            elif name == "not" and groups["arg"]:
                inner = _parse_selector(groups["arg"])
                if inner and len(inner[0]) == 1:
                    current.negations.append(inner[0][0])
            # other pseudo-classes (:first-child...) are taken as matching: hide more
    if fresh and len(compounds) > 1:
        compounds.pop()
    ids = sum(len(c.ids) for c in compounds)
    classes = sum(len(c.classes) + len(c.attrs) for c in compounds)
    tags = sum(1 for c in compounds if c.tag not in (None, "*"))
    return compounds, (ids, classes, tags)


@dataclass
class Rule:
    """One selector of a rule: compounds, specificity, order in the sheets, declarations."""

    compounds: list[Compound]
    specificity: tuple[int, int, int]
    order: int
    css: list[tuple[str, str, bool]]


def _media_applies(query: str) -> bool:
    """Whether an ``@media`` query holds for a desktop mail reader in light mode."""
    for one in query.lower().split(","):
        words = one.split()
        negate = bool(words) and words[0] == "not"
        if any(word in ("print", "speech") for word in words):
            holds = False
        else:
            holds = all(
                _feature_holds(name.strip(), value.strip())
                for name, value in re.findall(r"\(\s*([\w-]+)\s*:?\s*([^)]*)\)", one)
            )
        if holds != negate:
            return True
    return False


def _feature_holds(name: str, value: str) -> bool:
    if name == "prefers-color-scheme":
        return value == "light"
    size = {"width": VIEWPORT[0], "height": VIEWPORT[1]}.get(
        name.removeprefix("min-").removeprefix("max-").removeprefix("device-")
    )
    if size is None:
        return True
    parsed = number(value)
    if parsed is None:
        return True
    limit = parsed[0] * (16.0 if parsed[1] in ("em", "rem") else 1.0)
    if name.startswith("min-"):
        return size >= limit
    if name.startswith("max-"):
        return size <= limit
    return size == limit


def _rules(rules: Iterable[Node], counter: Iterator[int], depth: int = 0) -> Iterator[Rule]:
    for rule in rules:
        if isinstance(rule, AtRule) and rule.content is not None:
            name = rule.lower_at_keyword
            query = css_text(rule.prelude)
            if (
                name in ("media", "supports", "layer", "container", "document")
                and depth < _MAX_NESTING
                and query is not None  # nested past reason: invalid, as in a browser
                and (name != "media" or _media_applies(query))
            ):
                inner = tinycss2.parse_rule_list(
                    rule.content, skip_comments=True, skip_whitespace=True
                )
                yield from _rules(inner, counter, depth + 1)
        elif isinstance(rule, QualifiedRule) and (selectors := css_text(rule.prelude)):
            css = declarations(rule.content)
            for selector in selectors.split(","):
                parsed = _parse_selector(selector)
                if parsed:
                    compounds = parsed[0]
                    if len(compounds) > _MAX_COMPOUNDS:  # its subject alone: hide more
                        compounds = [replace(compounds[-1], combinator=" ")]
                    yield Rule(compounds, parsed[1], next(counter), css)


# Elements whose content is text, never markup: a "<style>" inside one is no style sheet.
_TEXT_ONLY = frozenset(
    {"textarea", "title", "xmp", "iframe", "noembed", "noframes", "noscript", "plaintext"}
)


class _SheetFinder(HTMLParser):
    """The ``<style>`` elements as the tokenizer finds them: one inside a comment, an
    attribute value or a ``<textarea>`` is not one (its ``!important`` rules would else
    show text that the browser keeps hidden)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.sheets: list[tuple[str, list[str]]] = []  # (media attribute, text parts)
        self.inside = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "style":
            self.sheets.append((dict(attrs).get("media") or "", []))
            self.inside = True
        elif tag in _TEXT_ONLY:
            self.set_cdata_mode(tag)

    def handle_endtag(self, tag: str) -> None:
        self.inside = self.inside and tag != "style"

    def handle_data(self, data: str) -> None:
        if self.inside:
            self.sheets[-1][1].append(data)


def _style_sheets(html: str) -> Iterator[tuple[str, str]]:
    """``(media, text)`` of each ``<style>`` element, read the way the parser does."""
    finder = _SheetFinder()
    finder.feed(html)
    finder.close()
    for media, parts in finder.sheets:
        yield media, "".join(parts)


# More CSS than this in a mail's <style> elements is not read (TooMuchStyle): newsletters
# carry tens of kilobytes; reading a 1.6 MB sheet took about 4 s.
MAX_SHEETS_CHARS = 262_144


class TooMuchStyle(ValueError):
    """The mail's style sheets are over ``MAX_SHEETS_CHARS``: which of its text they hide
    cannot be known, so none of it may be taken as shown."""


def style_rules(html: str) -> dict[str, list[Rule]]:
    """The rules of the mail's ``<style>`` elements, keyed by what their subject must have:
    ``#id``, ``.class``, a tag name, or ``*``. Raises ``TooMuchStyle``."""
    counter = iter(range(1 << 30))
    index: dict[str, list[Rule]] = {}
    sheets = list(_style_sheets(html))
    if sum(len(sheet) for _, sheet in sheets) > MAX_SHEETS_CHARS:
        raise TooMuchStyle(f"over {MAX_SHEETS_CHARS:,} characters of style sheets")
    for media, sheet in sheets:
        if media and not _media_applies(media):
            continue
        sheet_rules = tinycss2.parse_stylesheet(sheet, skip_comments=True, skip_whitespace=True)
        for rule in _rules(sheet_rules, counter):
            subject = rule.compounds[-1]
            key = (
                f"#{subject.ids[0]}"
                if subject.ids
                else f".{subject.classes[0]}"
                if subject.classes
                else subject.tag or "*"
            )
            index.setdefault(key, []).append(rule)
    return index
