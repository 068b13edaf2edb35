"""HTML email bodies as readable text or markdown. Pure, standard library only.

Good enough for mail: paragraphs, line breaks, headings, lists, links, emphasis, quotes,
preformatted text and simple tables.

Only what a person reading the mail can see is kept. Hidden text is how a mail smuggles
instructions to an assistant, so text a mail client would not show never gets through:
``display:none``, ``visibility:hidden``, font sizes under 3px, text that is transparent,
faded out (opacity) or coloured like its background, boxes clipped to nothing or moved off
screen, the ``hidden`` attribute, elements never rendered (``<script>``, ``<style>``,
``<template>``, ``<head>``, ``<svg>``, ...), comments, and ``<style>`` rules that hide a class.
When unsure whether something shows, it is left out.

The parser keeps a stack of open elements like a browser does (implied end tags, end tags
that do not match, formatting elements carried into the next paragraph), because a
mismatch there is exactly where hidden text would leak out.
"""

from __future__ import annotations

import colorsys
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from html.parser import HTMLParser

_BLOCKS = frozenset({"p", "div", "section", "article", "header", "footer", "table", "tr",
                     "ul", "ol", "blockquote", "pre", "h1", "h2", "h3", "h4", "h5", "h6",
                     "hr", "center", "address", "figure"})
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_VOID = frozenset({"area", "base", "basefont", "bgsound", "br", "col", "embed", "hr", "img",
                   "image", "input", "keygen", "link", "meta", "param", "source", "track",
                   "wbr"})
# Never rendered, nor anything inside them.
_UNRENDERED = frozenset({"applet", "audio", "canvas", "datalist", "frameset", "head",
                         "iframe", "noembed", "noframes", "noscript", "object", "rp",
                         "script", "style", "svg", "template", "title", "video"})
_EMPHASIS = {"strong": "**", "b": "**", "em": "_", "i": "_", "code": "`"}
_BREAK = "\x00"  # a paragraph break, resolved when the text is assembled

# Tree building, after the HTML standard ("in body" insertion mode), reduced to what decides
# which element a piece of text ends up in.
_FORMATTING = frozenset({"a", "b", "big", "code", "em", "font", "i", "nobr", "s", "small",
                         "strike", "strong", "tt", "u"})
_SPECIAL = frozenset({
    "address", "applet", "area", "article", "aside", "base", "basefont", "bgsound",
    "blockquote", "body", "br", "button", "caption", "center", "col", "colgroup", "dd",
    "details", "dialog", "dir", "div", "dl", "dt", "embed", "fieldset", "figcaption",
    "figure", "footer", "form", "frame", "frameset", "h1", "h2", "h3", "h4", "h5", "h6",
    "head", "header", "hgroup", "hr", "html", "iframe", "img", "input", "keygen", "li",
    "link", "listing", "main", "marquee", "menu", "meta", "nav", "noembed", "noframes",
    "noscript", "object", "ol", "p", "param", "plaintext", "pre", "script", "search",
    "section", "select", "source", "style", "summary", "table", "tbody", "td", "template",
    "textarea", "tfoot", "th", "thead", "title", "tr", "track", "ul", "wbr", "xmp"})
_SCOPE = frozenset({"applet", "caption", "html", "marquee", "object", "table", "td",
                    "template", "th"})
_TABLE_SCOPE = frozenset({"html", "table", "template"})
_TABLE_PARTS = frozenset({"caption", "table", "tbody", "td", "tfoot", "th", "thead", "tr"})
_MARKER_TAGS = frozenset({"applet", "caption", "marquee", "object", "td", "template", "th"})
_CLOSES_P = frozenset({
    "address", "article", "aside", "blockquote", "center", "dd", "details", "dialog", "dir",
    "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2",
    "h3", "h4", "h5", "h6", "header", "hgroup", "hr", "li", "listing", "main", "menu", "nav",
    "ol", "p", "pre", "search", "section", "summary", "ul", "xmp"})  # not <table>: quirks
_IN_HEAD = frozenset({"base", "basefont", "bgsound", "link", "meta", "noscript", "script",
                      "style", "template", "title"})
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

# ----------------------------------------------------------------------------- CSS values

_MIN_FONT_PX = 3.0  # smaller text is a row of dots at best
_MIN_ALPHA = 0.1  # fainter text (opacity, colour alpha) cannot be read
_SAME_COLOUR = 16  # text this close to its background (per RGB channel) cannot be seen
_FAR_PX = 1000.0  # boxes moved this far are off screen
_VIEWPORT = (800.0, 700.0)  # the window @media rules are judged for: a desktop mail reader
# Bounds on work, so a hostile mail cannot make the walk slow. Past _MAX_WORK steps (stack
# scans, selector checks) the rest of the mail is left out: hidden, as when unsure.
_MAX_WORK = 3_000_000
_MAX_NESTING = 8  # @media inside @media...
_MAX_COMPOUNDS = 16  # "a b c d ..." selectors
_WHITE = (255.0, 255.0, 255.0)
_LINK_BLUE = (0.0, 0.0, 238.0)

Colour = tuple[float, float, float, float]  # r, g, b in 0-255, alpha in 0-1

_NAMED: dict[str, tuple[int, int, int]] = {
    "black": (0, 0, 0), "white": (255, 255, 255), "red": (255, 0, 0), "green": (0, 128, 0),
    "blue": (0, 0, 255), "gray": (128, 128, 128), "grey": (128, 128, 128),
    "silver": (192, 192, 192), "yellow": (255, 255, 0), "orange": (255, 165, 0),
    "purple": (128, 0, 128), "navy": (0, 0, 128), "maroon": (128, 0, 0),
    "olive": (128, 128, 0), "teal": (0, 128, 128), "aqua": (0, 255, 255),
    "cyan": (0, 255, 255), "fuchsia": (255, 0, 255), "magenta": (255, 0, 255),
    "lime": (0, 255, 0), "snow": (255, 250, 250), "ivory": (255, 255, 240),
    "whitesmoke": (245, 245, 245), "ghostwhite": (248, 248, 255),
    "floralwhite": (255, 250, 240), "seashell": (255, 245, 238), "linen": (250, 240, 230),
    "mintcream": (245, 255, 250), "azure": (240, 255, 255), "aliceblue": (240, 248, 255),
    "honeydew": (240, 255, 240), "lavenderblush": (255, 240, 245),
    "oldlace": (253, 245, 230), "cornsilk": (255, 248, 220),
    "lightyellow": (255, 255, 224), "beige": (245, 245, 220),
    "lightgray": (211, 211, 211), "lightgrey": (211, 211, 211),
    "gainsboro": (220, 220, 220), "darkgray": (169, 169, 169), "darkgrey": (169, 169, 169),
}
_FONT_KEYWORDS = {"xx-small": 9.0, "x-small": 10.0, "small": 13.0, "medium": 16.0,
                  "large": 18.0, "x-large": 24.0, "xx-large": 32.0, "xxx-large": 48.0,
                  "initial": 16.0}
_ABSOLUTE_PX = {"px": 1.0, "pt": 4 / 3, "pc": 16.0, "in": 96.0, "cm": 96 / 2.54,
                "mm": 96 / 25.4, "q": 96 / 101.6, "rem": 16.0,
                "vw": _VIEWPORT[0] / 100, "vh": _VIEWPORT[1] / 100,
                "vmin": min(_VIEWPORT) / 100, "vmax": max(_VIEWPORT) / 100}
_NUMBER = re.compile(r"([+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?)([a-z%]*)")
_SCALE_ZERO = re.compile(r"\bscale(?:x|y|3d)?\(\s*[+-]?0*\.?0*\s*[,)\s]")
_CSS_ESCAPE = re.compile(r"\\([0-9a-f]{1,6})[ \t\r\n\f]?|\\(.)", re.I | re.S)
_CSS_COMMENT = re.compile(r"/\*.*?(?:\*/|$)", re.S)


def _unescape_css(text: str) -> str:
    """CSS escapes read as the browser reads them: ``displ\\61y`` is ``display``."""

    def char(match: re.Match[str]) -> str:
        if match.group(2) is not None:
            return match.group(2)
        code = int(match.group(1), 16)
        return chr(code) if 0 < code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else "\ufffd"

    return _CSS_ESCAPE.sub(char, text) if "\\" in text else text


def declarations(style: str) -> list[tuple[str, str, bool]]:
    """``(property, value, important)`` of a style attribute or a rule's body, in order.

    Lower case, comments and escapes removed, whitespace collapsed, ``!important`` noted.
    """
    text = _unescape_css(_CSS_COMMENT.sub(" ", style)).lower()
    found = []
    for part in text.split(";"):
        name, colon, value = part.partition(":")
        name = name.strip()
        if not colon or not name:
            continue
        value, bang, rest = value.partition("!")
        important = bool(bang) and rest.strip() == "important"
        found.append((name, " ".join(value.split()), important))
    return found


def _number(value: str) -> tuple[float, str] | None:
    match = _NUMBER.fullmatch(value.strip())
    return (float(match.group(1)), match.group(2)) if match else None


def _px(value: str) -> float | None:
    """An absolute length in pixels; a bare number is pixels, as in quirks mode."""
    parsed = _number(value)
    if parsed is None:
        return None
    amount, unit = parsed
    if not unit:
        return amount
    return amount * _ABSOLUTE_PX[unit] if unit in _ABSOLUTE_PX else None


def _is_tiny(value: str) -> bool:
    """A width or height of at most one pixel: zero in any unit, or e.g. 1px or 0.75pt."""
    parsed = _number(value)
    if parsed is not None and parsed[0] <= 0:
        return True
    pixels = _px(value)
    return pixels is not None and pixels <= 1.0


def _font_px(value: str, parent: float) -> float:
    """The computed font size for ``font-size: value`` under a parent of ``parent`` px."""
    if value in _FONT_KEYWORDS:
        return _FONT_KEYWORDS[value]
    if value in ("smaller", "larger"):
        return parent * (0.83 if value == "smaller" else 1.2)
    value = value.removeprefix("calc(").removesuffix(")")
    parsed = _number(value)
    if parsed is None:
        return parent  # inherit, unset, or a value the browser would ignore
    amount, unit = parsed
    if amount < 0:
        return parent  # invalid
    if unit in ("em", "%", "ex", "ch"):
        return amount * parent * {"em": 1.0, "%": 0.01, "ex": 0.5, "ch": 0.5}[unit]
    pixels = _px(value)
    return parent if pixels is None else pixels


def _alpha(value: str) -> float | None:
    parsed = _number(value)
    if parsed is None:
        return None
    amount, unit = parsed
    amount = amount / 100 if unit == "%" else amount
    return min(max(amount, 0.0), 1.0) if unit in ("", "%") else None


def parse_colour(value: str) -> Colour | None:
    """A CSS colour as ``(r, g, b, alpha)``; None when unknown (then it is not judged)."""
    value = value.strip().lower()
    if value == "transparent":
        return (0.0, 0.0, 0.0, 0.0)
    if value in _NAMED:
        red, green, blue = _NAMED[value]
        return (float(red), float(green), float(blue), 1.0)
    if re.fullmatch(r"#?[0-9a-f]{3,8}", value) and len(value.lstrip("#")) in (3, 4, 6, 8):
        digits = value.lstrip("#")
        if len(digits) <= 4:
            digits = "".join(d * 2 for d in digits)
        channels = [int(digits[i:i + 2], 16) for i in range(0, len(digits), 2)]
        alpha = channels[3] / 255 if len(channels) == 4 else 1.0
        return (float(channels[0]), float(channels[1]), float(channels[2]), alpha)
    match = re.fullmatch(r"(rgba?|hsla?)\((.*)\)", value)
    if not match:
        return None
    args = [arg for arg in re.split(r"[\s,/]+", match.group(2).strip()) if arg]
    if len(args) not in (3, 4):
        return None
    alpha = _alpha(args[3]) if len(args) == 4 else 1.0
    if alpha is None:
        return None
    if match.group(1).startswith("rgb"):
        rgb = [_channel(arg) for arg in args[:3]]
        if any(c is None for c in rgb):
            return None
        return (rgb[0], rgb[1], rgb[2], alpha)  # type: ignore[return-value]
    hue, sat, light = (_number(arg) for arg in args[:3])
    if hue is None or sat is None or light is None:
        return None
    red, green, blue = colorsys.hls_to_rgb((hue[0] % 360) / 360, light[0] / 100, sat[0] / 100)
    return (red * 255, green * 255, blue * 255, alpha)


def _channel(value: str) -> float | None:
    parsed = _number(value)
    if parsed is None or parsed[1] not in ("", "%"):
        return None
    amount = parsed[0] * 2.55 if parsed[1] == "%" else parsed[0]
    return min(max(amount, 0.0), 255.0)


def _background(value: str) -> tuple[float, float, float] | None | bool:
    """What a ``background`` value puts behind text: a colour, None (unknown: an image or a
    gradient), or False (nothing: the parent's background shows through)."""
    if "url(" in value or "gradient(" in value or "image-set(" in value:
        return None
    for token in re.findall(r"#[0-9a-f]+|[a-z]+\([^)]*\)|[a-z]+", value):
        colour = parse_colour(token)
        if colour is not None:
            if colour[3] >= 1 - _MIN_ALPHA:
                return colour[:3]
            return None if colour[3] > _MIN_ALPHA else False
    return False


# ----------------------------------------------------------------------------- looks

@dataclass(frozen=True)
class _Look:
    """What decides whether text inside an element can be seen, as inherited so far."""

    removed: bool = False  # not rendered at all (display:none...), whatever is inside
    font_px: float = 16.0
    opacity: float = 1.0  # multiplied down the tree: a child cannot undo it
    colour: Colour | None = (0.0, 0.0, 0.0, 1.0)  # None: unknown (e.g. gradient text)
    invisible: bool = False  # visibility:hidden (a child can undo it)
    background: tuple[float, float, float] | None = _WHITE  # None: unknown (an image)

    @property
    def hidden(self) -> bool:
        if self.removed or self.invisible:
            return True
        if self.font_px < _MIN_FONT_PX or self.opacity < _MIN_ALPHA:
            return True
        if self.colour is None:
            return False
        if self.colour[3] < _MIN_ALPHA:
            return True
        return self.background is not None and max(
            abs(a - b) for a, b in zip(self.colour[:3], self.background, strict=True)
        ) <= _SAME_COLOUR


def _hides_box(css: dict[str, str]) -> bool:
    """Whether these declarations make the element and all inside it invisible."""
    if css.get("display") == "none" or css.get("content-visibility") == "hidden":
        return True
    if css.get("mso-hide") == "all":  # Outlook's own display:none
        return True
    overflow = css.get("overflow", "").split()
    clip_x = css.get("overflow-x", overflow[0] if overflow else "")
    clip_y = css.get("overflow-y", overflow[-1] if overflow else "")
    if clip_y in ("hidden", "clip") and any(_is_tiny(css.get(p, "")) for p in
                                             ("height", "max-height")):
        return True
    if clip_x in ("hidden", "clip") and any(_is_tiny(css.get(p, "")) for p in
                                             ("width", "max-width")):
        return True
    if _SCALE_ZERO.search(css.get("transform", "")):
        return True
    indent = _px(css.get("text-indent", ""))
    if indent is not None and indent <= -_FAR_PX:
        return True
    if css.get("position") in ("absolute", "fixed"):
        offsets = (_px(css.get(side, "")) for side in ("left", "top", "right", "bottom"))
        if any(offset is not None and abs(offset) >= _FAR_PX for offset in offsets):
            return True
    clip = re.fullmatch(r"rect\((.*)\)", css.get("clip", ""))
    if clip and all(_is_tiny(edge) or edge == "auto" for edge in
                    re.split(r"[\s,]+", clip.group(1).strip())):
        return True
    inset = re.match(r"inset\(\s*(\d+(?:\.\d+)?)%", css.get("clip-path", ""))
    return bool(inset and float(inset.group(1)) >= 50) or css.get(
        "clip-path", "").startswith(("circle(0", "ellipse(0"))


_SPECIAL_LOOK_TAGS = frozenset({"a", "body", "dialog", "font", "input"}) | _UNRENDERED
_LOOK_ATTRS = frozenset({"background", "bgcolor", "hidden"})


def _look(parent: _Look, tag: str, attrs: dict[str, str], css: dict[str, str]) -> _Look:
    """The look of an element under ``parent``, from its tag, attributes and styles."""
    if not css and tag not in _SPECIAL_LOOK_TAGS and not _LOOK_ATTRS.intersection(attrs):
        return parent  # most elements: nothing of their own that could hide them
    removed = (parent.removed or tag in _UNRENDERED or "hidden" in attrs
               or (tag == "dialog" and "open" not in attrs)
               or (tag == "input" and attrs.get("type", "").lower() == "hidden")
               or _hides_box(css))
    if removed:
        return replace(parent, removed=True)
    font_px = _font_px(css["font-size"], parent.font_px) if "font-size" in css \
        else parent.font_px
    opacity = _alpha(css.get("opacity", "1"))
    opacity = parent.opacity * (1.0 if opacity is None else opacity)
    colour = (*_LINK_BLUE, 1.0) if tag == "a" and "href" in attrs else parent.colour
    legacy = attrs.get("color" if tag == "font" else "text" if tag == "body" else "", "")
    for value in (legacy, css.get("color", ""), css.get("-webkit-text-fill-color", "")):
        if value in ("inherit", "currentcolor", "unset"):
            colour = parent.colour
        elif (found := parse_colour(value) if value else None) is not None:
            colour = found
    background = parent.background
    for value in (attrs.get("bgcolor", ""), css.get("background", ""),
                  css.get("background-color", "")):
        behind = _background(value.lower()) if value else False
        if behind is not False:
            background = behind  # type: ignore[assignment]
    if attrs.get("background") or css.get("background-image", "none") != "none":
        background = None
    if "text" in (css.get("background-clip"), css.get("-webkit-background-clip")) \
            and background is None:
        colour = None  # gradient or image text: painted by the background, not judged
    visibility = css.get("visibility")
    invisible = parent.invisible if visibility not in ("hidden", "collapse", "visible") \
        else visibility != "visible"
    return _Look(False, font_px, opacity, colour, invisible, background)


def _tiny_image(attrs: dict[str, str], css: dict[str, str]) -> bool:
    """A 1x1 tracking pixel: its alt text is never seen."""
    return any(_is_tiny(attrs.get(name, "")) or _is_tiny(css.get(name, ""))
               for name in ("width", "height"))


# ----------------------------------------------------------------------------- style sheets

_STATEFUL = frozenset({"hover", "focus", "active", "visited", "focus-within", "focus-visible",
                       "target", "checked", "indeterminate", "default", "invalid", "valid"})
_SELECTOR_TOKEN = re.compile(r"""
    \s*(?P<comb>[>+~])\s* | (?P<space>\s+) | (?P<tag>\*|[a-z][\w-]*)
  | \#(?P<id>[\w-]+) | \.(?P<cls>[\w-]+)
  | \[\s*(?P<attr>[\w-]+)\s*(?:(?P<op>[~|^$*]?=)\s*(?P<val>"[^"]*"|'[^']*'|[^\]\s]*)
       \s*(?P<flag>[is])?\s*)?\]
  | (?P<colons>::?)(?P<pseudo>[\w-]+)(?:\((?P<arg>[^()]*)\))?
""", re.X)


@dataclass
class _Compound:
    """One compound selector (``div.note#x[data-a]``) and the combinator before it."""

    combinator: str = " "
    tag: str | None = None
    ids: list[str] = field(default_factory=list)
    classes: list[str] = field(default_factory=list)
    attrs: list[tuple[str, str, str, bool]] = field(default_factory=list)
    negations: list[_Compound] = field(default_factory=list)
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
    return {"": True, "=": value == wanted, "~=": wanted in value.split(),
            "|=": value == wanted or value.startswith(wanted + "-"),
            "^=": bool(wanted) and value.startswith(wanted),
            "$=": bool(wanted) and value.endswith(wanted),
            "*=": bool(wanted) and wanted in value}.get(op, False)


def _parse_selector(text: str) -> tuple[list[_Compound], tuple[int, int, int]] | None:
    """Compounds left to right and the specificity; None when unreadable."""
    compounds = [_Compound()]
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
                compounds.append(_Compound(combinator=groups["comb"] or " "))
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
            current.attrs.append((groups["attr"], groups["op"] or "",
                                  (groups["val"] or "").strip("\"'"), groups["flag"] == "i"))
        elif groups["pseudo"]:
            name = groups["pseudo"]
            if groups["colons"] == "::" or name in ("before", "after", "first-line",
                                                     "first-letter") or name in _STATEFUL:
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
class _Rule:
    compounds: list[_Compound]
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
            holds = all(_feature_holds(name.strip(), value.strip())
                        for name, value in re.findall(r"\(\s*([\w-]+)\s*:?\s*([^)]*)\)", one))
        if holds != negate:
            return True
    return False


def _feature_holds(name: str, value: str) -> bool:
    if name == "prefers-color-scheme":
        return value == "light"
    size = {"width": _VIEWPORT[0], "height": _VIEWPORT[1]}.get(
        name.removeprefix("min-").removeprefix("max-").removeprefix("device-"))
    if size is None:
        return True
    parsed = _number(value)
    if parsed is None:
        return True
    limit = parsed[0] * (16.0 if parsed[1] in ("em", "rem") else 1.0)
    if name.startswith("min-"):
        return size >= limit
    if name.startswith("max-"):
        return size <= limit
    return size == limit


def _blocks(sheet: str) -> Iterator[tuple[str, str]]:
    """Top-level ``(prelude, body)`` pairs of a style sheet; ``@import x;`` is skipped."""
    position = 0
    while position < len(sheet):
        brace = sheet.find("{", position)
        if brace < 0:
            return
        prelude = sheet[position:brace]
        if ";" in prelude and prelude.lstrip().startswith("@"):
            prelude = prelude[prelude.rfind(";") + 1:]
        depth, end = 1, brace + 1
        while end < len(sheet) and depth:
            depth += {"{": 1, "}": -1}.get(sheet[end], 0)
            end += 1
        yield prelude.strip(), sheet[brace + 1:end - 1]
        position = end


def _rules(sheet: str, counter: Iterator[int], depth: int = 0) -> Iterator[_Rule]:
    for prelude, body in _blocks(sheet):
        lowered = prelude.lower()
        if lowered.startswith(("@media", "@supports", "@layer", "@container", "@document")):
            if depth < _MAX_NESTING and (not lowered.startswith("@media")
                                         or _media_applies(lowered.removeprefix("@media"))):
                yield from _rules(body, counter, depth + 1)
        elif not lowered.startswith("@"):
            css = declarations(body)
            for selector in _unescape_css(prelude).lower().split(","):
                parsed = _parse_selector(selector)
                if parsed:
                    compounds = parsed[0]
                    if len(compounds) > _MAX_COMPOUNDS:  # its subject alone: hide more
                        compounds = [replace(compounds[-1], combinator=" ")]
                    yield _Rule(compounds, parsed[1], next(counter), css)


def _style_sheets(html: str) -> Iterator[tuple[str, str]]:
    """``(attributes, text)`` of each ``<style>`` element, read the way the parser does."""
    lowered = html.lower()
    position = 0
    while (start := lowered.find("<style", position)) >= 0:
        opened = lowered.find(">", start)
        closed = lowered.find("</style", opened)
        if opened < 0 or closed < 0:
            return
        if re.match(r"<style[\s/>]", lowered[start:start + 7]):
            yield html[start + 6:opened], html[opened + 1:closed]
        position = closed + 1


def style_rules(html: str) -> dict[str, list[_Rule]]:
    """The rules of the mail's ``<style>`` elements, keyed by what their subject must have:
    ``#id``, ``.class``, a tag name, or ``*``."""
    counter = iter(range(1 << 30))
    index: dict[str, list[_Rule]] = {}
    for attrs, sheet in _style_sheets(html):
        media = re.search(r"""media\s*=\s*["']?([^"'>]*)""", attrs, re.I)
        if media and not _media_applies(media.group(1)):
            continue
        for rule in _rules(_CSS_COMMENT.sub(" ", sheet), counter):
            subject = rule.compounds[-1]
            key = (f"#{subject.ids[0]}" if subject.ids else f".{subject.classes[0]}"
                   if subject.classes else subject.tag or "*")
            index.setdefault(key, []).append(rule)
    return index


# ----------------------------------------------------------------------------- the walk

@dataclass(eq=False)  # identity: the same tag can be open twice
class _Open:
    """An open element, and what was written when it opened (undone when it closes)."""

    tag: str
    attrs: dict[str, str]
    look: _Look
    open: bool = True  # still on the stack of open elements
    drawn: bool = False  # breaks and structure were written: it is rendered
    shown: bool = False  # marks (bullets, emphasis, links) were written: its text shows
    link: bool = False


class _Walker(HTMLParser):
    def __init__(self, markdown: bool, rules: dict[str, list[_Rule]]) -> None:
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
    def look(self) -> _Look:
        return self.stack[-1].look if self.stack else _Look()

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
        entry = _Open(tag, attrs, _look(self.look, tag, attrs, css))
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
                        found.extend(((important, False, rule.specificity, rule.order), name,
                                      value) for name, value, important in rule.css)
        for order, (name, value, important) in enumerate(declarations(attrs.get("style", ""))):
            found.append(((important, True, (0, 0, 0), order), name, value))
        found.sort(key=lambda item: item[0])
        return {name: value for _key, name, value in found}

    def _matches(self, compounds: list[_Compound], tag: str, attrs: dict[str, str]) -> bool:
        self.work += 1
        if not compounds[-1].matches(tag, attrs):
            return False
        return self._ancestors(compounds, len(compounds) - 1, len(self.stack), {})

    def _ancestors(self, compounds: list[_Compound], subject: int, below: int,
                   memo: dict[tuple[int, int], bool]) -> bool:
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
                for index in ([below - 1] if combinator == ">" else range(below - 1, -1, -1)):
                    self.work += 1
                    entry = self.stack[index] if index >= 0 else None
                    if entry and wanted.matches(entry.tag, entry.attrs) and \
                            self._ancestors(compounds, subject - 1, index, memo):
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
            self.formatting = [entry for entry in self.formatting
                               if entry is None or entry.tag != tag]

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
        look = _look(self.look, tag, attrs, css)
        if look.removed:
            return
        if tag == "br":
            self.emit("\n")
        elif tag == "hr":
            self.emit(_BREAK)
            self.emit("---" if self.markdown else "")
            self.emit(_BREAK)
        elif tag == "img" and attrs.get("alt", "").strip() and not look.hidden \
                and not _tiny_image(attrs, css):
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
    lines = [line.strip() if not line.startswith("  ") else line.rstrip()
             for line in text.split("\n")]
    text = "\n".join(lines)
    text = re.sub(r"\n{3,}", "\n\n", text)
    text = re.sub(r"\| (?:\| )+", "| ", text)
    return text.strip()


def _convert(html: str, markdown: bool) -> str:
    walker = _Walker(markdown, style_rules(html) if "<style" in html.lower() else {})
    walker.feed(html)
    walker.finish()
    return _assemble(walker.out)


def html_to_text(html: str) -> str:
    return _convert(html, markdown=False)


def html_to_markdown(html: str) -> str:
    return _convert(html, markdown=True)
