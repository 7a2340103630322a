"""`sprout-agent batch TASKS.jsonl`: the tasks of this shard that are not finished, `--jobs` at a time on an
executor (threads here, or Ray), each record written as it arrives; the budget, Ctrl-C and the summary."""

from __future__ import annotations

import json
import shlex
import signal
import sys
import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, Protocol

from sprout_agent.batch.outcome import interrupted_record
from sprout_agent.batch.outdir import OutDir, to_run
from sprout_agent.batch.progress import Progress
from sprout_agent.batch.summary import summarise, table
from sprout_agent.batch.swebench import Swebench, load_instances, prediction_files, predictions
from sprout_agent.batch.task_run import Finished, Job, run_task
from sprout_agent.batch.tasks import Task, load_tasks, parse_shard, shard_of
from sprout_agent.core.errors import EXIT_BUDGET, EXIT_OK, EXIT_RUNTIME, EXIT_SIGINT, UsageError

RATE_GATE_VARIABLE = "SPROUT_AGENT_RATE_GATE"
AGENT_VARIABLE = "SPROUT_AGENT_BATCH_AGENT"  # the command a task runs instead of this interpreter's sprout_agent


@dataclass(frozen=True, slots=True)
class BatchOptions:
    tasks_file: Path
    out: Path
    jobs: int = 4
    timeout: float | None = None
    max_budget_usd: float | None = None
    retry_failed: bool = False
    shard: str | None = None
    executor: str = "local"
    address: str | None = None
    output_format: str = "text"
    agent_args: tuple[str, ...] = ()  # -p flags given to every task
    swebench: Swebench | None = None  # the tasks file holds SWE-bench instances; predictions are written at the end


class TaskTracing(Protocol):
    """A batch as one trace (telemetry/batch.py, when telemetry is on): a span per task; each task's process joins
    it through the environment `started` returns (TRACEPARENT)."""

    def started(self, task_id: str) -> dict[str, str]: ...
    def finished(self, task_id: str, record: Mapping[str, Any]) -> None: ...


class Executor(Protocol):
    def submit(self, job: Job) -> None: ...
    def wait(self, timeout: float) -> list[Finished]: ...
    def cancel(self) -> None: ...
    def close(self) -> None: ...


class LocalExecutor:
    """A thread per running task, each waiting on its subprocess; the stop event asks them all to end."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self._done: list[Finished] = []
        self._ready = threading.Condition()

    def submit(self, job: Job) -> None:
        threading.Thread(target=self._run, args=(job,), name=f"batch-{job.task.name}", daemon=True).start()

    def _run(self, job: Job) -> None:
        try:
            finished = run_task(job, self.stop)
        except Exception as error:  # a bug of ours must not leave the loop waiting for this task forever
            record = interrupted_record(job.task.id, job.task.name, f"internal error: {type(error).__name__}: {error}")
            finished = Finished(record | {"status": "failed"}, "", "")
        with self._ready:
            self._done.append(finished)
            self._ready.notify()

    def wait(self, timeout: float) -> list[Finished]:
        with self._ready:
            self._ready.wait_for(lambda: bool(self._done), timeout)
            done, self._done = self._done, []
        return done

    def cancel(self) -> None:
        self.stop.set()

    def close(self) -> None:
        pass


class Budget:
    def __init__(self, limit: float | None) -> None:
        self.limit, self.spent = limit, 0.0

    def allows(self) -> bool:
        return self.limit is None or self.spent < self.limit

    def left(self) -> float | None:
        return None if self.limit is None else max(0.0, self.limit - self.spent)


def select(options: BatchOptions, environ: Mapping[str, str]) -> tuple[list[Task], tuple[int, int] | None]:
    """The tasks of this shard (all of them without --shard), in file order."""
    if options.swebench is not None:
        tasks = load_instances(options.tasks_file, options.swebench)
    else:
        tasks = load_tasks(options.tasks_file)
    if options.shard is None:
        return tasks, None
    index, count = parse_shard(options.shard, environ)
    return [t for t in tasks if shard_of(t.id, count) == index], (index, count)


def run_batch(
    options: BatchOptions,
    environ: Mapping[str, str],
    make_executor: Callable[[], Executor],
    tracing: TaskTracing | None = None,
) -> int:
    if options.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    tasks, shard = select(options, environ)
    out = OutDir(options.out)  # not resolved: --out itself may not be a link (private.py)
    out.open()
    try:
        out.write_json("batch.json", {"task_file": str(options.tasks_file), "shard": shard, "task_ids": _ids(tasks)})
        pending = to_run(tasks, out.records(), options.retry_failed)
        env = {RATE_GATE_VARIABLE: str(out.path / ".rate-gate")}
        program = tuple(shlex.split(environ.get(AGENT_VARIABLE, "")))
        loop = _Loop(
            options, out, env, program, Progress(len(pending), options.jobs, sys.stderr, live=sys.stderr.isatty())
        )
        loop.tracing = tracing
        interrupted = loop.run(pending, make_executor)
        summary = summarise(_ids(tasks), out.records())
        out.write_json("summary.json", summary)
        if options.swebench is not None:
            write_predictions(out, tasks, options.swebench.model_name)
    finally:
        out.close()
    report(summary, options.output_format)
    if interrupted:
        return EXIT_SIGINT
    if summary["failed"] or summary["timeout"] or summary["interrupted"]:
        return EXIT_RUNTIME
    return EXIT_BUDGET if summary["not_run"] else EXIT_OK


def write_predictions(out: OutDir, tasks: list[Task], model_name: str) -> None:
    """`preds.json` and `predictions.jsonl` over the instances finished so far (a resumed run adds the rest)."""
    patches = {t.name: out.read("patches", f"{t.name}.diff") or "" for t in tasks}
    for name, text in prediction_files(predictions(tasks, out.records(), patches, model_name)).items():
        out.write("", name, text)


def executor_for(options: BatchOptions) -> Callable[[], Executor]:
    if options.executor == "local":
        if options.address is not None:
            raise UsageError("--address is for --executor ray")
        return LocalExecutor
    if options.executor == "ray":
        from sprout_agent.batch.ray_executor import RayExecutor

        return lambda: RayExecutor(options.address)
    raise UsageError(f"--executor must be local or ray, got {options.executor!r}")


def _ids(tasks: list[Task]) -> list[str]:
    return [t.id for t in tasks]


class _Loop:
    def __init__(
        self, options: BatchOptions, out: OutDir, env: dict[str, str], program: tuple[str, ...], progress: Progress
    ) -> None:
        self.options, self.out, self.env, self.program, self.progress = options, out, env, program, progress
        self.budget = Budget(options.max_budget_usd)
        self.stopping = False
        self.tracing: TaskTracing | None = None

    def job(self, task: Task) -> Job:
        timeout = task.timeout if task.timeout is not None else self.options.timeout
        traced = self.tracing.started(task.id) if self.tracing is not None else {}
        env = {**self.env, **task.env, **traced}  # a task's env cannot name another trace (guarded_env.py)
        return Job(task, self.out.path, self.options.agent_args, env, timeout, self.budget.left(), self.program)

    def run(self, pending: list[Task], make_executor: Callable[[], Executor]) -> bool:
        """Runs them; True when a signal stopped the batch (running tasks recorded as interrupted)."""
        executor = make_executor()
        queue, running = deque(pending), 0
        previous = _on_signals(lambda: self._stop(executor))
        try:
            while queue or running:
                while queue and running < self.options.jobs and not self.stopping and self.budget.allows():
                    executor.submit(self.job(queue.popleft()))
                    running += 1
                    self.progress.started()
                if not running:
                    break  # the budget is spent or a signal came: the rest is not started
                for finished in executor.wait(1.0):
                    running -= 1
                    self._record(finished)
                self.progress.tick()
        finally:
            _restore(previous)
            executor.close()
            self.progress.close()
        return self.stopping

    def _stop(self, executor: Executor) -> None:
        self.stopping = True
        executor.cancel()

    def _record(self, finished: Finished) -> None:
        if self.tracing is not None:
            self.tracing.finished(str(finished.record.get("id", "")), finished.record)
        self.budget.spent += float(finished.record.get("cost_usd") or 0)
        self.out.append(finished.record, finished.stream, finished.stderr, finished.patch)
        self.progress.finished(finished.record)


def _on_signals(handler: Callable[[], None]) -> dict[int, Any]:
    """SIGINT and SIGTERM stop the batch: no task starts, each running one gets SIGINT and reports."""

    def on_signal(signum: int, frame: FrameType | None) -> None:
        handler()

    previous: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous[signum] = signal.signal(signum, on_signal)
    return previous


def _restore(previous: dict[int, Any]) -> None:
    for signum, handler in previous.items():
        signal.signal(signum, handler)


def report(summary: dict[str, Any], output_format: str) -> None:
    if output_format == "json":
        sys.stdout.write(json.dumps(summary, ensure_ascii=False) + "\n")
        sys.stdout.flush()
    else:
        sys.stdout.write(table(summary) + "\n")
        sys.stdout.flush()
