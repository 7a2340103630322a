"""Everything a process inherits from the one that starts it, in one list, for the warm interpreter: what a warm
run takes from its caller (`CARRIED`: `of_this_process` reads it, `take_on` makes it the child's or refuses the
run, which then goes cold), what must already be the same in the caller and the warm interpreter (`MATCHED`:
`standing` reads it from /proc, `place.peer_is_like_us` compares), and what differs, with why (`DIFFERS`).
tests/test_warm_boundary.py holds a warm run's process state to a cold one's through these lists.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import sys
import time
from collections.abc import Mapping

CARRIED = {
    "argv": "the command line",
    "cwd": "the working directory",
    "env": "the environment (os.environ: what the run reads and what its children get)",
    "umask": "the file mode creation mask",
    "stdio": "stdin, stdout and stderr: the descriptors themselves, sent with `go` (wire.py)",
    "ignored": "every signal ignored (nohup, a supervisor's SIG_IGN)",
    "blocked": "the signal mask",
    "limits": "every resource limit (ulimit, a CI's caps)",
    "nice": "the nice value",
    "scheduler": "the scheduling policy and priority (chrt --batch, --idle)",
    "affinity": "the CPUs it may run on (taskset)",
    "cgroup": "the cgroup (systemd-run -p MemoryMax=…)",
    "oom_score_adj": "how readily the OOM killer picks it",
    "namespaces": "mount, pid, user, network, IPC, UTS, cgroup and time: stated by the caller, compared by the "
    "child (the kernel shows another process's only to who may ptrace it)",
    "root": "the root directory (chroot): stated by the caller as its device and inode, compared by the child",
}
# Read from /proc/<pid>/status for both ends of the socket (readable for any process of ours, a non-dumpable one
# included), with the depth of the pid namespace (NSpid), the security label and the login uid.
STATUS_FIELDS = (
    "Uid", "Gid", "Groups", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp",
    "Seccomp_filters",
)  # fmt: skip
MATCHED = {
    "credentials": "user and group ids, supplementary groups, every capability set",
    "confinement": "NoNewPrivs and seccomp (Landlock shows nowhere: NoNewPrivs, which it needs, stands for it)",
    "pid namespace depth": "NSpid: a peer in a nested pid namespace (bubblewrap's) is not one of ours",
    "label": "the LSM label (attr/current: AppArmor, SELinux)",
    "loginuid": "the audit login uid",
}
DIFFERS = {
    "tty": "no controlling terminal: a terminal is the controlling one of one session only, the caller's; the run "
    "writes to it through the descriptors it was handed (its commands, in sessions of their own, have none "
    "either way)",
    "session": "a session and process group of its own (the caller stays in yours and relays your signals)",
    "parent": "its parent is the warm interpreter, not the sprout-agent you started",
    "name": "its process name and /proc command line are the warm interpreter's (python …)",
    "environ block": "/proc/<pid>/environ is the warm interpreter's minimal start-up block; os.environ, which the "
    "run reads and passes on, is yours",
    "ioprio": "the I/O priority (ionice) is the warm interpreter's",
    "personality": "the execution domain (setarch), timer slack, securebits, NUMA memory policy (numactl) and "
    "core dump filter are the warm interpreter's",
    "audit session": "the audit session id (/proc/<pid>/sessionid) is the warm interpreter's",
    "descriptors": "none beyond stdin, stdout and stderr (the run passes none on either way: its children start "
    "with the rest closed)",
    "timers": "no alarm or interval timer of the caller's, and no signal pending for it",
}
NAMESPACES = ("mnt", "pid", "user", "net", "ipc", "uts", "cgroup", "time")
_LIMITS = {name: getattr(resource, name) for name in dir(resource) if name.startswith("RLIMIT_")}
_CATCHABLE = tuple(sorted(int(s) for s in signal.valid_signals() if s not in (signal.SIGKILL, signal.SIGSTOP)))


def of_this_process() -> dict[str, object]:
    """What this process would hand a run it started (`CARRIED`, the descriptors aside)."""
    umask = os.umask(0o077)
    os.umask(umask)
    return {
        "argv": sys.argv,
        "cwd": os.getcwd(),
        "env": dict(os.environ),
        "umask": umask,
        "ignored": [s for s in _CATCHABLE if signal.getsignal(s) is signal.SIG_IGN],
        "blocked": sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, [])),
        "limits": {name: list(resource.getrlimit(number)) for name, number in _LIMITS.items()},
        "nice": os.getpriority(os.PRIO_PROCESS, 0),
        "scheduler": [os.sched_getscheduler(0), os.sched_getparam(0).sched_priority],
        "affinity": sorted(os.sched_getaffinity(0)),
        "cgroup": _read_own("cgroup"),
        "oom_score_adj": _read_own("oom_score_adj").strip(),
        "namespaces": list(namespaces(None)),
        "root": _root(),
    }


def take_on(request: Mapping[str, object]) -> bool:
    """Makes the caller's state (`request`, from `of_this_process`) this process's; False (the run must go cold,
    and this process must run nothing) when any of it is malformed or cannot be taken on."""
    checked = _checked(request)
    if checked is None or list(namespaces(None)) != request.get("namespaces") or _root() != request.get("root"):
        return False  # a caller in other namespaces (`unshare`, a container) or a chroot would run in ours
    argv, cwd, env, umask = checked
    try:
        os.chdir(cwd)
        if not (_limits(request.get("limits")) and _scheduling(request) and _placement(request)):
            return False
        if not _signals(request.get("ignored"), request.get("blocked")):
            return False
    except (OSError, ValueError, TypeError, OverflowError):
        return False
    os.umask(umask)
    os.environ.clear()
    os.environ.update(env)
    time.tzset()
    sys.argv = argv
    return True


def _checked(request: Mapping[str, object]) -> tuple[list[str], str, dict[str, str], int] | None:
    """argv, cwd, environment and umask, when each is what a process can be given (no NUL anywhere, no `=` in a
    name, a umask of permission bits)."""
    argv, cwd, env, umask = request.get("argv"), request.get("cwd"), request.get("env"), request.get("umask")
    if not (isinstance(argv, list) and isinstance(cwd, str) and isinstance(env, dict) and isinstance(umask, int)):
        return None
    words: list[object] = list(argv)  # pyright: ignore[reportUnknownArgumentType]
    pairs: list[tuple[object, object]] = list(env.items())  # pyright: ignore[reportUnknownArgumentType, reportUnknownMemberType]
    if not all(isinstance(w, str) and "\0" not in w for w in words) or "\0" in cwd or not 0 <= umask <= 0o777:
        return None
    for name, value in pairs:
        if not (isinstance(name, str) and isinstance(value, str)) or not name or "=" in name:
            return None
        if "\0" in name or "\0" in value:
            return None
    return [str(w) for w in words], cwd, {str(k): str(v) for k, v in pairs}, umask


def _ints(value: object) -> list[int] | None:
    if not isinstance(value, list):
        return None
    items: list[object] = list(value)  # pyright: ignore[reportUnknownArgumentType]
    return [i for i in items if isinstance(i, int)] if all(isinstance(i, int) for i in items) else None


def _limits(limits: object) -> bool:
    if not isinstance(limits, dict):
        return False
    given: dict[object, object] = dict(limits)  # pyright: ignore[reportUnknownArgumentType]
    for name, number in _LIMITS.items():
        wanted = _ints(given.get(name))
        if wanted is None or len(wanted) != 2:
            return False
        if resource.getrlimit(number) != (wanted[0], wanted[1]):
            resource.setrlimit(number, (wanted[0], wanted[1]))
    return True


def _scheduling(request: Mapping[str, object]) -> bool:
    """The scheduling policy, then the nice value (which a policy change may reset) and the OOM score."""
    policy, nice, oom = _ints(request.get("scheduler")), request.get("nice"), request.get("oom_score_adj")
    if policy is None or len(policy) != 2 or not isinstance(nice, int) or not isinstance(oom, str):
        return False
    if [os.sched_getscheduler(0), os.sched_getparam(0).sched_priority] != policy:
        os.sched_setscheduler(0, policy[0], os.sched_param(policy[1]))
    if os.getpriority(os.PRIO_PROCESS, 0) != nice:
        os.setpriority(os.PRIO_PROCESS, 0, nice)
    if oom != _read_own("oom_score_adj").strip():
        with open("/proc/self/oom_score_adj", "w", encoding="ascii") as adjusted:
            adjusted.write(str(int(oom)))
    return True


def _placement(request: Mapping[str, object]) -> bool:
    affinity, cgroup = _ints(request.get("affinity")), request.get("cgroup")
    if affinity is None or not isinstance(cgroup, str):
        return False
    if set(affinity) != os.sched_getaffinity(0):
        os.sched_setaffinity(0, affinity)
    return cgroup == _read_own("cgroup") or _join(cgroup)


def _signals(ignored: object, blocked: object) -> bool:
    """The caller's ignored signals and signal mask; a signal ignored here but not there gets its default."""
    ignoring, blocking = _ints(ignored), _ints(blocked)
    if ignoring is None or blocking is None:
        return False
    for number in _CATCHABLE:
        if number in ignoring:
            signal.signal(number, signal.SIG_IGN)
        elif signal.getsignal(number) is signal.SIG_IGN:
            signal.signal(number, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, blocking)
    return True


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
    return _read_own("cgroup") == cgroup


def namespaces(proc: int | None) -> tuple[str | None, ...]:
    """The namespaces of this process (`proc` None) or of the one whose /proc directory `proc` is open on; None for
    one this process may not see (another process's, when it is not ours to ptrace: a non-dumpable one)."""
    found: list[str | None] = []
    for name in NAMESPACES:
        try:
            found.append(os.readlink(f"ns/{name}", dir_fd=proc) if proc is not None else _own_ns(name))
        except FileNotFoundError:
            found.append("-")  # a namespace type this kernel does not have
        except OSError:
            found.append(None)
    return tuple(found)


def _root() -> list[int]:
    found = os.stat("/")
    return [found.st_dev, found.st_ino]


def _own_ns(name: str) -> str:
    return os.readlink(f"/proc/self/ns/{name}")


def standing(proc: int) -> dict[str, str] | None:
    """`MATCHED`, for the process whose /proc directory `proc` is open on; None when it cannot be read (gone)."""
    try:
        status = _read(proc, "status")
    except OSError:
        return None
    found: dict[str, str] = {}
    for entry in status.splitlines():
        name, _, value = entry.partition(":")
        if name in STATUS_FIELDS:
            found[name] = " ".join(value.split())
        elif name == "NSpid":
            found["pid namespace depth"] = str(len(value.split()))
    for name, file in (("label", "attr/current"), ("loginuid", "loginuid")):
        try:
            found[name] = _read(proc, file).strip("\0\n ")
        except (FileNotFoundError, IsADirectoryError):
            found[name] = "-"  # no audit, no such file in this kernel
        except OSError as error:
            if error.errno != 22:  # EINVAL: no LSM that labels processes
                return None
            found[name] = "-"
    return found if "NoNewPrivs" in found and "Uid" in found else None


def confined(state: Mapping[str, str]) -> bool:
    """Under no_new_privs, as every sandboxed command is (bubblewrap sets it, Landlock needs it). A seccomp
    filter alone is no mark of one: a container's root runs under one (docker's default), and is matched."""
    return state.get("NoNewPrivs") != "0"


def _read(proc: int, name: str) -> str:
    fd = os.open(name, os.O_RDONLY | os.O_CLOEXEC, dir_fd=proc)
    try:
        return os.read(fd, 1 << 16).decode("utf-8", "replace")
    finally:
        os.close(fd)


def _read_own(name: str) -> str:
    with contextlib.suppress(OSError), open(f"/proc/self/{name}", encoding="utf-8") as own:
        return own.read()
    return ""
