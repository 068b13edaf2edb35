"""The serving process freezes what start-up made and collects less often (app/gc_tuning.py).

Run in a child interpreter: freezing and thresholds are process-wide, and the test
process's own collector must stay as pytest expects it.
"""

from __future__ import annotations

import subprocess
import sys

from app.gc_tuning import MIDDLE_THRESHOLD, OLD_THRESHOLD, YOUNG_THRESHOLD

PROBE = """
import gc
import app.main  # what `switchboard serve` has imported when it tunes
from app.gc_tuning import tune_for_serving
before = gc.get_freeze_count()
tune_for_serving()
print(before, gc.get_freeze_count(), *gc.get_threshold())
"""


def test_serving_freezes_start_up_and_collects_less_often() -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=120
    )
    before, frozen, *thresholds = map(int, result.stdout.split())
    assert before == 0
    assert frozen > 10_000  # the imported modules, classes and functions
    assert thresholds == [YOUNG_THRESHOLD, MIDDLE_THRESHOLD, OLD_THRESHOLD]
