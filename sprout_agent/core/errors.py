"""One error tree: the CLI catches `SproutError` once, prints one line, exits with its code."""

from __future__ import annotations

from sprout_agent.core.stop_reasons import FINISHED, StopReason

# Documented exit codes (README and docs/cli.md, "Exit codes").
EXIT_OK = 0
EXIT_RUNTIME = 1
EXIT_USAGE = 2
EXIT_MAX_TURNS = 3
EXIT_BUDGET = 4
EXIT_CONFLICTS = 5  # `sessions rewind`: done, but files the user changed were left alone (docs/sessions.md)
EXIT_REPLAY_DIVERGED = 6  # --replay: a request differs from the recorded one (docs/cassettes.md)
EXIT_SIGINT = 130
EXIT_SIGTERM = 143


class SproutError(Exception):
    """An error we expect and can explain in one line."""

    exit_code = EXIT_RUNTIME


class UsageError(SproutError):
    """Bad flags, a bad environment variable, or nothing to do."""

    exit_code = EXIT_USAGE


class MissingCredential(UsageError):
    """No API key or token, for an API that needs one (ACP answers it as Authentication required)."""


class ConfigError(UsageError):
    """A config file that cannot be used as written."""


class ApiError(SproutError):
    """The model API failed after retries; `status`: the HTTP status of the last attempt (None: no answer)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class PromptTooLongError(ApiError):
    """The API refused the request because the prompt exceeds the context window."""


class CassetteError(UsageError):
    """A cassette that cannot be read as the format says (truncated, hand-edited, another version)."""


class ReplayDiverged(SproutError):
    """--replay (strict): the run sent a request the cassette did not record; the message names the first
    difference as a path and both values. Either mode: a request the API would refuse, its first problem named."""

    exit_code = EXIT_REPLAY_DIVERGED


class StoreError(SproutError):
    """The session transcript cannot be written (unwritable sessions directory, full disk)."""


class ServerStartError(SproutError):
    """An MCP server failed to start (fatal only with --require-servers)."""


def sprout_error_in(error: BaseException) -> SproutError | None:
    """The `SproutError` behind `error`, looking inside exception groups (task groups wrap what they raise)."""
    if isinstance(error, SproutError):
        return error
    if isinstance(error, BaseExceptionGroup):
        group: BaseExceptionGroup[BaseException] = error  # pyright: ignore[reportUnknownVariableType]
        for inner in group.exceptions:
            found = sprout_error_in(inner)
            if found is not None:
                return found
    return None


def exit_code_of(error: BaseException) -> int:
    """The documented exit code for whatever ended a run: the one mapping from errors to codes."""
    if isinstance(error, KeyboardInterrupt):
        return EXIT_SIGINT
    found = sprout_error_in(error)
    return found.exit_code if found is not None else EXIT_RUNTIME


def exit_code_for_stop(stop_reason: StopReason) -> int:
    """How a turn's stop reason ends a run: only a finished answer is success."""
    if stop_reason == "max_turns":
        return EXIT_MAX_TURNS
    if stop_reason == "budget":
        return EXIT_BUDGET
    if stop_reason in FINISHED or stop_reason == "hook_stopped":  # hook_stopped: a hook's `continue: false`
        return EXIT_OK
    return EXIT_RUNTIME


# Below the SproutError tree: one MCP server's failures, raised by mcp/link.py and handled inside the pool,
# which turns them into tool results or a server state. They never reach the CLI.
class ServerGone(Exception):
    """The server died, closed the connection, or was killed while we were talking to it."""


class NeedsLogin(ServerGone):
    """A remote server answered 401 (or wants more scope) and no stored token or refresh can satisfy it."""


class ServerAnswered(Exception):
    """The server answered a request with an MCP error (its message is the text)."""
