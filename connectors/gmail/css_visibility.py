"""Whether text inside an element can be seen: CSS values and the inherited look.

Pure; CSS is read with tinycss2 (tokens, declarations, CSS Color 4). Hidden text is how a
mail smuggles instructions to an assistant, so text a mail client would not show must never
get through: ``display:none``, ``visibility:hidden``, font sizes under 3px, text that is
transparent, faded out (opacity) or coloured like its background, boxes clipped to nothing
or moved off screen, the ``hidden`` attribute, and elements never rendered (``<script>``,
``<style>``, ``<template>``, ``<head>``, ``<svg>``, ...). This module reads the declarations
and attributes that decide it; a :class:`Look` is what an element inherits of them from its
parents.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import lru_cache

import tinycss2
from tinycss2.ast import Declaration, Node

from connectors.gmail.css_colour import Colour, parse_colour

# Never rendered, nor anything inside them.
_UNRENDERED = frozenset(
    {
        "applet",
        "audio",
        "canvas",
        "datalist",
        "frameset",
        "head",
        "iframe",
        "noembed",
        "noframes",
        "noscript",
        "object",
        "rp",
        "script",
        "style",
        "svg",
        "template",
        "title",
        "video",
    }
)

# ----------------------------------------------------------------------------- CSS values

_MIN_FONT_PX = 3.0  # smaller text is a row of dots at best
_MIN_ALPHA = 0.1  # fainter text (opacity, colour alpha) cannot be read
_SAME_COLOUR = 16  # text this close to its background (per RGB channel) cannot be seen
_FAR_PX = 1000.0  # boxes moved this far are off screen
VIEWPORT = (800.0, 700.0)  # the window @media rules are judged for: a desktop mail reader
_WHITE = (255.0, 255.0, 255.0)
_LINK_BLUE = (0.0, 0.0, 238.0)

_FONT_KEYWORDS = {
    "xx-small": 9.0,
    "x-small": 10.0,
    "small": 13.0,
    "medium": 16.0,
    "large": 18.0,
    "x-large": 24.0,
    "xx-large": 32.0,
    "xxx-large": 48.0,
    "initial": 16.0,
}
_ABSOLUTE_PX = {
    "px": 1.0,
    "pt": 4 / 3,
    "pc": 16.0,
    "in": 96.0,
    "cm": 96 / 2.54,
    "mm": 96 / 25.4,
    "q": 96 / 101.6,
    "rem": 16.0,
    "vw": VIEWPORT[0] / 100,
    "vh": VIEWPORT[1] / 100,
    "vmin": min(VIEWPORT) / 100,
    "vmax": max(VIEWPORT) / 100,
}
_NUMBER = re.compile(r"([+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?)([a-z%]*)")
_SCALE_ZERO = re.compile(r"\bscale(?:x|y|3d)?\(\s*[+-]?0*\.?0*\s*[,)\s]")


def declarations(style: str | Iterable[Node]) -> list[tuple[str, str, bool]]:
    """``(property, value, important)`` of a style attribute or a rule's body, in order.

    Read by tinycss2 as a browser reads them (comments, escapes, ``!important``, broken
    declarations skipped); names and values in lower case, whitespace collapsed.
    """
    found = []
    for item in tinycss2.parse_blocks_contents(style, skip_comments=True, skip_whitespace=True):
        if isinstance(item, Declaration) and (value := css_text(item.value)) is not None:
            found.append((item.lower_name, " ".join(value.split()), item.important))
    return found


# A style attribute longer than this is not read: its element is taken as hidden. Real
# mail's inline styles are a few hundred characters; reading 1 MB of one took 1.9 s.
MAX_STYLE_ATTRIBUTE = 16_384
_UNREAD = (("display", "none", True),)


@lru_cache(maxsize=4096)
def style_attribute(style: str) -> tuple[tuple[str, str, bool], ...]:
    """:func:`declarations` of a ``style`` attribute, remembered: mail repeats the same
    inline styles on element after element, and reading CSS is the costly part. One too
    long to read hides its element: what it would hide cannot be known, so nothing of it
    is taken as shown."""
    if len(style) > MAX_STYLE_ATTRIBUTE:
        return _UNREAD
    return tuple(declarations(style))


_MAX_CSS_NESTING = 16  # brackets in brackets: more is no value or selector a mail needs


def css_text(nodes: Iterable[Node]) -> str | None:
    """Tokens as lower-case text; None when brackets nest deeper than any real value
    does (tinycss2 writes them out recursively: a hostile sheet could exhaust the stack)."""
    nodes = list(nodes)
    stack = [(node, 1) for node in nodes]
    while stack:
        node, depth = stack.pop()
        inner = getattr(node, "content", None) or getattr(node, "arguments", None) or []
        if inner and depth >= _MAX_CSS_NESTING:
            return None
        stack.extend((child, depth + 1) for child in inner)
    return tinycss2.serialize(nodes).lower()


def number(value: str) -> tuple[float, str] | None:
    """``(amount, unit)`` of a CSS number such as ``1.5em``; None when it is not one."""
    match = _NUMBER.fullmatch(value.strip())
    return (float(match.group(1)), match.group(2)) if match else None


def _px(value: str) -> float | None:
    """An absolute length in pixels; a bare number is pixels, as in quirks mode."""
    parsed = number(value)
    if parsed is None:
        return None
    amount, unit = parsed
    if not unit:
        return amount
    return amount * _ABSOLUTE_PX[unit] if unit in _ABSOLUTE_PX else None


def _is_tiny(value: str) -> bool:
    """A width or height of at most one pixel: zero in any unit, or e.g. 1px or 0.75pt."""
    parsed = number(value)
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
    parsed = number(value)
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
    parsed = number(value)
    if parsed is None:
        return None
    amount, unit = parsed
    amount = amount / 100 if unit == "%" else amount
    return min(max(amount, 0.0), 1.0) if unit in ("", "%") else None


def _background(value: str) -> tuple[float, float, float] | None | bool:
    """What a ``background`` value puts behind text: a colour, None (unknown: an image or a
    gradient), or False (nothing: the parent's background shows through)."""
    if "url(" in value or "gradient(" in value or "image-set(" in value:
        return None
    for token in tinycss2.parse_component_value_list(value, skip_comments=True):
        colour = parse_colour(token)
        if colour is not None:
            if colour[3] >= 1 - _MIN_ALPHA:
                return colour[:3]
            return None if colour[3] > _MIN_ALPHA else False
    return False


# ----------------------------------------------------------------------------- looks


@dataclass(frozen=True)
class Look:
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
        return (
            self.background is not None
            and max(abs(a - b) for a, b in zip(self.colour[:3], self.background, strict=True))
            <= _SAME_COLOUR
        )


def _hides_box(css: dict[str, str]) -> bool:
    """Whether these declarations make the element and all inside it invisible."""
    if css.get("display") == "none" or css.get("content-visibility") == "hidden":
        return True
    if css.get("mso-hide") == "all":  # Outlook's own display:none
        return True
    overflow = css.get("overflow", "").split()
    clip_x = css.get("overflow-x", overflow[0] if overflow else "")
    clip_y = css.get("overflow-y", overflow[-1] if overflow else "")
    if clip_y in ("hidden", "clip") and any(
        _is_tiny(css.get(p, "")) for p in ("height", "max-height")
    ):
        return True
    if clip_x in ("hidden", "clip") and any(
        _is_tiny(css.get(p, "")) for p in ("width", "max-width")
    ):
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
    if clip and all(
        _is_tiny(edge) or edge == "auto" for edge in re.split(r"[\s,]+", clip.group(1).strip())
    ):
        return True
    inset = re.match(r"inset\(\s*(\d+(?:\.\d+)?)%", css.get("clip-path", ""))
    return bool(inset and float(inset.group(1)) >= 50) or css.get("clip-path", "").startswith(
        ("circle(0", "ellipse(0")
    )


_SPECIAL_LOOK_TAGS = frozenset({"a", "body", "dialog", "font", "input"}) | _UNRENDERED
_LOOK_ATTRS = frozenset({"background", "bgcolor", "hidden"})


def element_look(parent: Look, tag: str, attrs: dict[str, str], css: dict[str, str]) -> Look:
    """The look of an element under ``parent``, from its tag, attributes and styles."""
    if not css and tag not in _SPECIAL_LOOK_TAGS and not _LOOK_ATTRS.intersection(attrs):
        return parent  # most elements: nothing of their own that could hide them
    removed = (
        parent.removed
        or tag in _UNRENDERED
        or "hidden" in attrs
        or (tag == "dialog" and "open" not in attrs)
        or (tag == "input" and attrs.get("type", "").lower() == "hidden")
        or _hides_box(css)
    )
    if removed:
        return replace(parent, removed=True)
    font_px = _font_px(css["font-size"], parent.font_px) if "font-size" in css else parent.font_px
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
    for value in (
        attrs.get("bgcolor", ""),
        css.get("background", ""),
        css.get("background-color", ""),
    ):
        behind = _background(value.lower()) if value else False
        if behind is not False:
            background = behind  # type: ignore[assignment]
    if attrs.get("background") or css.get("background-image", "none") != "none":
        background = None
    if (
        "text" in (css.get("background-clip"), css.get("-webkit-background-clip"))
        and background is None
    ):
        colour = None  # gradient or image text: painted by the background, not judged
    visibility = css.get("visibility")
    invisible = (
        parent.invisible
        if visibility not in ("hidden", "collapse", "visible")
        else visibility != "visible"
    )
    return Look(False, font_px, opacity, colour, invisible, background)


def tiny_image(attrs: dict[str, str], css: dict[str, str]) -> bool:
    """A 1x1 tracking pixel: its alt text is never seen."""
    return any(
        _is_tiny(attrs.get(name, "")) or _is_tiny(css.get(name, "")) for name in ("width", "height")
    )
