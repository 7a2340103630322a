"""Starting the warm interpreter (zygote.py) in the background, from a cold run or from `batch`; standard library
only, and nothing that runs a session: a `batch` imports it without the run's modules."""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from sprout_agent.faces.warm import place

# What the zygote keeps of the environment of the run that started it: what Python and its locale need, never
# a credential (each child gets its own run's environment).
_KEPT = ("PATH", "HOME", "USER", "LOGNAME", "TMPDIR", "XDG_RUNTIME_DIR", "TZ", "LANG", "LC_ALL", "LC_CTYPE")


def start(base: Path, print_: str, env: Mapping[str, str], program: str) -> None:
    """Starts a zygote in the background unless one holds the lock (starting or serving); never fails a run.
    `program` is the zygote's `python -c` program (the command line's `warm_run.PROGRAM`: what it serves)."""
    lock = place.lock_path(base, print_)
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return  # one is there
    finally:
        os.close(fd)  # the zygote takes the lock itself
    import subprocess

    # From the environment this process started with: Python adds LC_CTYPE to os.environ when it coerces a C
    # locale, and a zygote given that would start in another mode (UTF-8 mode off) than the runs it serves.
    kept = {k: v for k, v in place.startup_environment(env).items() if k in _KEPT or k.startswith(("PYTHON", "LC_"))}
    argv = [sys.executable, "-P", "-c", program, str(base), print_, str(place.idle_seconds(env))]
    with contextlib.suppress(OSError):
        # Its stderr (a traceback if it fails to start) goes to a log beside the socket, truncated each start.
        log = os.open(
            base / f"w-{print_}.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600
        )
        try:
            subprocess.Popen(
                argv,
                env=kept,
                cwd="/",
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                start_new_session=True,
            )
        finally:
            os.close(log)


def warm_up(env: Mapping[str, str], program: str, timeout: float = 15.0) -> bool:
    """Makes sure a zygote serves this interpreter's runs, starting one and waiting for it (bounded): `batch`
    does so before its first task, so that every task, not only the later ones, starts warm. False when none
    came up in time (the tasks then start cold, as they would without it)."""
    base = place.directory(env)
    if base is None:
        return False
    print_ = place.fingerprint(sys.path if sys.flags.safe_path else sys.path[1:])
    path = place.socket_path(base, print_)
    start(base, print_, env, program)
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True
