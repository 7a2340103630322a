"""`sprout-agent batch`: one `sprout-agent -p` subprocess per task line, on this machine or on an engine the user
already runs (array jobs, Ray); never a scheduler, queue or wire protocol of our own (docs/batch.md).

`tasks.py` (the task file, ids, shards), `task_run.py` (one task), `workdir.py` (its tree and diff), `runner.py`
(the loop, budget and Ctrl-C over an executor: threads, or `ray_executor.py`), `outdir.py` over `private.py` (the
output only its user can steer or read), `outcome.py` (what a task left), `summary.py`, `progress.py`, `swebench.py`
(SWE-bench instances as tasks, and their predictions).

Imports: config, trust, core.
"""
