"""A second local account for the tests in which another user of the machine is the attacker: `sprout-other`,
made with useradd when the tests run as root (and kept for the next run); None where that cannot be done (not
root, no useradd), and those tests skip. `shared_directory` is a place both accounts can write, as /tmp is."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.bounds import bounded

NAME = "sprout-other"


@dataclass(frozen=True)
class Account:
    uid: int
    gid: int

    def run(self, script: str, cwd: Path) -> None:
        """`script` (sh) run as this account, as that user would run it at their own shell."""
        subprocess.run(
            ["/bin/sh", "-c", script],
            cwd=cwd,
            user=self.uid,
            group=self.gid,
            extra_groups=[],
            env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"},
            check=True,
            capture_output=True,
            timeout=bounded(30),
        )


def other_account() -> Account | None:
    if os.geteuid() != 0:  # only root may run a process as another account: an account made by an earlier root run
        return None  # (kept for the next one) is no use to a normal user's run
    with contextlib.suppress(KeyError):
        entry = pwd.getpwnam(NAME)
        return Account(entry.pw_uid, entry.pw_gid)
    useradd = shutil.which("useradd")
    if useradd is None:
        return None
    command = [useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", NAME]
    subprocess.run(command, capture_output=True, timeout=bounded(30), check=False)  # 9: another worker made it
    with contextlib.suppress(KeyError):
        entry = pwd.getpwnam(NAME)
        return Account(entry.pw_uid, entry.pw_gid)
    return None


def other_account_or_skip() -> Account:
    """The second account, or the test is skipped where none can be made (not root, or no useradd)."""
    import pytest

    account = other_account()
    if account is None:
        pytest.skip("no second local account (not root, or no useradd)")
    return account


@contextlib.contextmanager
def shared_directory() -> Iterator[Path]:
    """A directory under /tmp that every account can write, sticky as /tmp is; removed afterwards (by root,
    whoever made what is in it)."""
    path = Path(tempfile.mkdtemp(prefix="sprout-shared-", dir="/tmp"))
    try:
        path.chmod(0o1777)
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
