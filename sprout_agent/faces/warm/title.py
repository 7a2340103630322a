"""What `ps`, `top` and /proc/PID/comm call our processes: a run `sprout-agent: run <session id> in <dir>`, the warm
interpreter `sprout-agent: warm interpreter <version>` (a warm run would otherwise show the zygote's command line).

The full title rewrites the command line's memory (the `setproctitle` package, imported only here, when a title is
first set); without it only the 15-byte command name (prctl PR_SET_NAME) changes. The title never takes the
environment block's room (SPT_NOENV): trust/secrecy.py reads and scrubs that block in place, so a title is as long
as the command line the process was started with (a warm run's, the zygote's, has ample room).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
from pathlib import Path
from typing import Any

RUN_COMM = "sprout-agent"  # /proc/PID/comm of a run, cold or warm: the command's name, as its relay shows
WARM_COMM = "sprout-warm"  # and of the warm interpreter: `top` and `ps -e` tell the two apart
PR_SET_NAME = 15

_setter: list[Any] = []  # setproctitle.setproctitle once imported; empty before, [None] where it cannot be


def name_run(session_id: str | None, cwd: Path | None = None) -> None:
    """A run: `sprout-agent: run <session id> in <dir>` (before the session has an id, without it)."""
    if cwd is None:
        try:
            cwd = Path.cwd()
        except OSError:  # a deleted directory: the run says so itself
            cwd = Path("?")
    name_process(f"sprout-agent: run {session_id} in {cwd}" if session_id else f"sprout-agent: run in {cwd}", RUN_COMM)


def name_warm(version: str) -> None:
    name_process(f"sprout-agent: warm interpreter {version}", WARM_COMM)


def name_process(title: str, comm: str) -> None:
    """Sets this process's title and command name (from its main thread: the name is the calling thread's);
    never fails: a title is for people, and a run goes on without one."""
    if not sys.platform.startswith("linux"):
        return
    setter = _title_setter()
    if setter is not None:
        with contextlib.suppress(Exception):
            setter(title)
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_NAME, comm.encode()[:15], 0, 0, 0)


def _title_setter() -> Any:
    if not _setter:
        os.environ["SPT_NOENV"] = "1"  # read once, when the module first sets a title: only now
        try:
            import setproctitle

            setproctitle.getproctitle()  # sets itself up (the room it may use) while SPT_NOENV is there
            _setter.append(setproctitle.setproctitle)
        except Exception:  # not installed, no wheel for this platform: the command name alone
            _setter.append(None)
        finally:
            os.environ.pop("SPT_NOENV", None)
    return _setter[0]
