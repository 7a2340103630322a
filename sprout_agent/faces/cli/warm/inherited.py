"""What a process inherits besides its environment, which a warm run must take from its caller rather than from
the zygote: the signals it ignores (`nohup`), its resource limits (`ulimit`, a CI's caps), its nice value, its
CPU affinity and its cgroup (`systemd-run -p MemoryMax=…`). The client reads them (`of_this_process`); the child
makes them its own (`take_on`), or refuses the run when it cannot (a limit above the zygote's hard one, a nice
value below its own, a cgroup it may not join), and the run then goes cold, where it gets them as any process
does.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
from collections.abc import Iterable, Mapping

_LIMITS = {name: getattr(resource, name) for name in dir(resource) if name.startswith("RLIMIT_")}


def of_this_process(relayed: Iterable[signal.Signals]) -> dict[str, object]:
    return {
        "ignored": sorted(int(s) for s in relayed if signal.getsignal(s) is signal.SIG_IGN),
        "limits": {name: list(resource.getrlimit(number)) for name, number in _LIMITS.items()},
        "nice": os.getpriority(os.PRIO_PROCESS, 0),
        "affinity": sorted(os.sched_getaffinity(0)),
        "cgroup": _cgroup(),
    }


def take_on(state: Mapping[str, object]) -> bool:
    """Makes the caller's inherited state this process's; False (the run must go cold) when it cannot."""
    try:
        return _limits(state.get("limits")) and _nice(state.get("nice")) and _rest(state)
    except (OSError, ValueError, TypeError, OverflowError):
        return False


def _limits(limits: object) -> bool:
    if not isinstance(limits, dict):
        return False
    for name, number in _LIMITS.items():
        wanted = limits.get(name)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        if not (isinstance(wanted, list) and len(wanted) == 2 and all(isinstance(v, int) for v in wanted)):  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
            return False
        pair = (int(wanted[0]), int(wanted[1]))  # pyright: ignore[reportUnknownArgumentType]
        if resource.getrlimit(number) != pair:
            resource.setrlimit(number, pair)
    return True


def _nice(nice: object) -> bool:
    if not isinstance(nice, int):
        return False
    if os.getpriority(os.PRIO_PROCESS, 0) != nice:
        os.setpriority(os.PRIO_PROCESS, 0, nice)
    return True


def _rest(state: Mapping[str, object]) -> bool:
    affinity, cgroup, ignored = state.get("affinity"), state.get("cgroup"), state.get("ignored")
    if not (isinstance(affinity, list) and isinstance(cgroup, str) and isinstance(ignored, list)):
        return False
    cpus = {int(c) for c in affinity}  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    if cpus != os.sched_getaffinity(0):
        os.sched_setaffinity(0, cpus)
    if cgroup != _cgroup() and not _join(cgroup):
        return False
    for number in ignored:  # pyright: ignore[reportUnknownVariableType]
        signal.signal(signal.Signals(int(number)), signal.SIG_IGN)  # pyright: ignore[reportUnknownArgumentType]
    return True


def _cgroup() -> str:
    with contextlib.suppress(OSError), open("/proc/self/cgroup", encoding="utf-8") as own:
        return own.read()
    return ""


def _join(cgroup: str) -> bool:
    """Moves this process into the caller's cgroup (v2: one `0::/path` line); False when it may not."""
    lines = cgroup.splitlines()
    if len(lines) != 1 or not lines[0].startswith("0::/") or "\0" in lines[0] or "/.." in lines[0]:
        return False
    procs = os.path.join("/sys/fs/cgroup", lines[0][4:].lstrip("/"), "cgroup.procs")
    try:
        with open(procs, "w", encoding="ascii") as joined:
            joined.write("0")
    except OSError:
        return False
    return _cgroup() == cgroup
