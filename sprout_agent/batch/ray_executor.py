"""`--executor ray`: each task is a Ray task (one CPU declared) running the same `run_task` as a local thread, so
one `sprout-agent -p` subprocess per task on whichever node Ray places it; results come back as they finish.
Ray does placement, node failures and scaling; `pip install 'sprout-agent[ray]'`."""

from __future__ import annotations

import importlib
from typing import Any

from sprout_agent.batch.outcome import interrupted_record
from sprout_agent.batch.task_run import Finished, Job, run_task
from sprout_agent.core.errors import UsageError


class RayExecutor:
    def __init__(self, address: str | None) -> None:
        try:
            ray: Any = importlib.import_module("ray")
        except ImportError:
            raise UsageError("--executor ray needs Ray: pip install 'sprout-agent[ray]'") from None
        self._ray = ray
        self._owned = not ray.is_initialized()
        if self._owned:
            # No address: a local instance of this machine's CPUs (or the cluster RAY_ADDRESS names).
            ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False)
        self._remote = ray.remote(num_cpus=1)(run_task)
        self._running: dict[Any, Job] = {}

    def submit(self, job: Job) -> None:
        self._running[self._remote.remote(job)] = job

    def wait(self, timeout: float) -> list[Finished]:
        if not self._running:
            return []
        ready, _ = self._ray.wait(list(self._running), num_returns=1, timeout=timeout)
        return [self._result(ref) for ref in ready]

    def _result(self, ref: Any) -> Finished:
        job = self._running.pop(ref)
        try:
            finished: Finished = self._ray.get(ref)
            return finished
        except self._ray.exceptions.TaskCancelledError:
            return Finished(interrupted_record(job.task.id, job.task.name, "cancelled: the batch was stopped"), "", "")
        except self._ray.exceptions.RayError as error:
            record = interrupted_record(job.task.id, job.task.name, f"Ray: {str(error).splitlines()[0][:300]}")
            return Finished(record | {"status": "failed"}, "", "")

    def cancel(self) -> None:
        """Ray raises KeyboardInterrupt in each running task: `run_task` then ends its child as on Ctrl-C."""
        for ref in self._running:
            self._ray.cancel(ref)

    def close(self) -> None:
        if self._owned:
            self._ray.shutdown()
