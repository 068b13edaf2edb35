"""The languages the offline demo model answers in besides English (French, Spanish,
German): which one a request is written in, and the few sentences the model itself says
in each. Pure functions.

The guess counts each language's commonest short words and the letters only it uses;
requests are short, so a tie (or nothing telling) is English.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

ENGLISH = "en"
LANGUAGES = (ENGLISH, "fr", "es", "de")

_FUNCTION_WORDS = {
    "en": """the a an and is are i my me you what how where which to of in on for with
    from do did have this that it can""",
    "fr": """le la les un une des du de et est je j ai mes mon ma ce cette qui que qu quel
    quelle combien où dans pour sur avec pas au aux y vous tu il moi à d l""",
    "es": """el la los las un una unos de del y es yo mi mis me que qué cuánto cuanto cuál
    dónde en para con por al hay este esta lo""",
    "de": """der die das den dem des ein eine einen und ist ich mein meine meinen meinem
    mir du wie was wo für mit im auf von zu nicht habe hat""",
}
WORDS = {language: frozenset(words.split()) for language, words in _FUNCTION_WORDS.items()}
# Words of the other languages that say nothing about what is asked ("für", "mes", "el").
FUNCTION_WORDS_ABROAD = frozenset().union(
    *(words for language, words in WORDS.items() if language != ENGLISH)
)
_LETTERS = {"fr": "àâçèêëîïôœùûÿ", "es": "¿¡ñáíóú", "de": "äöüß"}
_TOKEN = re.compile(r"[^\W\d_]+")


def language_of(text: str) -> str:
    """The language ``text`` is most likely in: one of ``LANGUAGES``."""
    lowered = text.lower()
    tokens = set(_TOKEN.findall(lowered))
    scores = {language: len(tokens & words) for language, words in WORDS.items()}
    for language, letters in _LETTERS.items():
        scores[language] += 2 * sum(letter in lowered for letter in letters)
    best = max(LANGUAGES, key=lambda language: scores[language])  # ties: the first, English
    return best if scores[best] > scores[ENGLISH] else ENGLISH


_AND = {"en": "and", "fr": "et", "es": "y", "de": "und"}
_CAN_DO = {
    "en": "In this demo I can {}.",
    "fr": "Dans cette démo, je peux {}.",
    "es": "En esta demo puedo {}.",
    "de": "In dieser Demo kann ich {}.",
}


def listed(items: Sequence[str], language: str = ENGLISH) -> str:
    """ "a, b and c" in ``language``."""
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + f" {_AND.get(language, _AND[ENGLISH])} {items[-1]}"


def can_do(capabilities: Sequence[str], language: str = ENGLISH) -> str:
    """ "In this demo I can …" in ``language``, or "" with nothing to list."""
    if not capabilities:
        return ""
    return _CAN_DO.get(language, _CAN_DO[ENGLISH]).format(listed(capabilities, language))
