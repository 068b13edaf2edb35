"""Running a plug-in's own code (its import, its factory, ``build_agent``, its render
module) so that whatever it raises is that plug-in's failure, never the server's.

"Whatever" includes ``BaseException``: a plug-in that calls ``sys.exit(3)`` at import
raises ``SystemExit``, which an ``except Exception`` lets through to stop the whole server
(or ``switchboard connectors list``) with nothing said. Two exceptions to that:

- ``KeyboardInterrupt`` is let through. It is how a person's Ctrl-C arrives in a command
  (Python's SIGINT handler raises it wherever the main thread is, which during a slow
  plug-in import is inside the plug-in), and nothing tells it apart from a plug-in raising
  it itself; a plug-in has no reason to, and stopping is the safe reading. Under
  ``switchboard serve`` uvicorn turns Ctrl-C into a shutdown instead, so it never arrives
  here.
- ``asyncio.CancelledError`` is taken for the plug-in's own: plug-in code runs
  synchronously, and asyncio delivers a real cancellation of the task running it (a
  server start being cancelled) only at that task's next ``await``. Refusing the plug-in
  does not swallow it: the request stays pending and the start-up still ends there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class PluginCodeFailed(Exception):
    """A plug-in's code raised ``error`` (its ``__cause__`` too, for the log's traceback)."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(type(error).__name__)
        self.error = error


def run_plugin_code(code: Callable[[], T]) -> T:
    """``code()``; anything it raises but ``KeyboardInterrupt`` becomes ``PluginCodeFailed``."""
    try:
        return code()
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        raise PluginCodeFailed(exc) from exc


def exit_call(error: SystemExit) -> str:
    """How the code called ``sys.exit``, safe to show: its status when it is a number, not
    its message (which may hold anything)."""
    code = error.code
    if code is None or isinstance(code, int):
        return f"sys.exit({'' if code is None else code})"
    return "sys.exit() with a message"
