"""One error tree: the CLI catches `SproutError` once, prints one line, exits with its code."""

from __future__ import annotations

# Documented exit codes (README "Exit codes").
EXIT_OK = 0
EXIT_RUNTIME = 1
EXIT_USAGE = 2
EXIT_MAX_TURNS = 3
EXIT_BUDGET = 4
EXIT_SIGINT = 130
EXIT_SIGTERM = 143


class SproutError(Exception):
    """An error we expect and can explain in one line."""

    exit_code = EXIT_RUNTIME


class UsageError(SproutError):
    """Bad flags, a bad environment variable, or nothing to do."""

    exit_code = EXIT_USAGE


class ConfigError(UsageError):
    """A config file that cannot be used as written."""


class ApiError(SproutError):
    """The model API failed after retries."""


class PromptTooLongError(ApiError):
    """The API refused the request because the prompt exceeds the context window."""


class ServerStartError(SproutError):
    """An MCP server failed to start (fatal only with --strict-mcp-config)."""
