"""A prompt's attachments in the model input, as references (pure).

The turn's user message carries one reference part per attachment: an ``input_image``
whose ``image_url``, or an ``input_file`` whose ``file_id``, is
``switchboard-attachment:<id>``. The conversation history stores these small parts; the
app expands them into the files' content right before each model call
(``app.attachments.model_input``), so no blob is copied into the history.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

from agents import TResponseInputItem

from storage.attachments import AttachmentRecord

REFERENCE = "switchboard-attachment:"
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


def reference_part(record: AttachmentRecord) -> dict[str, Any]:
    if record.content_type in IMAGE_TYPES:
        return {"type": "input_image", "image_url": REFERENCE + record.id, "detail": "auto"}
    return {"type": "input_file", "file_id": REFERENCE + record.id, "filename": record.name}


def prompt_input(text: str, records: Iterable[AttachmentRecord]) -> list[TResponseInputItem]:
    """The turn's input: one user message with the text and a reference per attachment."""
    content = [{"type": "input_text", "text": text}, *map(reference_part, records)]
    return [cast(TResponseInputItem, {"role": "user", "content": content})]
