"""Blocking calls on the event loop, found while a tool runs under the kit.

An ``async`` tool that calls ``time.sleep``, a blocking socket (``requests``, a vendor SDK)
or ``open()`` freezes every chat of the server while the call lasts, and no timeout can cut
it short: the loop's timers only fire once it turns again. The kit runs each call with
``blockbuster`` (a maintained detector: it wraps those functions and raises ``BlockingError``
when one is called on a running event loop), so such a tool fails at once, and
``blocking_calls`` says which call it made and where: the line that made it, and the line
of the tool on the way there. A ``blocking=True`` tool runs in a worker thread, where
blocking is what it is for: no loop runs there, and nothing is raised.
"""

from __future__ import annotations

import sysconfig
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import blockbuster
from blockbuster import BlockBuster, BlockingError

__all__ = ["BlockingError", "blocking_calls", "blocking_checked", "detector"]

_DETECTOR = str(Path(blockbuster.__file__).resolve().parent)
# The frames of connector_tool's own wrapper: the frame after its last is the tool itself.
_TOOLING = str(Path(__file__).resolve().parents[1] / "tooling.py")


# Where blocking is accepted: the logging handlers a record goes through (a file, a
# traceback formatted with its source lines read from disk), which the server's own logging
# does on the loop too; and a module's first import (a lazy import reading its package's
# metadata), done once per process.
HOST_MAY_BLOCK = (
    ("logging/__init__.py", "callHandlers"),
    ("<frozen importlib._bootstrap>", "_find_and_load"),
)


def detector(
    scanned_modules: Sequence[str] | None = None, *, excluded: Sequence[str] = ()
) -> BlockBuster:
    """blockbuster's detector, not yet active: for blocking calls made under
    ``scanned_modules`` (any frame of the call's stack in one of them, unless it is in one
    of the ``excluded`` submodules; None: anywhere), except those in ``HOST_MAY_BLOCK``."""
    found = BlockBuster(
        list(scanned_modules) if scanned_modules is not None else None,
        excluded_modules=list(excluded) or None,
    )
    for function in found.functions.values():
        for filename, name in HOST_MAY_BLOCK:
            function.can_block_in(filename, name)
    return found


@contextmanager
def blocking_checked() -> Iterator[None]:
    """Within the block, a blocking call on a running event loop raises ``BlockingError``."""
    found = detector()
    found.activate()
    try:
        yield
    finally:
        found.deactivate()


def blocking_calls(error: BaseException | None) -> list[str]:
    """``time.sleep at tools.py:42 in fetch (…)`` for each ``BlockingError`` in ``error``'s
    chain (its cause and context too: a tool may have wrapped it in a ``ToolError``), the
    first one made first."""
    found: list[str] = []
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, BlockingError):
            found.insert(0, _describe(error))
        error = error.__cause__ or error.__context__
    return list(dict.fromkeys(found))


def _describe(error: BlockingError) -> str:
    """The call, where it was made, and the way there from the tool through its author's
    code (the standard library's and installed packages' frames left out)."""
    call = str(error).removeprefix("Blocking call to ")
    frames = [
        frame
        for frame in traceback.extract_tb(error.__traceback__)
        if not _resolved(frame.filename).startswith(_DETECTOR)
    ]
    if not frames:
        return call
    wrapper = [n for n, frame in enumerate(frames) if frame.filename == _TOOLING]
    below_tool = frames[wrapper[-1] + 1 :] if wrapper else frames
    # The tool's own frame always (even from an installed plug-in), then its author's.
    way = [
        frame
        for n, frame in enumerate(below_tool[:-1])
        if (n == 0 and wrapper) or not _installed(frame.filename)
    ]
    described = f"{call} at {_at(frames[-1])}"
    if way:
        described += ", from " + " -> ".join(_at(frame) for frame in way)
    return described


def _resolved(filename: str) -> str:
    return str(Path(filename).resolve()) if not filename.startswith("<") else filename


_LIBRARIES = tuple(
    str(Path(p).resolve())
    for p in {
        sysconfig.get_paths()[name] for name in ("stdlib", "platstdlib", "purelib", "platlib")
    }
)


def _installed(filename: str) -> bool:
    """Whether the file is the standard library's or an installed package's."""
    return filename.startswith("<") or _resolved(filename).startswith(_LIBRARIES)


def _at(frame: traceback.FrameSummary) -> str:
    return f"{frame.filename}:{frame.lineno} in {frame.name}"
