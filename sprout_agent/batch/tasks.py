"""The task file: one JSON object per line, checked whole before anything runs; ids become file names; shards."""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sprout_agent.config.guarded_env import task_refused_because
from sprout_agent.core.errors import UsageError

_KNOWN = frozenset({"id", "prompt", "cwd", "repo", "config", "model", "max_turns", "max_budget_usd", "env", "timeout"})
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
SHARD_INDEX_VARIABLES = ("SPROUT_AGENT_SHARD_INDEX", "JOB_COMPLETION_INDEX", "SLURM_ARRAY_TASK_ID")


@dataclass(frozen=True, slots=True)
class Checkout:
    """A tree at a given commit, and what its patch leaves out (a SWE-bench instance: batch/swebench.py)."""

    commit: str  # a full object id, checked by the reader
    clone_url: str | None = None  # no local repository: a bare clone of this, made once per batch, is the repo
    leave_out: tuple[str, ...] = ()  # git pathspecs the patch does not cover


@dataclass(frozen=True, slots=True)
class Task:
    id: str
    name: str  # the id as a file name: no separators, no leading dot
    prompt: str
    cwd: Path | None = None
    repo: str | None = None  # a local repository (absolute path) or a URL to clone
    config: tuple[Path, ...] = ()
    model: str | None = None
    max_turns: int | None = None
    max_budget_usd: float | None = None
    timeout: float | None = None
    env: Mapping[str, str] = field(default_factory=dict[str, str])
    checkout: Checkout | None = None  # `repo` at this commit (instead of its HEAD), and the task's patch kept


def file_name(task_id: str) -> str:
    """A task id as a file name: anything but letters, digits, `.`, `_` and `-` becomes `_`, and no leading dot,
    so `../../etc/passwd` becomes `_._.._etc_passwd`, a name inside the out directory."""
    name = _UNSAFE.sub("_", task_id)[:120]
    return "_" + name[1:] if name.startswith(".") else name


LineReader = Callable[[str, str, Path], Task]  # (where, the line, the file's directory) -> its task, or UsageError


def load_tasks(path: Path, read_line: LineReader | None = None) -> list[Task]:
    """Every task of the file, or a UsageError naming the first bad line (nothing runs on a bad file). `read_line`:
    another line format read into tasks (SWE-bench instances); the ids' rules are the same."""
    read_line = read_line or _task
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(f"cannot read the task file {path}: {error}") from None
    tasks: list[Task] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path.name} line {number}"
        task = read_line(where, line, path.parent.resolve())
        first = seen.get(task.name)
        if first is not None:
            raise UsageError(f"{where}: duplicate task id {task.id!r} (as a file name, the same as line {first})")
        seen[task.name] = number
        tasks.append(task)
    if not tasks:
        raise UsageError(f"{path}: no tasks")
    return tasks


def _task(where: str, line: str, base: Path) -> Task:
    try:
        raw: Any = json.loads(line)
    except ValueError as error:
        raise UsageError(f"{where}: not JSON ({error})") from None
    if not isinstance(raw, dict):
        raise UsageError(f"{where}: a task is a JSON object")
    obj: dict[str, Any] = raw  # pyright: ignore[reportUnknownVariableType]
    if unknown := sorted(set(obj) - _KNOWN):
        if "instance_id" in obj:  # a dataset row given as a task file
            raise UsageError(f"{where}: a SWE-bench instance, not a task: run `batch --swebench` on this file")
        raise UsageError(f"{where}: unknown field {unknown[0]!r} (fields: {', '.join(sorted(_KNOWN))})")
    task_id = obj.get("id")
    if isinstance(task_id, int) and not isinstance(task_id, bool):
        task_id = str(task_id)
    if not isinstance(task_id, str) or not task_id.strip() or file_name(task_id).strip("_") == "":
        raise UsageError(f"{where}: `id` must be a non-empty string or integer")
    prompt = obj.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise UsageError(f"{where}: `prompt` must be a non-empty string")
    if "cwd" in obj and "repo" in obj:
        raise UsageError(f"{where}: give `cwd` or `repo`, not both")
    return Task(
        id=task_id,
        name=file_name(task_id),
        prompt=prompt,
        cwd=_cwd(where, base / _string(where, obj, "cwd")) if "cwd" in obj else None,
        repo=_repo(where, _string(where, obj, "repo"), base) if "repo" in obj else None,
        config=_configs(where, obj.get("config"), base),
        model=_string(where, obj, "model") if "model" in obj else None,
        max_turns=_number(where, obj, "max_turns", int),
        max_budget_usd=_number(where, obj, "max_budget_usd", float),
        timeout=_number(where, obj, "timeout", float),
        env=_env(where, obj.get("env")),
    )


def _string(where: str, obj: dict[str, Any], key: str) -> str:
    value = obj[key]
    if not isinstance(value, str) or not value or "\0" in value:
        raise UsageError(f"{where}: `{key}` must be a non-empty string")
    return value


def _cwd(where: str, path: Path) -> Path:
    """A task's working directory is a writable root of its commands and tools: never `/`, your home directory or
    one that holds it, which would make everything of yours writable to a task a file of data chose."""
    real, home = os.path.realpath(path), os.path.realpath(os.path.expanduser("~"))
    if real == "/" or home == real or home.startswith(real.rstrip("/") + "/"):
        raise UsageError(f"{where}: `cwd` {str(path)!r} would make {real!r} (and your home directory) writable to "
                         "the task; give a project directory")  # fmt: skip
    return path


def _repo(where: str, value: str, base: Path) -> str:
    """A URL (or scp-like `git@host:path`) as given; a local path made absolute against the task file. Never one
    starting with `-`, which git would take for an option (`--upload-pack=…` runs a program)."""
    if value.startswith("-"):
        raise UsageError(f"{where}: `repo` may not start with '-' (git would read it as an option): {value[:80]!r}")
    if "://" in value or re.match(r"^[\w.-]+@[\w.-]+:", value):
        return value
    return str((base / value).resolve())


def _configs(where: str, value: Any, base: Path) -> tuple[Path, ...]:
    items: list[Any] = [value] if isinstance(value, str) else value if isinstance(value, list) else []  # pyright: ignore[reportUnknownVariableType]
    if value is not None and (not items or not all(isinstance(item, str) and item for item in items)):
        raise UsageError(f"{where}: `config` must be a path or a list of paths")
    return tuple(base / item for item in items)


def _number(where: str, obj: dict[str, Any], key: str, kind: type[int] | type[float]) -> Any:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0 or (kind is int and value < 1):
        raise UsageError(f"{where}: `{key}` must be a positive number")
    if kind is int and value != int(value):
        raise UsageError(f"{where}: `{key}` must be a whole number")
    return kind(value)


def _env(where: str, value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise UsageError(f"{where}: `env` must be an object of strings")
    env: dict[str, str] = {}
    for name, text in value.items():  # pyright: ignore[reportUnknownVariableType]
        if not isinstance(name, str) or not isinstance(text, str) or not name or "=" in name or "\0" in name + text:
            raise UsageError(f"{where}: `env` must be an object of strings")
        # A task file is often generated from data nobody vetted (an issue list): its `env` gets the rules of a
        # project's `.env`, and a little more (guarded_env.py).
        if why := task_refused_because(name):
            raise UsageError(f"{where}: `env` may not set {name} (it decides {why}; export it for the whole batch)")
        env[name] = text
    return env


def shard_of(task_id: str, count: int) -> int:
    """The shard a task belongs to: a hash of its id, so the split never depends on line order or machine."""
    return int.from_bytes(hashlib.sha256(task_id.encode()).digest()[:8], "big") % count


def parse_shard(spec: str, environ: Mapping[str, str]) -> tuple[int, int]:
    """`INDEX/COUNT`, or `COUNT` with INDEX from the first of SHARD_INDEX_VARIABLES that is set (a Slurm array
    index counts from SLURM_ARRAY_TASK_MIN)."""
    index_text, slash, count_text = spec.partition("/")
    if not slash:
        index_text, count_text = _index_from(environ), spec
    try:
        index, count = int(index_text), int(count_text)
    except ValueError:
        raise UsageError(f"--shard {spec}: expected INDEX/COUNT or COUNT, whole numbers") from None
    if count < 1 or not 0 <= index < count:
        raise UsageError(f"--shard {spec}: INDEX must be from 0 to COUNT-1 (got {index} of {count})")
    return index, count


def _index_from(environ: Mapping[str, str]) -> str:
    for name in SHARD_INDEX_VARIABLES:
        value = environ.get(name, "").strip()
        if value:
            if name == "SLURM_ARRAY_TASK_ID" and environ.get("SLURM_ARRAY_TASK_MIN", "").strip().isdigit():
                return str(int(value) - int(environ["SLURM_ARRAY_TASK_MIN"]))
            return value
    raise UsageError(f"--shard COUNT needs the index in one of {', '.join(SHARD_INDEX_VARIABLES)} (or INDEX/COUNT)")
