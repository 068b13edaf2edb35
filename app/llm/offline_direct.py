"""Requests the offline demo model answers by itself, before it routes anything: requests
about the answer's own form ("Reply with exactly: OK", "Count from 1 to 5", "Say hello")
and about the conversation ("What is my name?", "Repeat only the number"), a long pasted
text (``offline_long_text``), and questions about an attached image or file, which it
cannot see (it acknowledges attachments by name, type, size and image dimensions, from
the lines the model input names them with).

A real model answers these without tools; without this, the demo model would hand them
to a connector (a web search for "Count from 1 to 5"). Pure functions, conservative on
purpose: each rule matches only its own wording, so connector requests ("reply to Bob's
email saying thanks") still reach the connectors.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from app.llm.offline_long_text import long_text_answer
from app.llm.offline_transcript import Transcript

_MAX_WORDS = 8  # a "reply with …" text longer than this is a request, not an answer
_NUMBER_WORDS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty"
).split()

_REPLY_WITH = re.compile(
    r"(?:^|[.!?;]\s+|\band\s+)(?:please\s+)?(?:reply|respond|answer)\s+with\s+"
    r"(?:exactly|only|just)?\s*:?\s*(?P<text>[^\n]+?)\s*[.!]?\s*$",
    re.I,
)
_COUNT = re.compile(r"^\s*count\s+(?:from\s+)?(-?\d+)\s+to\s+(-?\d+)\b", re.I)
_REPEAT = re.compile(
    r"^\s*repeat\s+(?:only\s+|just\s+)?(?:the\s+|my\s+)?(?P<what>[\w ]+?)\W*$", re.I
)
_QUESTION = re.compile(
    r"^\s*what(?:'s|\s+is|\s+was)\s+(?P<whose>my|the)\s+(?P<what>[\w ]+?)"
    r"(?:\s+(?:I|you)\s+(?:asked|told)\b.*)?\s*\?",
    re.I,
)
_CODE_WORD_QUESTION = re.compile(r"^\s*what\s+(?P<what>code word)\s+did\s+I\b", re.I)
# "Remember that …", not "remember to email Bob" (a request to act).
_REMEMBER = re.compile(r"^\s*remember\s+(?:that|this|the|my)\b", re.I)
_SAY_GREETING = re.compile(r"^\s*say\s+(?P<word>hello|hi|hey|goodbye|bye)\b", re.I)
_ABOUT_ATTACHMENT = re.compile(r"\b(image|picture|photo|file|attach\w*|document|pdf)\b", re.I)


def direct_answer(transcript: Transcript) -> str | None:
    """The answer to a request the model answers itself, or None to route it."""
    prompt = transcript.prompt
    if not prompt and not transcript.attachments:
        return None
    long_text = long_text_answer(prompt)
    if long_text is not None:
        return long_text
    if transcript.attachments:
        return acknowledge(transcript.attachments)
    if transcript.attached and _ABOUT_ATTACHMENT.search(prompt):
        return (
            "I can't look at images or files: I'm the offline demo model, which reads "
            "text only. Describe what you need and I'll help with that."
        )
    reply = _REPLY_WITH.search(prompt)
    if reply is not None:
        answer = _reply_text(reply.group("text"), transcript.earlier)
        if answer is not None:
            return answer
    count = _COUNT.match(prompt)
    if count is not None:
        first, last = int(count.group(1)), int(count.group(2))
        if abs(last - first) <= 100:
            step = 1 if last >= first else -1
            return ", ".join(str(n) for n in range(first, last + step, step))
    repeat = _REPEAT.match(prompt)
    if repeat is not None:
        found = recall(repeat.group("what"), transcript.earlier)
        if found is not None:
            return found
    question = _QUESTION.match(prompt) or _CODE_WORD_QUESTION.match(prompt)
    if question is not None:
        found = recall(question.group("what"), transcript.earlier)
        if found is not None:
            whose = question.groupdict().get("whose")
            what = question.group("what").strip().lower()
            return f"Your {what} is {found}." if whose == "my" else f"The {what} is {found}."
    if _REMEMBER.match(prompt):
        return "OK, I'll remember that."
    greeting = _SAY_GREETING.match(prompt)
    if greeting is not None:
        return (
            "Goodbye, take care!"
            if "bye" in greeting.group("word").lower()
            else "Hello there, friend!"
        )
    return None


def acknowledge(attachments: Sequence[str]) -> str:
    """The offline model's answer to a prompt with attachments: what it received, in the
    words the model input names them with, and what it cannot do with them."""
    received = (
        attachments[0]
        if len(attachments) == 1
        else (", ".join(attachments[:-1]) + " and " + attachments[-1])
    )
    return (
        f"I received {received}. I'm the offline demo model, which reads text only, so I "
        "can't look at images or files; tell me what you need and I'll help with that."
    )


def _reply_text(text: str, earlier: Sequence[tuple[str, str]]) -> str | None:
    text = text.strip().strip("\"'“”‘’").strip()
    if not text or len(text.split()) > _MAX_WORDS or re.search(r"\bto\b", text, re.I):
        return None
    named = re.match(r"^(?:the|my)\s+(?P<what>[\w ]+)$", text, re.I)
    if named is not None:
        return recall(named.group("what"), earlier)
    return text


def recall(what: str, earlier: Sequence[tuple[str, str]]) -> str | None:
    """The value the conversation gave for ``what`` ("the number is four", "code word:
    cobalt", "My name is Alice"), newest first; None when it gave none."""
    what = " ".join(what.split()).lower()
    if not what:
        return None
    pattern = re.compile(rf"\b{re.escape(what)}\s*(?:is|was|:|=)\s*[\"'“]?(?P<value>[\w-]+)", re.I)
    for _, text in reversed(earlier):
        found = pattern.search(text)
        if found is not None:
            return found.group("value")
    if what == "number":  # "… the saved number …" said without "is": the last number said
        for _, text in reversed(earlier):
            words = re.findall(r"\b(\d+|" + "|".join(_NUMBER_WORDS) + r")\b", text, re.I)
            if words:
                return str(words[-1])
    return None
