"""The `sprout-agent` command (Typer): parses flags and picks the mode; heavy libraries load lazily."""

from __future__ import annotations

import contextlib
import enum
import os
import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from sprout_agent import __version__
from sprout_agent.errors import EXIT_RUNTIME, EXIT_SIGINT, EXIT_USAGE, SproutError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=False,
    help="sprout-agent: a coding agent with MCP tools and MCP-driven lifecycle hooks.\n\n"
    "In a terminal it is an interactive session; with -p or piped stdin it runs one prompt to completion "
    "(answer on stdout, progress on stderr).",
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)


class OutputFormat(str, enum.Enum):
    text = "text"
    json = "json"
    stream_json = "stream-json"


class InputFormat(str, enum.Enum):
    text = "text"
    stream_json = "stream-json"


class PermissionMode(str, enum.Enum):
    auto = "auto"
    ask = "ask"
    read_only = "read-only"


def _patterns(values: list[str] | None) -> tuple[str, ...]:
    """Repeatable and comma-separated alike: `--allow-tools a,b --allow-tools c`."""
    return tuple(part.strip() for value in values or () for part in value.split(",") if part.strip())


def _version(value: bool) -> None:
    if value:
        typer.echo(f"sprout-agent {__version__}")
        raise typer.Exit()


@app.callback(invoke_without_command=True)
def main_command(
    ctx: typer.Context,
    prompt: Annotated[str | None, typer.Option("--prompt", "-p", help="Run this prompt to completion.")] = None,
    config: Annotated[
        list[Path] | None, typer.Option("--config", help="MCP config file (repeatable); replaces the lookup.")
    ] = None,
    model: Annotated[str | None, typer.Option(help="Model name (default: $ANTHROPIC_MODEL or built in).")] = None,
    system_prompt: Annotated[str | None, typer.Option(help="Replace the system prompt.")] = None,
    append_system_prompt: Annotated[str | None, typer.Option(help="Append to the system prompt.")] = None,
    max_turns: Annotated[int | None, typer.Option(min=1, help="Most model requests per prompt.")] = None,
    cwd: Annotated[Path | None, typer.Option(help="Working directory for the agent and its tools.")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show requests, usage and hooks.")] = False,
    strict_mcp_config: Annotated[bool, typer.Option(help="Fail if any configured MCP server fails to start.")] = False,
    max_budget_usd: Annotated[
        float | None, typer.Option(min=0, help="End the session once this much is spent (exit 4).")
    ] = None,
    output_format: Annotated[
        OutputFormat, typer.Option(help="text, json (one object at the end) or stream-json (one event per line).")
    ] = OutputFormat.text,
    input_format: Annotated[
        InputFormat, typer.Option(help="stream-json: user messages as JSON lines on stdin.")
    ] = InputFormat.text,
    continue_latest: Annotated[
        bool, typer.Option("--continue", "-c", help="Resume the latest session of this directory.")
    ] = False,
    resume: Annotated[str | None, typer.Option("--resume", "-r", help="Resume the session with this id.")] = None,
    permission_mode: Annotated[
        PermissionMode, typer.Option(help="auto, ask (approve each call) or read-only.")
    ] = PermissionMode.auto,
    allow_tools: Annotated[
        list[str] | None, typer.Option(help="Tool patterns that always run (dev__bash, git__*); repeatable.")
    ] = None,
    deny_tools: Annotated[list[str] | None, typer.Option(help="Tool patterns that never run; repeatable.")] = None,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    if ctx.invoked_subcommand is not None:
        return
    work_dir = (cwd or Path.cwd()).resolve()
    if not work_dir.is_dir():
        _fail(f"--cwd {work_dir}: not a directory", EXIT_USAGE)
    interactive = prompt is None and sys.stdin.isatty()
    if prompt is None and not interactive:
        prompt = sys.stdin.read()
        if not prompt or not prompt.strip():
            _fail("no prompt: stdin was empty (give one with -p or pipe it in)", EXIT_USAGE)
    from sprout_agent.session import Options

    options = Options(
        prompt=prompt,
        config_files=tuple(config or ()),
        model=model,
        system_prompt=system_prompt,
        append_system_prompt=append_system_prompt,
        max_turns=max_turns,
        cwd=work_dir,
        verbose=verbose,
        strict_mcp_config=strict_mcp_config,
        max_budget_usd=max_budget_usd,
        output_format=output_format.value,
        input_format=input_format.value,
        resume_id=resume,
        continue_latest=continue_latest,
        permission_mode=permission_mode.value,
        allow_tools=_patterns(allow_tools),
        deny_tools=_patterns(deny_tools),
    )
    _exit(_run(options, interactive))


def _run(options: object, interactive: bool) -> int:
    import platformdirs

    from sprout_agent import session

    assert isinstance(options, session.Options)
    try:
        prepared = session.prepare(options, Path(platformdirs.user_config_dir("sprout-agent")))
        os.chdir(options.cwd)
        return session.run(prepared, interactive)
    except KeyboardInterrupt:
        return EXIT_SIGINT
    except BaseExceptionGroup as group:
        error = _first_sprout_error(group)
        if error is None:
            raise
        _fail(str(error), error.exit_code)
    except SproutError as error:
        _fail(str(error), error.exit_code)


def _first_sprout_error(group: BaseExceptionGroup[BaseException]) -> SproutError | None:
    for inner in group.exceptions:
        if isinstance(inner, SproutError):
            return inner
        if isinstance(inner, BaseExceptionGroup):
            found = _first_sprout_error(inner)  # pyright: ignore[reportUnknownArgumentType]
            if found is not None:
                return found
    return None


def _fail(message: str, code: int) -> NoReturn:
    sys.stderr.write(f"sprout-agent: {message}\n")
    _exit(code)


def _exit(code: int) -> NoReturn:
    """Flush and leave at once: interpreter teardown after these imports costs ~1 s we owe nobody."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


def main() -> None:
    try:
        app()
    except SproutError as error:
        _fail(str(error), error.exit_code)
    except Exception as error:  # a bug: still one line, and a non-zero exit
        if os.environ.get("SPROUT_AGENT_DEBUG"):
            raise
        _fail(f"internal error: {type(error).__name__}: {error}", EXIT_RUNTIME)
