"""SWE-bench in a batch: the dataset's JSONL rows read as tasks (each in a tree of its repository at `base_commit`),
and, at the end, the predictions the harness evaluates (`preds.json`, `predictions.jsonl`) (docs/benchmarks.md)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sprout_agent.batch.outcome import FINISHED, as_object
from sprout_agent.batch.tasks import Checkout, Task, file_name, load_tasks
from sprout_agent.core.errors import UsageError

GITHUB = "https://github.com"
PREDICTIONS = ("preds.json", "predictions.jsonl")
# `owner/name` as GitHub spells them: no separator, no `..`, no leading `-` or `.`, so `owner__name` is one name.
_REPO = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)*/[A-Za-z0-9_][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)*")
_COMMIT = re.compile(r"[0-9a-f]{40}")
# A test file, by its path (git's glob pathspecs, `**/` also matching the top): a directory named test, tests,
# testing or __tests__ anywhere, or a file named as pytest, unittest, Go, Jest and Mocha name theirs.
TEST_FILES = (
    "**/test/**", "**/tests/**", "**/testing/**", "**/__tests__/**", "**/test_*.py", "**/*_test.py", "**/tests.py",
    "**/conftest.py", "**/*_test.go", "**/*.test.*", "**/*.spec.*",
)  # fmt: skip
PROMPT = """\
You are in a checkout of the repository {repo}. Resolve the issue below by changing the repository's source files \
in this directory. Make the change general and consistent with the code around it; you may add or run tests to \
check it. Your changes are read from this directory when you finish, so leave them here.

<issue>
{problem_statement}
</issue>
"""


@dataclass(frozen=True, slots=True)
class Swebench:
    """`batch --swebench`'s choices: where the repositories are, and what the predictions hold."""

    repos: Path | None = None  # local clones, `owner__name` (or `owner__name.git`); None: cloned from GitHub
    leave_out_tests: bool = False
    model_name: str = "sprout-agent"


def load_instances(path: Path, options: Swebench) -> list[Task]:
    """Every instance of a SWE-bench JSONL file as a task, or a UsageError naming the first bad row."""
    if options.repos is not None and not options.repos.is_dir():
        raise UsageError(f"--swebench-repos {options.repos}: not a directory")

    def read_line(where: str, line: str, base: Path) -> Task:
        return _instance(where, line, options)

    return load_tasks(path, read_line)


def _instance(where: str, line: str, options: Swebench) -> Task:
    try:
        raw: Any = json.loads(line)
    except ValueError as error:
        raise UsageError(f"{where}: not JSON ({error})") from None
    row = as_object(raw)
    if row is None:
        raise UsageError(f"{where}: a SWE-bench instance is a JSON object")
    for key in ("instance_id", "repo", "base_commit", "problem_statement"):
        if not isinstance(row.get(key), str) or not row[key].strip():
            raise UsageError(f"{where}: `{key}` must be a non-empty string (a SWE-bench instance)")
    instance_id, repo, commit = row["instance_id"], row["repo"], row["base_commit"]
    if file_name(instance_id).strip("_") == "":
        raise UsageError(f"{where}: `instance_id` {instance_id[:80]!r} names no file")
    if not _REPO.fullmatch(repo):
        raise UsageError(f"{where}: `repo` must be GitHub's owner/name, got {repo[:80]!r}")
    if not _COMMIT.fullmatch(commit):
        raise UsageError(f"{where}: `base_commit` must be a full commit id (40 hex digits), got {commit[:80]!r}")
    leave_out = tuple(f":(exclude,glob){glob}" for glob in TEST_FILES) if options.leave_out_tests else ()
    local, url = _source(where, repo, options.repos)
    return Task(
        id=instance_id,
        name=file_name(instance_id),
        prompt=PROMPT.format(repo=repo, problem_statement=row["problem_statement"].strip()),
        repo=local,
        checkout=Checkout(commit, clone_url=url, leave_out=leave_out),
    )


def _source(where: str, repo: str, repos: Path | None) -> tuple[str | None, str | None]:
    """(the local repository, None) from --swebench-repos, or (None, the URL the batch clones once)."""
    key = repo.replace("/", "__")
    if repos is None:
        return None, f"{GITHUB}/{repo}.git"
    for name in (key, f"{key}.git"):
        if (repos / name).is_dir():
            return str((repos / name).resolve()), None
    raise UsageError(f"{where}: no clone of {repo} in --swebench-repos ({repos / key} or {key}.git)")


def clone_name(url: str) -> str:
    """The cache's name for a repository's bare clone in `<out>/repos`: `owner__name.git`."""
    owner, name = url.removesuffix(".git").rsplit("/", 2)[-2:]
    return f"{owner}__{name}.git"


def predictions(
    tasks: list[Task], records: dict[str, dict[str, Any]], patches: dict[str, str], model: str
) -> list[dict[str, str]]:
    """One prediction per instance that finished (ok, failed or timed out: an interrupted one runs again), in the
    file's order: its patch as the task left it (empty when it changed nothing or its tree could not be made)."""
    found: list[dict[str, str]] = []
    for task in tasks:
        if (records.get(task.id) or {}).get("status") in FINISHED:
            patch = patches.get(task.name, "")
            found.append({"instance_id": task.id, "model_name_or_path": model, "model_patch": patch})
    return found


def prediction_files(found: list[dict[str, str]]) -> dict[str, str]:
    """The two forms the harness reads: a JSON object keyed by instance_id, and one prediction per line."""
    keyed = {p["instance_id"]: p for p in found}
    lines = "".join(json.dumps(p, ensure_ascii=False) + "\n" for p in found)
    return {PREDICTIONS[0]: json.dumps(keyed, indent=1, ensure_ascii=False) + "\n", PREDICTIONS[1]: lines}
