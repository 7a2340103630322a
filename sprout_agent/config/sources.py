"""Which config files a run reads: `--config`, `--mcp-config` (files or inline JSON), the project's `.mcp.json`
(the nearest one in the working directory or any directory above it) and the user's own file.

`--config` files replace the lookup (ours); `--mcp-config` adds to it (Claude Code's), and with
`--strict-mcp-config` only the `--config`/`--mcp-config` servers are read (no project, no user file).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sprout_agent.trust.write_policy import anybody_may_write

PROJECT_FILE = ".mcp.json"
USER_FILE = "mcp.json"  # in platformdirs user_config_dir("sprout-agent"): ~/.config/sprout-agent on Linux


@dataclass(frozen=True, slots=True)
class Sources:
    files: tuple[Path, ...]  # in reading order
    project: Path | None = None  # the looked-up project file (its servers need consent), if read
    overriding: frozenset[Path] = frozenset()  # files whose servers replace earlier ones of the same name
    inline: dict[Path, str] = field(default_factory=dict[Path, str])  # --mcp-config JSON, by a made-up path
    notices: tuple[str, ...] = ()


def inline_json(value: str) -> bool:
    """A `--mcp-config` value that is JSON text rather than a path (what the Agent SDK passes)."""
    return value.lstrip().startswith("{")


def find_sources(
    explicit: Sequence[Path],
    cwd: Path,
    user_config_dir: Path | None,
    mcp_configs: Sequence[str] = (),
    *,
    strict: bool = False,
) -> Sources:
    """The files to read, in order; `--mcp-config` values named `--mcp-config[N]` when inline."""
    added: list[Path] = []
    inline: dict[Path, str] = {}
    for number, value in enumerate(mcp_configs, 1):
        if inline_json(value):
            path = cwd / f"--mcp-config[{number}]"
            inline[path] = value
            added.append(path)
        else:
            added.append(cwd / Path(value).expanduser())
    if explicit or strict:
        files = (*(cwd / path for path in explicit), *added)
        return Sources(files, None, frozenset(files), inline)
    project, notices = project_file(cwd)
    looked_up = tuple(p for p in (project, user_file(user_config_dir)) if p is not None)
    return Sources((*looked_up, *added), project, frozenset(added), inline, notices)


def project_file(cwd: Path) -> tuple[Path | None, tuple[str, ...]]:
    """The nearest `.mcp.json` in `cwd` or a directory above it (git or not, as Claude Code looks).

    A file in a directory anybody may write (/tmp) or owned by somebody else is skipped with a notice: it is
    nobody's project, and a planted file would otherwise be one "yes" away from running."""
    notices: list[str] = []
    for directory in (cwd, *cwd.parents):
        candidate = directory / PROJECT_FILE
        if not candidate.is_file():
            continue
        why = untrusted_place(candidate)
        if why is None:
            return candidate, tuple(notices)
        notices.append(f"{candidate}: not read ({why})")
    return None, tuple(notices)


def untrusted_place(path: Path) -> str | None:
    """Why a repository file at `path` is nobody's project (its directory writable by anybody, the file owned by
    another user), or None. The one check for `.mcp.json` and `.env` alike."""
    try:
        file_stat = path.stat()
    except OSError as error:
        return f"cannot check it: {error.strerror}"
    uid = os.getuid() if hasattr(os, "getuid") else None
    if uid is not None and file_stat.st_uid not in (uid, 0):
        return "owned by another user"
    if anybody_may_write(str(path.parent)):
        return "its directory is writable by anybody"
    return None


def user_file(user_config_dir: Path | None) -> Path | None:
    if user_config_dir is None or not (user_config_dir / USER_FILE).is_file():
        return None
    return user_config_dir / USER_FILE
