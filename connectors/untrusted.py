"""Third-party text on its way to the model: invisible characters out, fenced as data.

Email subjects and bodies, web results, reviews and remote tools' results are written by
people we do not know, and reach the model as tool output. Two things keep such text from
steering an agent:

- ``strip_invisible`` removes what a person reading the same text cannot see (Unicode tag
  characters, runs of zero-width characters, variation-selector smuggling, bidi controls),
  so the model reads no more than a person would.
- ``fence`` puts the text between ``<external source="…">`` and ``</external>``; every
  agent's instructions (``connectors.instructions.UNTRUSTED_DATA_RULE``) say that what is
  between them is data, never instructions. Anything in the text that looks like either
  marker is defused first (``defuse_markers``), so the text can neither close its fence
  early nor open a fake one.

Pure: no I/O.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["FENCE_CLOSE", "defuse_markers", "fence", "fence_open", "strip_invisible"]

FENCE_CLOSE = "</external>"

# ----------------------------------------------------------------------- invisible text

# Never visible and never needed by a reader: C0/C1 controls (but tab and line breaks), the
# soft hyphen, zero-width space and no-break space (BOM), the word joiner and invisible
# maths operators, the Mongolian vowel separator, deprecated format controls, Hangul
# fillers, Khmer inherent vowels, interlinear annotation marks, shorthand format controls
# and musical formatting controls.
# Bidi embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069) go too: they only
# change the order in which text is *displayed*, the model reads the stored order anyway,
# so dropping them loses nothing for it, and it removes the means to make what the person
# sees on screen differ from what the model reads ("Trojan Source"). The lone marks
# LRM/RLM/ALM, common in right-to-left text and reordering nothing, are kept.
_ALWAYS = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u00ad\u180e\u200b\u202a-\u202e\u2060-\u2064"
    "\u2066-\u206f\u17b4\u17b5\u3164\ufeff\uffa0\ufff9-\ufffb"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a]"
)

# Tag characters spell hidden ASCII ("ASCII smuggling"). Their one legitimate use is a
# subdivision flag: a black flag, a few tag letters or digits, then CANCEL TAG.
_TAG_RUN = re.compile("(\U0001f3f4)?([\U000e0000-\U000e007f]+)")
_FLAG_TAGS = re.compile("[\U000e0030-\U000e0039\U000e0061-\U000e007a]{1,6}\U000e007f")

_JOINERS = frozenset("\u200c\u200d")  # ZWNJ, ZWJ: emoji sequences, Persian, Indic scripts
_MARKS = frozenset("\u034f\u061c\u200e\u200f")  # CGJ, ALM, LRM, RLM
# Variation selectors (and Mongolian free variation selectors) pick a glyph for the
# character before them; runs of them carry hidden bytes ("emoji smuggling").
_SELECTOR = re.compile("[\u180b-\u180d\u180f\ufe00-\ufe0f\U000e0100-\U000e01ef]")
_CONTEXTUAL = re.compile(
    "[\u034f\u061c\u180b-\u180d\u180f\u200c-\u200f\ufe00-\ufe0f\U000e0100-\U000e01ef]"
)
_EMOJI_STYLE = frozenset("\ufe0e\ufe0f")  # text / emoji presentation: after any character
_LATIN_END = 0x370  # below: Latin, IPA and combining diacritics, which never need a joiner


def _is_invisible(char: str) -> bool:
    return bool(char) and (char in _JOINERS or char in _MARKS or bool(_SELECTOR.match(char)))


def _is_base(char: str) -> bool:
    """A visible character another one can attach to."""
    return bool(char) and not char.isspace() and not _is_invisible(char)


def _is_ideograph(char: str) -> bool:
    code = ord(char)
    return 0x3400 <= code <= 0x9FFF or 0xF900 <= code <= 0xFAFF or 0x20000 <= code <= 0x3FFFF


def _keep_contextual(text: str, at: int) -> bool:
    """Whether the joiner, mark or selector at ``text[at]`` is the legitimate kind.

    Only a single one is ever kept: anything next to another invisible character is part
    of a run, and runs are how hidden data is carried.
    """
    char = text[at]
    before = text[at - 1] if at else ""
    after = text[at + 1] if at + 1 < len(text) else ""
    if char in _JOINERS:
        # Between two visible non-Latin characters (emoji, Arabic script, Devanagari...),
        # looking past one presentation selector: "❤️‍🔥" is ❤, VS16, ZWJ, 🔥.
        if before in _EMOJI_STYLE and at >= 2 and _keep_contextual(text, at - 1):
            before = text[at - 2]
        return all(_is_base(c) and ord(c) >= _LATIN_END for c in (before, after))
    if char in _MARKS:
        return not _is_invisible(before) and not _is_invisible(after)
    if not _is_base(before) or _SELECTOR.match(after):
        return False
    if char in _EMOJI_STYLE:
        return True
    if char >= "\U000e0100":  # ideographic variation sequences
        return _is_ideograph(before)
    # Standardized variants follow maths symbols and letters of CJK, Mongolian, Myanmar...
    return ord(before) >= _LATIN_END and unicodedata.category(before) in ("Lo", "Sm")


def _flag_or_nothing(match: re.Match[str]) -> str:
    flag, tags = match.groups()
    if flag and _FLAG_TAGS.fullmatch(tags):
        return match.group(0)
    return flag or ""


def strip_invisible(text: str) -> str:
    """``text`` without the characters a reader cannot see and the model would still read.

    Kept: tab and line breaks; a single ZWJ/ZWNJ between two visible non-Latin characters
    (emoji ZWJ sequences, Persian, Hindi); a single variation selector after a character it
    can modify; LRM/RLM/ALM on their own; subdivision flags' tag sequences.
    """
    if text.isascii():
        return _ALWAYS.sub("", text)
    text = _TAG_RUN.sub(_flag_or_nothing, _ALWAYS.sub("", text))
    parts: list[str] = []
    start = 0
    for match in _CONTEXTUAL.finditer(text):
        if not _keep_contextual(text, match.start()):
            parts.append(text[start : match.start()])
            start = match.end()
    parts.append(text[start:])
    return "".join(parts)


# ----------------------------------------------------------------------------- markers

# Look-alikes a model could read as the marker: after NFKC (which folds fullwidth and small
# forms) some brackets, slashes and Cyrillic/Greek letters still differ from ASCII.
_LOOKALIKES = str.maketrans(
    {
        **dict.fromkeys("‹〈⟨«❮❬˂ᐸ⟪《⦉⧼", "<"),
        **dict.fromkeys("⁄∕⧸╱", "/"),
        **dict.fromkeys("ЕеЁёЄєΕεЭэ", "e"),
        **dict.fromkeys("ХхΧχ×", "x"),
        **dict.fromkeys("ТтΤτ", "t"),
        **dict.fromkeys("Гг", "r"),
        **dict.fromkeys("ПпΝη", "n"),
        **dict.fromkeys("АаΑαɑ", "a"),
        **dict.fromkeys("ӀӏΙιIi1|ℓ", "l"),
        **dict.fromkeys("Ԁԁ", "d"),
    }
)
# An opening bracket, also written as an HTML entity, a JSON escape or URL encoding.
_ENCODED = r"&lt;?|&#0*60;?|&#x0*3c;?|\\+u0*3c|%3c"
_OPENER = rf"(?:<|{_ENCODED})"
# Spaces, punctuation, slashes and more brackets: "< / E x-t e r n a l", "&lt;&lt;external".
# A gap can hold brackets (encoded ones tried first), so one match reaches back to the first
# of them, and what is left after defusing cannot be read as a marker again.
_GAP = rf"(?:{_ENCODED}|[\W_])*+"


def _spaced(word: str) -> str:
    return _GAP.join(re.escape(letter) for letter in word)


# The word alone, with anything but letters and digits between its letters.
_SPACED_WORD = re.compile(r"[\W_]*".join("external"))
_MARKER = re.compile(rf"{_OPENER}{_GAP}(?=(?:{_spaced('end')}{_GAP})?{_spaced('external')})")


_ASCII_RUN = re.compile(r"[\x00-\x7f]+")


def _fold(text: str) -> tuple[str, list[int]]:
    """``text`` as the marker pattern reads it, and the index in ``text`` of each character.

    Invisible format characters fold to nothing, so "</ext\u200dernal>" still matches.
    ASCII runs are folded whole (NFKC leaves ASCII as it is, none of it is a format
    character, and the look-alike table and case folding keep its length), so only the
    other characters are looked at one by one: most text costs a few passes in C.
    """
    folded: list[str] = []
    origin: list[int] = []
    start = 0
    for run in (*_ASCII_RUN.finditer(text), None):
        end = run.start() if run is not None else len(text)
        for index in range(start, end):
            char = text[index]
            if unicodedata.category(char) == "Cf":
                continue
            form = unicodedata.normalize("NFKC", char).translate(_LOOKALIKES).casefold()
            folded.append(form)
            origin.extend([index] * len(form))
        if run is not None:
            folded.append(run.group().translate(_LOOKALIKES).lower())
            origin.extend(range(run.start(), run.end()))
            start = run.end()
    origin.append(len(text))
    return "".join(folded), origin


def defuse_markers(text: str) -> str:
    """``text`` with anything that reads like ``<external`` or ``</external`` broken.

    Case, spacing, punctuation, invisible characters, entities, fullwidth forms and common
    Cyrillic/Greek look-alikes are all seen through. The bracket and what follows it up to
    the word become ``(`` (``(/`` for a closing marker): still readable, no longer a marker.
    """
    # Most text holds no marker: ASCII text is folded in one pass to say so (as _fold
    # folds it), without the index of each character.
    if text.isascii() and not _SPACED_WORD.search(text.translate(_LOOKALIKES).lower()):
        return text
    folded, origin = _fold(text)
    if not _SPACED_WORD.search(folded):
        return text
    parts: list[str] = []
    start = 0
    for match in _MARKER.finditer(folded):
        begin, end = origin[match.start()], origin[match.end()]
        parts.append(text[start:begin])
        parts.append("(/" if "/" in match.group() else "(")
        start = end
    parts.append(text[start:])
    return "".join(parts)


# ----------------------------------------------------------------------------- fencing


def fence_open(source: str) -> str:
    """The opening marker; ``source`` says where the text is from ("email", "web results")."""
    label = re.sub(r"[^a-z0-9 _-]+", "", source.lower()).strip() or "unknown"
    return f'<external source="{label}">'


def fence(text: str, source: str) -> str:
    """Third-party ``text`` for the model, marked as data from ``source``.

    The text is cleaned (``strip_invisible``) and its look-alike markers defused, so the
    result has exactly one opening marker, at the start, and one closing marker, at the end.
    """
    return f"{fence_open(source)}\n{defuse_markers(strip_invisible(text))}\n{FENCE_CLOSE}"
