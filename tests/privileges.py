"""What this test process may do that a normal user's may not, read from its effective capabilities rather than
from its uid: root in a container may lack CAP_SYS_PTRACE, and a test's expectation follows what the kernel checks.
The processes a test starts (the agent, its commands) have the same capabilities: a normal user's have none."""

from __future__ import annotations

import os
from pathlib import Path

CAP_DAC_OVERRIDE = 1
CAP_SYS_PTRACE = 19
CAP_SYS_ADMIN = 21
CAP_CHECKPOINT_RESTORE = 40


def _effective() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("CapEff:"):
            return int(line.split()[1], 16)
    return 0


def _has(capability: int) -> bool:
    return bool(_effective() >> capability & 1)


def reads_any_process() -> bool:
    """May open what /proc shows only to who may ptrace a process (environ, cwd, mem) for any process: a
    non-dumpable one's (every agent process), and, under Landlock, one outside the command's domain; without it,
    only a dumpable process of its own user, and not from under Landlock."""
    return _has(CAP_SYS_PTRACE)


def writes_its_own_proc_files() -> bool:
    """May open its own /proc/self/oom_score_adj for writing once non-dumpable, as every agent process is: the
    kernel hands a non-dumpable process's /proc files to root (0644), so only uid 0 or CAP_DAC_OVERRIDE may."""
    return os.geteuid() == 0 or _has(CAP_DAC_OVERRIDE)


def chooses_a_pid() -> bool:
    """May write /proc/sys/kernel/ns_last_pid (mode 0666, yet the kernel asks for one of these capabilities)."""
    return _has(CAP_CHECKPOINT_RESTORE) or _has(CAP_SYS_ADMIN)
