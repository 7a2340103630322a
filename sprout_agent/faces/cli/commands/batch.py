"""The `batch` subcommand (Typer): `batch TASKS.jsonl` (the same as `batch run TASKS.jsonl`) and `batch merge DIR…`.
The work is in sprout_agent/batch/; docs/batch.md."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Generator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

from sprout_agent.core.errors import UsageError
from sprout_agent.faces.cli import flags as o
from sprout_agent.faces.cli.exits import exit_now, fail
from sprout_agent.faces.cli.flags import OutputFormat
from sprout_agent.faces.warm import place as warm_place

if TYPE_CHECKING:  # the batch loads when the command runs
    from sprout_agent.batch.runner import BatchOptions, Executor, TaskTracing
    from sprout_agent.batch.swebench import Swebench


class _RunByDefault(TyperGroup):
    """`batch TASKS.jsonl --jobs 4` means `batch run TASKS.jsonl --jobs 4`: a first argument that names no
    subcommand (and is not --help) goes to `run`, options included."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # Any: typer's vendored click Context
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


batch_app = typer.Typer(
    cls=_RunByDefault,
    no_args_is_help=True,
    help="Run one `sprout-agent -p` session per line of a JSONL task file, --jobs at a time, results in --out "
    "(docs/batch.md). `batch TASKS.jsonl` is `batch run TASKS.jsonl`.",
)

# `--`: what follows it in a task's command line is its prompt (trust/child_argv.py).
_BATCH_OWNED = frozenset(
    {"-p", "--prompt", "--output-format", "--input-format", "--cwd", "-c", "--continue", "-r", "--resume", "--"}
)
# The main command's options `batch run` takes for every task, passed on by name (the rest are the batch's own).
_PASSED_ON = ("config_files", "model", "max_requests", "permission_mode", "allow_tools", "deny_tools", "trust_project")
_OutputOption = Annotated[OutputFormat, typer.Option(help="text (a table) or json (one summary object).")]


@batch_app.command("run")
def batch_run(
    ctx: typer.Context,
    tasks: Annotated[Path, typer.Argument(metavar="TASKS.jsonl", help="One JSON task per line.")],
    out: Annotated[Path, typer.Option(metavar="DIR", help="Results, transcripts and trees; resumable.")],
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=1, metavar="N", help="Tasks at once.")] = 4,
    timeout: Annotated[
        float | None, typer.Option(min=0.1, metavar="SECONDS", help="Per-task time limit (a task's `timeout` wins).")
    ] = None,
    max_budget_usd: Annotated[
        float | None, typer.Option(min=0, metavar="USD", help="For the whole batch: no task starts once it is spent.")
    ] = None,
    retry_failed: Annotated[bool, typer.Option(help="Run failed and timed-out tasks again.")] = False,
    shard: Annotated[
        str | None,
        typer.Option(metavar="INDEX/COUNT", help="Only this slice (by task id); COUNT alone reads INDEX from the env."),
    ] = None,
    executor: Annotated[str, typer.Option(metavar="NAME", help="local (default) or ray.")] = "local",
    address: Annotated[str | None, typer.Option(metavar="ADDR", help="Ray cluster address (--executor ray).")] = None,
    output_format: _OutputOption = OutputFormat.text,
    swebench: Annotated[
        bool, typer.Option("--swebench", help="TASKS.jsonl holds SWE-bench instances; write their predictions.")
    ] = False,
    swebench_repos: Annotated[
        Path | None,
        typer.Option(metavar="DIR", help="--swebench: clones named owner__name here (default: cloned from GitHub)."),
    ] = None,
    exclude_tests: Annotated[
        bool, typer.Option("--exclude-tests", help="--swebench: the patches leave out test files.")
    ] = False,
    swebench_model_name: Annotated[
        str | None, typer.Option(metavar="NAME", help="--swebench: model_name_or_path (default: sprout-agent__MODEL).")
    ] = None,
    # For every task's `sprout-agent -p`, as the main command takes them (passed on by name: agent_argv).
    config_files: o.ConfigOption = None,
    model: o.ModelOption = None,
    max_requests: o.MaxRequestsOption = None,
    permission_mode: o.PermissionModeOption = None,
    allow_tools: o.AllowToolsOption = None,
    deny_tools: o.DenyToolsOption = None,
    trust_project: o.TrustProjectOption = False,
    passed: Annotated[
        list[str] | None,
        typer.Argument(metavar="[-- -p FLAGS...]", help="After --: more flags for every task's sprout-agent -p."),
    ] = None,
) -> None:
    """Run the tasks of TASKS.jsonl (finished ones in --out are skipped)."""
    from sprout_agent.batch import runner

    owned = sorted({arg.split("=", 1)[0] for arg in passed or ()} & _BATCH_OWNED)
    if owned:
        fail(f"batch: {owned[0]} is the batch's to set for each task (the prompt, output, directory, session)", 2)
    o.checked_mode(permission_mode)  # a wrong one exits 2 before any task; each task's -p parses it again
    agent_args = [*o.agent_argv(ctx.params, ctx.command.params, _PASSED_ON), *(passed or [])]
    options = runner.BatchOptions(
        tasks_file=tasks,
        out=out,
        jobs=jobs,
        timeout=timeout,
        max_budget_usd=max_budget_usd,
        retry_failed=retry_failed,
        shard=shard,
        executor=executor,
        address=address,
        output_format=output_format.value,
        agent_args=tuple(agent_args),
        swebench=_swebench(swebench, swebench_repos, exclude_tests, swebench_model_name, model),
    )
    try:
        with _traced(tasks) as tracing:
            code = runner.run_batch(options, os.environ, _warmed(runner.executor_for(options), options), tracing)
    except UsageError as error:
        fail(str(error), error.exit_code)
    exit_now(code)


def _swebench(
    on: bool, repos: Path | None, exclude_tests: bool, name: str | None, model: str | None
) -> Swebench | None:
    """`--swebench` and the options that go with it (refused without it, exit 2)."""
    from sprout_agent.batch.swebench import Swebench

    if not on:
        given = [flag for flag, value in (("--swebench-repos", repos), ("--exclude-tests", exclude_tests),
                                          ("--swebench-model-name", name)) if value]  # fmt: skip
        if given:
            fail(f"batch: {given[0]} goes with --swebench", 2)
        return None
    default = f"sprout-agent__{model}" if model else "sprout-agent"
    return Swebench(repos=repos, leave_out_tests=exclude_tests, model_name=name or default)


@contextmanager
def _traced(tasks: Path) -> Generator[TaskTracing | None]:
    """With SPROUT_AGENT_TELEMETRY=1 the batch is one trace, a span per task (docs/telemetry.md); else nothing."""
    from sprout_agent.telemetry.enabled import off_reason, telemetry_on

    if not telemetry_on(os.environ):
        yield None
        return
    try:
        from sprout_agent.telemetry.batch import BatchTelemetry

        tracing = BatchTelemetry(os.environ, str(tasks), lambda text: print(text, file=sys.stderr))
    except Exception as error:  # a setting the SDK refuses, or no SDK (the extra): one notice, and untraced
        print(off_reason(error), file=sys.stderr)
        tracing = None
    if tracing is None:  # outside the `except`: the batch's own errors are not "during" this one
        yield None
        return
    try:
        yield tracing
    finally:
        if (said := tracing.close()) is not None:
            print(said, file=sys.stderr)


@batch_app.command("report")
def batch_report(
    directory: Annotated[Path, typer.Argument(metavar="DIR", help="A batch's --out directory (running or merged).")],
    out: Annotated[
        Path | None, typer.Option(metavar="FILE", help="Where to write it (default: DIR/report.html).")
    ] = None,
) -> None:
    """One HTML page over a batch: a sortable table of its tasks, each linking to its session page, and charts of
    cost and duration; a batch still running shows what is done."""
    from sprout_agent.batch.private import Unsafe
    from sprout_agent.faces.pages.batch_report import write_report

    if not (directory / "results.jsonl").is_file() and not (directory / "batch.json").is_file():
        fail(f"batch report: {directory} holds no batch (no results.jsonl, no batch.json)", 2)
    try:
        print(write_report(directory, out))
    except Unsafe as error:  # another user's directory: its records are not ours to read, nor its links to follow
        fail(f"batch report: {error}", 2)
    except OSError as error:
        fail(f"batch report: {error}", 1)
    exit_now(0)


@batch_app.command("merge")
def batch_merge(
    directories: Annotated[list[Path], typer.Argument(metavar="DIR...", help="The shards' --out directories.")],
    out: Annotated[Path | None, typer.Option(metavar="DIR", help="Also write the merged results here.")] = None,
    output_format: _OutputOption = OutputFormat.text,
) -> None:
    """One summary (and with --out, one results directory) from the shards' --out directories."""
    from sprout_agent.batch import runner, summary

    try:
        merged = summary.merge(directories, out)
    except (UsageError, OSError, ValueError, KeyError) as error:
        fail(f"batch merge: {error}", 2)
    runner.report(merged, output_format.value)
    exit_now(0)


def _warmed(make_executor: Callable[[], Executor], options: BatchOptions) -> Callable[[], Executor]:
    """The local executor's tasks start from the warm interpreter (faces/warm): it is started, and awaited,
    when the tasks are known and about to run, not before (a bad task file fails at once). By a process started
    as the tasks are (`python -m`, this environment): Python may have changed its own environment as it started
    (a coerced C locale adds LC_CTYPE), so the tasks' interpreter, and so their zygote, can differ from this one."""
    custom = bool(os.environ.get("SPROUT_AGENT_BATCH_AGENT"))
    if options.executor != "local" or custom or not warm_place.wanted(["-p", *options.agent_args], os.environ, True):
        return make_executor

    def make() -> Executor:
        import subprocess
        import sys

        with contextlib.suppress(OSError, subprocess.SubprocessError):
            warm_up = [sys.executable, "-m", "sprout_agent.faces.cli.warm_run"]
            subprocess.run(warm_up, env=os.environ, stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
        return make_executor()

    return make
