"""Shift this Python process's wall clock by CLOCK_RUNS_SHIFT seconds (tests/clock_runs.py).

On PYTHONPATH, Python imports this at start-up in every process of a run: the pytest workers,
the schedulers, gunicorn and `pbem` commands the tests start. Each travels by the same offset
from the real clock, with the clock ticking on (time-machine's `tick=True`), so the processes
agree with each other to the millisecond; the monotonic clock and sleeps are left alone.
"""

import os

_shift = os.environ.get("CLOCK_RUNS_SHIFT")
if _shift:
    import time

    import time_machine

    time_machine.travel(time.time() + float(_shift), tick=True).start()
