"""What one dev bash call may take and what its result says: the timeout (default and cap), the output kept, and
the result's text with what the sandbox stopped. Shared by the dev server (tools/_shell.py, which runs the
command itself) and the editor's terminals (faces/acp/editor_terminal.py, where the editor runs it)."""

from __future__ import annotations

import os

from sprout_agent.trust.sandbox import Sandbox
from sprout_agent.trust.workspace import Refused

TIMEOUT_ENV = "SPROUT_DEV_BASH_TIMEOUT"
DEFAULT_TIMEOUT = 120.0
MAX_TIMEOUT = 600.0
HEAD_BYTES = 15_000
TAIL_BYTES = 15_000


def default_timeout() -> float:
    try:
        value = float(os.environ.get(TIMEOUT_ENV, DEFAULT_TIMEOUT))
    except ValueError:
        return DEFAULT_TIMEOUT
    return min(max(value, 1.0), MAX_TIMEOUT)


def timeout_of(timeout: object) -> float:
    """The call's `timeout` argument, or the default; Refused outside (0, MAX_TIMEOUT]."""
    if timeout is None:
        return default_timeout()
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= MAX_TIMEOUT:
        raise Refused(f"timeout must be more than 0 and at most {MAX_TIMEOUT:g} seconds")
    return float(timeout)


def timed_out(output: str, timeout: float) -> str:
    return f"{output}\n[timed out after {timeout:g} s; the command's process group was killed]"


def result_text(
    sandbox: Sandbox | None, output: str, note: str, code: int | None, command: str = ""
) -> tuple[str, str | None]:
    """(the result's text, what the sandbox stopped or None) of a command that ended; `sandbox` None: it ran
    outside the sandbox. A non-zero exit makes the call an error (a red test run is a failure)."""
    stopped = None
    if sandbox is not None:
        note += sandbox.tmp_note(command) + sandbox.explain(output, code)
        stopped = sandbox.stopped(output, code)
    return f"{output}{note}\n[exit code: {code}]", stopped
