"""Leaving the process: one line on stderr for a failure, then an immediate exit with a documented code."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import NoReturn

from sprout_agent.core.errors import EXIT_USAGE
from sprout_agent.trust.untrusted import printable


def fail(message: str, code: int) -> NoReturn:
    sys.stderr.write(f"sprout-agent: {printable(message)}\n")  # it may quote a config file or a server
    exit_now(code)


def fail_as(output_format: str, message: str, code: int = EXIT_USAGE) -> NoReturn:
    """Fails before a session exists; json and stream-json still get their `result` object on stdout."""
    from sprout_agent.faces.headless.jsonl import report_early_error

    report_early_error(output_format, message, code, sys.stdout)
    fail(message, code)


def exit_now(code: int) -> NoReturn:
    """Flush and leave at once: interpreter teardown after these imports costs ~1 s we owe nobody."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)
