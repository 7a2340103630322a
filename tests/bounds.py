"""Every bounded wait in the tests scales with one load factor, computed here.

A bound is how long a test waits for something that will happen (an answer, a line on the screen, a process
ending) before it calls the wait a failure. It is never what the test proves, so it must never be what fails
a correct test: on a CI runner that shares its cores, with both xdist workers busy, or under a stress run,
everything takes longer than on an idle machine. So a test never writes a bare number of seconds for a wait:
it writes `bounded(seconds)`, the bound that is generous on an idle two-core machine, and gets

    seconds × LOAD × max(1, the 1-minute load average / the number of CPUs)

`LOAD` is `SPROUT_TEST_LOAD` (default 1): a CI that knows its runners are slow (an emulated CPU, a debugger)
says so once. The load average is read when the wait starts, so a wait that starts while the machine is busy
gets the room it needs. The per-test timeout of pytest-timeout (`timeout` in pyproject.toml) scales by the
same factor (tests/conftest.py).

What is not a bound and stays as written: the code's own timeouts that a test checks (a hook's 100 ms timeout
that must trip, a tool timeout of 0.5 s against a call that never ends), which are the behaviour under test;
and the time a fake peer takes on purpose (a slow tool, a delayed reply). No test asserts how long something
took, but where the bound is the behaviour (a batch's exit waits at most 3.5 s for a silent collector:
test_telemetry_e2e.py, against `bounded(6)`); none sleeps to synchronise: a test waits on an event or a
condition, bounded.
"""

from __future__ import annotations

import os

LOAD = float(os.environ.get("SPROUT_TEST_LOAD") or "1")


def load_factor() -> float:
    """How much slower than an idle machine this one is now: `LOAD`, times the run queue per CPU above 1."""
    try:
        per_cpu = os.getloadavg()[0] / (os.cpu_count() or 1)
    except OSError:  # no load average on this platform
        per_cpu = 1.0
    return LOAD * max(1.0, per_cpu)


def bounded(seconds: float) -> float:
    """A wait's bound: `seconds` on an idle machine, scaled by the load factor."""
    return seconds * load_factor()
