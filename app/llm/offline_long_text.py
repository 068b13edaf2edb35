"""The offline demo model's answer to a long pasted text ("…five pages… Summarise this in 3
bullets"). It is not a language model: it cannot summarise, translate or rewrite, and a
search for the whole text finds nothing. So it says so, and gives what it honestly can:
the text's size and, picked mechanically and labelled so, the opening sentences of a few
paragraphs spread across it. Pure functions.
"""

from __future__ import annotations

import re

from connectors.offline_reading import clip, plural

# Longer than any request to a connector: a pasted text, not an instruction.
LONG_TEXT_CHARS = 1000
_QUOTED_CHARS = 180  # each picked sentence, at most
_NUMBERS = "one two three four five six seven eight nine ten".split()
_ASKED_COUNT = re.compile(
    rf"\b(\d{{1,2}}|{'|'.join(_NUMBERS)})\s+(?:bullet|point|sentence|line|item|takeaway)s?\b",
    re.I,
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _asked_count(text: str) -> int:
    """How many points the text asks for ("in 3 bullets"), 3 if it does not say; 1 to 5."""
    asked = _ASKED_COUNT.search(text)
    if asked is None:
        return 3
    raw = asked.group(1).lower()
    count = int(raw) if raw.isdigit() else _NUMBERS.index(raw) + 1
    return max(1, min(count, 5))


def _spread(units: list[str], count: int) -> list[str]:
    """``count`` of ``units``, evenly spaced from the first to the last."""
    if len(units) <= count:
        return units
    if count == 1:
        return units[:1]
    return [units[round(i * (len(units) - 1) / (count - 1))] for i in range(count)]


def long_text_answer(prompt: str) -> str | None:
    """What the model says to a prompt this long, or None for a prompt of usual length."""
    if len(prompt) <= LONG_TEXT_CHARS:
        return None
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", prompt) if p.strip()]
    count = _asked_count(prompt)
    # A paragraph of a few words is a heading or the instruction, not the text's content.
    units = [p for p in paragraphs if len(p.split()) >= 10]
    if len(units) < count:
        units = [s for s in _SENTENCE_END.split(" ".join(paragraphs)) if len(s.split()) >= 5]
    picked = [_SENTENCE_END.split(unit)[0] for unit in _spread(units, count)]
    size = (
        f"{len(prompt.split()):,} words in {plural(len(paragraphs), 'paragraph')} "
        f"({len(prompt):,} characters)"
    )
    blocks = [
        f"That's a long text: {size}. I'm the offline demo model, not a real language "
        "model, so I can't summarise, translate or rewrite it, and searching the web for "
        "all of it would find nothing."
    ]
    if picked:
        quotes = "\n".join(f"- “{clip(sentence, _QUOTED_CHARS)}”" for sentence in picked)
        which = (
            "how it opens"
            if len(picked) == 1
            else f"the first sentence of {len(picked)} parts spread across it"
        )
        blocks.append(
            f"What I can do is quote {which} (picked mechanically, not a summary):\n{quotes}"
        )
    blocks.append(
        "For a real summary, run Switchboard with a real model (SWITCHBOARD_MODEL); "
        "or ask me something short and I'll use the connected services."
    )
    return "\n\n".join(blocks)
