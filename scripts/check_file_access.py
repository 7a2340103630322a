"""Fails when a module of sprout_agent opens a file other than through the one reader and writer (run by scripts/check).

Usage: python scripts/check_file_access.py [PACKAGE_DIR ...]   (default: sprout_agent)

Every file the agent opens for the model or a repository goes through sprout_agent/trust/opening.py, which resolves
the path once, walks it without following a link and applies the deny list and the write policy. This check reads
each module with `ast` (nothing is imported) and reports, with file and line, a call of the builtin `open`,
`os.open`, `io.open`, `Path.open` / `.read_text` / `.read_bytes` / `.write_text` / `.write_bytes`, or an import of
`open` from `os` or `io`, anywhere but in opening.py and the modules of `OWN_FILES`, which open only the agent's own
files (never a path a model, a repository or a server names) or kernel files, each with its reason. A module of
another part whose opens are that part's to move is listed too, with the part that owns it (ELSEWHERE).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

READER = "sprout_agent/trust/opening.py"

# Modules that open only the agent's own files or the kernel's, with why; a new entry needs a reason as good.
OWN_FILES = {
    "sprout_agent/session/store.py": "the session store: transcripts under the agent's data directory (0600/0700)",
    "sprout_agent/session/branches.py": "copies of the agent's own transcripts (forks) in the session store",
    "sprout_agent/session/index.py": "the session store's index of its own transcripts",
    "sprout_agent/model/facts.py": "the model facts cache in the agent's data directory",
    "sprout_agent/model/rate_gate.py": "a batch's rate-limit gate in its --out (SPROUT_AGENT_RATE_GATE, no .env's)",
    "sprout_agent/config/consent.py": "the user's approvals of project servers, in the agent's data directory",
    "sprout_agent/mcp/oauth/store.py": "OAuth tokens the agent stores for the user, 0600 in its data directory",
    "sprout_agent/config/mcp_import.py": "`mcp import`: the user's own Claude config, read at the user's command",
    "sprout_agent/checkpoints/rewind.py": "the rewind's journal in the agent's checkpoint directory",
    "sprout_agent/checkpoints/git_store.py": "the checkpoint store's stat cache and scratch files in its own directory",
    "sprout_agent/checkpoints/blobs.py": "a link's target as a scratch file in the checkpoint store's own directory",
    "sprout_agent/trust/private_files.py": "the agent's own logs and prompt history, 0600 in 0700 directories",
    "sprout_agent/faces/warm/place.py": "the warm runtime directory (0700), /proc/self, a peer's /proc/<pid>",
    "sprout_agent/faces/warm/starting.py": "the warm interpreter's lock and log in its runtime directory",
    "sprout_agent/faces/warm/zygote.py": "the warm interpreter's lock in its runtime directory",
    "sprout_agent/faces/warm/live.py": (
        "the warm interpreters' locks in their runtime directory (0700, through its descriptor, no link followed) "
        "and their /proc/<pid> (comm, stat, status, children), /proc/uptime"
    ),
    "sprout_agent/faces/warm/inherited.py": (
        "/proc/self (cgroup, oom_score_adj), the cgroup's procs file, and a warm peer's /proc/<pid> (status, "
        "attr/current, loginuid) through a descriptor of its directory"
    ),
    "sprout_agent/model/cassettes/recorder.py": "--record DIR: a new cassette (O_EXCL, no link followed) in DIR",
    "sprout_agent/testing.py": "run_cassette: its config file, in its scratch directory (its own, or its caller's)",
    "sprout_agent/faces/cli/claude_flags.py": "--system-prompt-file: the file the user names on the command line",
    "sprout_agent/config/output_schema.py": "--json-schema: the file the user names on the command line",
    "sprout_agent/trust/secrecy.py": "/proc/self/stat: where the process's own environment block is, to hide it",
    "sprout_agent/trust/landlock.py": "its own source file, and the writable roots opened O_PATH for the ruleset",
    "sprout_agent/core/processes.py": "/proc/<pid>/stat of the agent's own children",
    "sprout_agent/tools/_procs.py": "/proc/<pid>/environ of the dev server's own background commands",
    "sprout_agent/faces/acp/lines.py": "/dev/null",
    "sprout_agent/batch/private.py": "batch --out: the private writer (0600 in 0700, no link followed, others refused)",
    "sprout_agent/batch/outdir.py": "batch --out through private.py; another batch's (a shard's) through opening.py",
    "sprout_agent/batch/runner.py": "OutDir.open(): batch --out through private.py (no file opened here)",
    "sprout_agent/batch/summary.py": "OutDir.open(): the merged --out through private.py; shards through outdir.py",
    "sprout_agent/batch/tasks.py": "the task file the user names on the command line",
    "sprout_agent/batch/workdir.py": "a task's repository opened as a directory, to flock it; --out via private.py",
    "sprout_agent/faces/pages/batch_report.py": "a batch --out directory checked as the user's own (PrivateDir) first",
    "sprout_agent/faces/pages/entries.py": "transcripts of the session store or of a checked batch --out directory",
    "sprout_agent/session/claude_transcript.py": (
        "PrivateDir.open(): the Claude Code copy of a transcript under CLAUDE_CONFIG_DIR (the real environment's, "
        "never .env's) through private.py"
    ),
}
# Opens in another part of the work, listed until that part moves them onto the reader and writer.
ELSEWHERE: dict[str, str] = {}
_PATH_METHODS = frozenset({"read_text", "read_bytes", "write_text", "write_bytes"})
_NOT_PATHS = frozenset({"webbrowser", "RootStore"})  # `.open(` of these is no file open (a browser, a classmethod)


def _violations(tree: ast.AST) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        opened = isinstance(node, ast.ImportFrom) and any(alias.name == "open" for alias in node.names)
        if isinstance(node, ast.ImportFrom) and opened and node.module in ("os", "io"):
            yield node.lineno, f"imports open from {node.module}"
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id == "open":
            yield node.lineno, "open()"
        elif isinstance(func, ast.Attribute) and func.attr in _PATH_METHODS:
            yield node.lineno, f".{func.attr}()"
        elif isinstance(func, ast.Attribute) and func.attr == "open":
            receiver = func.value.id if isinstance(func.value, ast.Name) else None
            if receiver not in _NOT_PATHS:
                yield node.lineno, f"{receiver or '…'}.open()"


def _allowed(relative: str) -> bool:
    return relative == READER or relative in OWN_FILES or any(relative.startswith(p) for p in ELSEWHERE)


def check(packages: list[Path], root: Path) -> list[str]:
    found: list[str] = []
    for package in packages:
        for path in sorted(package.rglob("*.py")):
            real = path.resolve()
            relative = real.relative_to(root).as_posix() if real.is_relative_to(root) else real.as_posix()
            if _allowed(relative):
                continue
            for line, what in sorted(_violations(ast.parse(path.read_text(encoding="utf-8"), str(path)))):
                found.append(f"{relative}:{line}: {what}: open files through sprout_agent/trust/opening.py")
    return found


def unneeded(root: Path, listed: Mapping[str, str]) -> list[str]:
    """Listed modules that open nothing (any more): an entry left behind would let a later open there pass unseen."""
    return [
        name
        for name in listed
        if (root / name).exists() and not any(_violations(ast.parse((root / name).read_text(encoding="utf-8"))))
    ]


def main(argv: list[str]) -> int:
    root = Path(__file__).resolve().parent.parent
    packages = [Path(arg).resolve() for arg in argv] or [root / "sprout_agent"]
    stale = [name for name in OWN_FILES if not (root / name).exists()]
    found = check(packages, root) + [f"{name}: listed in OWN_FILES but gone: remove it" for name in stale]
    found += [f"{name}: listed in OWN_FILES but opens no file: remove it" for name in unneeded(root, OWN_FILES)]
    for line in found:
        print(line, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
