"""Garbage collection for the serving process (``switchboard serve``).

With a thousand turns running, the heap holds millions of objects (the SDK's run state,
items, events), and CPython's default thresholds (700 allocations for a young collection,
a full one whenever the long-lived objects grew by a quarter) ran about 30 full
collections of the whole heap in a 90 s PostgreSQL run of bench/concurrency.py, 0.5–0.9 s
each at the peak: about a quarter of the server's CPU, during which the event loop stands
still while every transaction in flight keeps its pooled connection. Freezing what start-up
made (imports, the app: never garbage, scanned by every full collection) and collecting
the young generation less often cut that to a few seconds in the same run, and the turns'
waits for a connection with it (docs/benchmarks.md).
"""

from __future__ import annotations

import gc

# Allocations (net of frees) between two young collections; CPython's default is 700.
# A turn allocates thousands of objects per step, nearly all freed by reference counting.
YOUNG_THRESHOLD = 20_000
# Young collections between two of the middle generation (default 10), and those between
# two looks at the old one (default 10; a full collection still waits for the long-lived
# objects to grow by a quarter).
MIDDLE_THRESHOLD = 20
OLD_THRESHOLD = 10


def tune_for_serving() -> None:
    """Freeze the objects start-up made and collect less often; call once, just before
    the server starts serving (everything imported and built)."""
    gc.collect()
    gc.freeze()  # into the permanent generation: never scanned again
    gc.set_threshold(YOUNG_THRESHOLD, MIDDLE_THRESHOLD, OLD_THRESHOLD)
