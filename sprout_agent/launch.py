"""The `sprout-agent` entry point: a bare interactive start skips Typer; errors become one line and an exit code.

Typer (with the pydantic it loads to parse options) costs ~0.2 s; `sprout-agent` alone in a terminal needs no
parsing, so the prompt comes up without it.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from sprout_agent.errors import EXIT_RUNTIME, EXIT_SIGINT, EXIT_USAGE, SproutError

if TYPE_CHECKING:
    from sprout_agent.session import Options


def main() -> None:
    try:
        if len(sys.argv) == 1 and sys.stdin.isatty():
            from sprout_agent.session import Options

            exit_now(run_options(Options(prompt=None, cwd=Path.cwd().resolve()), interactive=True))
        from sprout_agent.cli import app

        app()
    except SproutError as error:
        fail(str(error), error.exit_code)
    except Exception as error:  # a bug: still one line, and a non-zero exit
        if os.environ.get("SPROUT_AGENT_DEBUG"):
            raise
        fail(f"internal error: {type(error).__name__}: {error}", EXIT_RUNTIME)


def run_options(options: Options, interactive: bool) -> int:
    """Prepares the session (exit 2 on bad config) and runs the REPL or the prompt; returns the exit code."""
    import platformdirs

    from sprout_agent import session

    try:
        prepared = session.prepare(options, Path(platformdirs.user_config_dir("sprout-agent")), sessions_dir())
        os.chdir(options.cwd)
        return session.run(prepared, interactive)
    except KeyboardInterrupt:
        return EXIT_SIGINT
    except BaseExceptionGroup as group:
        error = first_sprout_error(group)
        if error is None:
            raise
        fail(str(error), error.exit_code)
    except SproutError as error:
        fail_as(options.output_format, str(error), error.exit_code)


def sessions_dir() -> Path:
    """Where session transcripts live: platformdirs' user data dir (~/.local/share/sprout-agent/sessions)."""
    import platformdirs

    return Path(platformdirs.user_data_dir("sprout-agent")) / "sessions"


def fail_as(output_format: str, message: str, code: int = EXIT_USAGE) -> NoReturn:
    """Fails before a session exists; json and stream-json still get their `result` object on stdout."""
    from sprout_agent.ui.jsonl import report_early_error

    report_early_error(output_format, message, code, sys.stdout)
    fail(message, code)


def first_sprout_error(group: BaseExceptionGroup[BaseException]) -> SproutError | None:
    for inner in group.exceptions:
        if isinstance(inner, SproutError):
            return inner
        if isinstance(inner, BaseExceptionGroup):
            found = first_sprout_error(inner)  # pyright: ignore[reportUnknownArgumentType]
            if found is not None:
                return found
    return None


def fail(message: str, code: int) -> NoReturn:
    sys.stderr.write(f"sprout-agent: {message}\n")
    exit_now(code)


def exit_now(code: int) -> NoReturn:
    """Flush and leave at once: interpreter teardown after these imports costs ~1 s we owe nobody."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)
