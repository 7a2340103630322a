"""One task, run to its end: its tree prepared, `sprout-agent -p` as a subprocess (stream-json on stdout), a time
limit and a stop request honoured by signals, the record built. The same function runs in a thread of the local
runner and inside a Ray task."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sprout_agent.batch import workdir
from sprout_agent.batch.outcome import checkpoints, last_result, read_result, status_of
from sprout_agent.batch.tasks import Task
from sprout_agent.core.processes import die_with_us
from sprout_agent.trust.child_argv import with_operands
from sprout_agent.trust.secrecy import harden

GRACE_SECONDS = 15.0  # after SIGINT or SIGTERM the agent reports and ends its servers; then SIGKILL
POLL_SECONDS = 0.25  # how often a waiting runner looks at the stop request and the clock (the wait ends at exit)


@dataclass(frozen=True, slots=True)
class Job:
    """Everything a run needs, picklable (a Ray task gets it as its argument)."""

    task: Task
    out: Path  # the batch's --out: our own tree goes in <out>/work/<name>
    args: tuple[str, ...]  # the batch's defaults for every task (-p flags)
    # Over the environment of the process that runs the task (this one, or a Ray worker's): the API key is never
    # part of a Job, so it never travels through Ray.
    env: dict[str, str] = field(default_factory=dict[str, str])
    timeout: float | None = None
    budget_left: float | None = None  # what the batch budget leaves: at most this for the task
    program: tuple[str, ...] = ()  # SPROUT_AGENT_BATCH_AGENT's words; empty: this interpreter's sprout_agent


@dataclass(frozen=True, slots=True)
class Finished:
    record: dict[str, Any]
    stream: str  # the child's stream-json: the transcript
    stderr: str
    patch: bytes | None = None  # a checkout's whole patch (empty when none could be read); None: not a checkout


def command(job: Job, where: Path) -> list[str]:
    """The task's `sprout-agent -p`: our options, each value of the task file's bound to its flag (`--model=…`),
    then `--` and the prompt, which is never read as an option whatever it says (trust/child_argv.py)."""
    task = job.task
    program = list(job.program) or [sys.executable, "-m", "sprout_agent"]
    args = [*program, "-p", "--output-format", "stream-json", f"--cwd={where}", *job.args]
    args += [f"--config={path}" for path in task.config]
    if task.model is not None:
        args.append(f"--model={task.model}")
    if task.max_turns is not None:
        args.append(f"--max-turns={task.max_turns}")
    budgets = [b for b in (task.max_budget_usd, job.budget_left) if b is not None]
    if budgets:
        args.append(f"--max-budget-usd={min(budgets):.6f}")
    return with_operands(args, [task.prompt])


def run_task(job: Job, stop: threading.Event | None = None) -> Finished:
    """Runs the task; never raises for the task's own failures (they are its record)."""
    harden()  # a Ray worker runs this in a long-lived process of Ray's that holds the key (here: done already)
    started = time.monotonic()
    base: dict[str, Any] = {"id": job.task.id, "transcript": f"transcripts/{job.task.name}.jsonl", "checkpoints": None}
    try:
        tree = workdir.prepare(job.task.repo, job.task.cwd, job.out, job.task.name, job.task.checkout)
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as error:
        record = base | {"status": "failed", "exit_code": None, **read_result(None), "diff": None}
        record |= {"errors": [f"working directory: {error}"], "duration_ms": _ms(started), "cwd": None}
        return Finished(record, "", "", None if job.task.checkout is None else b"")
    try:
        process = subprocess.Popen(
            command(job, tree.path),
            cwd=tree.path,
            # A recording (or replay) of the batch names each task's cassette for the task (docs/cassettes.md).
            env={**os.environ, **job.env, "SPROUT_AGENT_CASSETTE_NAME": job.task.name},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # a Ctrl-C in the terminal reaches the batch, which ends each task itself
            preexec_fn=die_with_us(),  # and a batch killed by SIGKILL, which cannot, takes its tasks with it
        )
    except OSError as error:
        record = base | {"status": "failed", "exit_code": None, **read_result(None), "diff": None}
        record |= {"errors": [f"cannot start the agent: {error}"], "duration_ms": _ms(started), "cwd": str(tree.path)}
        return Finished(record, "", "", None if job.task.checkout is None else b"")
    out, err, timed_out, interrupted = _supervise(process, job.timeout, stop, started)
    stream, stderr = out.decode(errors="replace"), err.decode(errors="replace")
    outcome = read_result(last_result(stream))
    if timed_out:
        outcome["errors"] = [*outcome["errors"], f"timed out after {job.timeout:g} s"]
    if last_result(stream) is None and stderr.strip():
        outcome["errors"] = [*outcome["errors"], stderr.strip().splitlines()[-1][:500]]
    # Killed by a signal (before its handlers were up, or SIGKILL): 128 + N, as a shell and the CLI itself say it.
    code = process.returncode if process.returncode >= 0 else 128 - process.returncode
    record = base | {"status": status_of(code, timed_out, interrupted), "exit_code": code}
    diff, patch = _changes(tree, job.task)
    record |= outcome | {"duration_ms": _ms(started), "cwd": str(tree.path), "diff": diff}
    record["checkpoints"] = checkpoints(stream, outcome["session_id"])
    return Finished(record, stream, stderr, patch)


def _changes(tree: workdir.Tree, task: Task) -> tuple[str | None, bytes | None]:
    """The record's diff, and a checkout's patch: for a checkout the diff is its patch (capped), from one git diff."""
    if task.checkout is None:
        return workdir.diff(tree), None
    patch = workdir.patch(tree, task.checkout)
    return workdir.as_text(patch), patch or b""


def _supervise(
    process: subprocess.Popen[bytes], timeout: float | None, stop: threading.Event | None, started: float
) -> tuple[bytes, bytes, bool, bool]:
    """Waits for the child (output read all along); at the time limit SIGTERM, on a stop request SIGINT, and
    SIGKILL to its process group if it has not ended GRACE_SECONDS later. Ray's cancel arrives as a
    KeyboardInterrupt here and counts as a stop request."""
    timed_out = interrupted = False
    signalled: float | None = None
    while True:
        try:
            out, err = process.communicate(timeout=POLL_SECONDS)
            return out, err, timed_out, interrupted
        except subprocess.TimeoutExpired:
            pass
        except KeyboardInterrupt:
            interrupted = True
        now = time.monotonic()
        if signalled is None:
            if interrupted or (stop is not None and stop.is_set()):
                interrupted, signalled = True, now
                _signal(process, signal.SIGINT, group=False)
            elif timeout is not None and now - started >= timeout:
                timed_out, signalled = True, now
                _signal(process, signal.SIGTERM, group=False)
        elif now - signalled >= GRACE_SECONDS:
            _signal(process, signal.SIGKILL, group=True)


def _signal(process: subprocess.Popen[bytes], sig: signal.Signals, *, group: bool) -> None:
    try:
        if group:
            os.killpg(process.pid, sig)
        else:
            process.send_signal(sig)
    except (ProcessLookupError, PermissionError):
        pass


def _ms(started: float) -> int:
    return round((time.monotonic() - started) * 1000)
