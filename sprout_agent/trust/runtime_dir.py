"""Where the agent keeps the files only its user's processes may reach (the warm interpreter's socket): decided
here, below the sandbox, so that bubblewrap hides the very directory the warm interpreter listens in."""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path


def runtime_directory(env: Mapping[str, str]) -> Path:
    """`$XDG_RUNTIME_DIR/sprout-agent` when that directory is the user's own, else `sprout-agent-<uid>` in the
    temp directory; not created here, and not checked (`private` says whether it may be used)."""
    runtime = env.get("XDG_RUNTIME_DIR", "")
    if runtime.startswith("/") and private(Path(runtime)):
        return Path(runtime) / "sprout-agent"
    return Path(tempfile.gettempdir()) / f"sprout-agent-{os.getuid()}"


def private(path: Path) -> bool:
    """A real directory (not a link), ours, that nobody else may enter or write."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and info.st_mode & 0o077 == 0


def hidden_from_commands(env: Mapping[str, str]) -> tuple[str, ...]:
    """What a sandboxed command must not reach: the directory the warm interpreter listens in, wherever the
    environment puts it (a runtime directory anywhere, or the temp directory's when there is none)."""
    return tuple(dict.fromkeys((str(runtime_directory(env)), str(runtime_directory({})))))
