"""A session's checkpoint tracker, built one way for a running session (runtime.py) and for `sessions rewind` in
another process (its roots then read from the transcript's turn records); and what `sessions prune` removes of a
session's checkpoints: its ref in each root's repository, its private indexes, a shadow repository left unused."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from sprout_agent.checkpoints.git_run import GIT_TIMEOUT
from sprout_agent.checkpoints.timeline import Turn, turns_from
from sprout_agent.checkpoints.tracker import Tracker, repository_of
from sprout_agent.config.locations import Locations
from sprout_agent.core.events import Event
from sprout_agent.session import branches
from sprout_agent.session.store import SessionStore
from sprout_agent.trust import git_runner

REF_PREFIX = "refs/sprout-agent/"
_SESSION_ID = re.compile(r"[0-9a-f][0-9a-f-]{0,63}")  # what a ref or file name of ours may be made of


def store_dir(locations: Locations) -> Path | None:
    """Where the checkpoints' own files live (private indexes, stat caches, shadow repositories)."""
    return locations.data / "checkpoints" if locations.data is not None else None


def recorded_turns(transcript: Path | None) -> list[Turn]:
    return turns_from(branches.records_at(transcript)) if transcript is not None and transcript.exists() else []


def recorded_roots(turns: Iterable[Turn]) -> list[str]:
    """The roots a session checkpointed, in the order it first did."""
    return list(dict.fromkeys(root for turn in turns for root in (*turn.before, *turn.after)))


def tracker_for(
    locations: Locations,
    session_id: str,
    cwd: str,
    roots: Sequence[str],
    *,
    emit: Callable[[Event], None],
    transcript: SessionStore | None,
    turns: Sequence[Turn],
    read_only: Callable[[], bool] = lambda: False,
) -> Tracker | None:
    """The session's tracker, going on from `turns`; None without a data directory (nowhere to keep them)."""
    where = store_dir(locations)
    if where is None:
        return None
    private = [d for d in (locations.data, locations.sessions, locations.config, locations.logs, locations.cache) if d]
    return Tracker(
        roots,
        cwd,
        where,
        session_id,
        emit=emit,
        write_record=transcript.mark if transcript is not None else None,
        turns=turns,
        private=private,
        read_only=read_only,
    )


def forget(locations: Locations, session_id: str, roots: Iterable[str]) -> list[str]:
    """Removes a pruned session's checkpoints: `refs/sprout-agent/<id>` in each root's repository (exactly that
    ref: the user's own are never touched), its private indexes, its rewind journal, and a shadow repository no
    session uses any more. Their objects go with the repository's next `git gc`. Returns what could not be done."""
    where = store_dir(locations)
    if where is None or not _SESSION_ID.fullmatch(session_id):
        return []
    problems: list[str] = []
    untrusted = tuple(roots)  # where the session's commands could write: no git from a PATH entry there
    for root in untrusted:
        repository = repository_of(root, untrusted) if os.path.isdir(root) else None
        if repository is not None:
            problems += _delete_ref(repository, session_id, untrusted)
    for work_dir in sorted(where.glob("*/")) if where.is_dir() else []:
        (work_dir / f"{session_id}.index").unlink(missing_ok=True)
        shadow = work_dir / "shadow.git"
        if shadow.is_dir():
            problems += _delete_ref(str(shadow), session_id, untrusted)
        # No session checkpoints this root any more: its stat cache (and shadow repository) go too.
        if not any(work_dir.glob("*.index")) and not (shadow.is_dir() and _has_refs(str(shadow), untrusted)):
            shutil.rmtree(work_dir, ignore_errors=True)
    (where / f"{session_id}.rewind-journal.json").unlink(missing_ok=True)
    return problems


def _git(git_dir: str, untrusted: tuple[str, ...], *args: str) -> subprocess.CompletedProcess[bytes]:
    """`untrusted`: the session's roots, where its commands could write (no git from a PATH entry there)."""
    return git_runner.run([f"--git-dir={git_dir}", *args], timeout=GIT_TIMEOUT, untrusted=untrusted)


def _delete_ref(git_dir: str, session_id: str, untrusted: tuple[str, ...]) -> list[str]:
    ref = REF_PREFIX + session_id
    try:
        if _git(git_dir, untrusted, "show-ref", "--verify", "--quiet", ref).returncode != 0:
            return []  # never made here, or gone already
        done = _git(git_dir, untrusted, "update-ref", "-d", ref)
    except (OSError, subprocess.TimeoutExpired) as error:
        return [f"{git_dir}: cannot delete {ref}: {error}"]
    return [] if done.returncode == 0 else [f"{git_dir}: cannot delete {ref}: {os.fsdecode(done.stderr).strip()}"]


def _has_refs(git_dir: str, untrusted: tuple[str, ...]) -> bool:
    try:
        listed = _git(git_dir, untrusted, "for-each-ref", "--count=1", REF_PREFIX)
    except (OSError, subprocess.TimeoutExpired):
        return True  # when in doubt, keep it
    return listed.returncode != 0 or bool(listed.stdout.strip())
