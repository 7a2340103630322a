"""Claude Code's command-line flags that sprout-agent has no option for: rewritten onto ours, or dropped with one
warning line, before Typer parses argv. A script or an SDK written for `claude -p` runs instead of exiting 2.

The tables are the documentation (docs/cli.md: "Claude Code's command line"); each entry knows how
many values the flag takes, so its value is never taken for the prompt.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from sprout_agent.core.errors import UsageError
from sprout_agent.core.permission_mode import PermissionMode

# Flags dropped with a warning: flag → (values it takes, what sprout-agent does instead); OPTIONAL: a value
# if the next argument does not start with "-" (Claude Code's `--debug [filter]`, parsed as its parser does).
# A flag Typer knows (an option some branch added since) is never dropped: the option wins over this table.
OPTIONAL = -1
IGNORED: dict[str, tuple[int, str]] = {
    "--betas": (1, "no beta headers are sent"),
    "--plugin-dir": (1, "plugins are not supported"),
    "--agent": (1, "the main agent is sprout-agent's; its subagents are chosen by the model"),
    "--resume-session-at": (1, "the whole session is resumed"),
    "--resume-drops-turn": (1, "the whole session is resumed"),
    "--task-budget": (1, "use --max-budget-usd or --max-turns"),
    "--thinking-display": (1, "thinking is shown as sprout-agent shows it"),
    "--include-hook-events": (0, "hook events are not in the stream"),
    "--include-partial-messages": (0, "stream-json lines are whole messages"),
    "--session-mirror": (0, "sessions are recorded only in sprout-agent's own store"),
    "--no-session-persistence": (0, "sessions are always recorded"),
    "--debug": (OPTIONAL, "use -v/--verbose (or SPROUT_AGENT_DEBUG=1 for tracebacks)"),
    "-d": (OPTIONAL, "use -v/--verbose"),
    "--debug-file": (1, "use -v/--verbose"),
    "--mcp-debug": (0, "use -v/--verbose"),
    "--allow-dangerously-skip-permissions": (0, "there is no mode cycle to add it to"),
    "--disable-slash-commands": (0, "slash commands are interactive only"),
    "--ide": (0, "use `sprout-agent acp` for editors"),
    "--chrome": (0, "no browser integration"),
    "--no-chrome": (0, "no browser integration"),
    "--file": (1, "attach files by path in the prompt"),
    "--advisor": (1, "no advisor tool"),
    "--append-subagent-system-prompt": (1, "a subagent's system prompt is its definition's"),
}

# Flags with another spelling here: flag → our flag, and a value to give it (None: the flag's own value).
RENAMED: dict[str, tuple[str, str | None]] = {
    "--dangerously-skip-permissions": ("--permission-mode", PermissionMode.BYPASS_PERMISSIONS),
    "--allowed-tools": ("--allowedTools", None),
    "--disallowed-tools": ("--disallowedTools", None),
}

# Claude Code's `--thinking` words → ours (adaptive is the same word).
THINKING_WORDS = {"enabled": "on", "disabled": "off"}


@dataclass(frozen=True, slots=True)
class Rewritten:
    argv: list[str]
    warnings: tuple[str, ...]


def rewrite(
    argv: list[str], *, takes_value: Collection[str], known: Collection[str], commands: Collection[str]
) -> Rewritten:
    """argv with Claude Code's flags rewritten onto ours or dropped (each dropped one warned about once).

    `takes_value`: our options that take a value (their value is passed on untouched, never read as a flag);
    `known`: every option Typer knows (never dropped); `commands`: the subcommands (`sprout-agent mcp …` is left
    alone). Everything after `--` is left alone."""
    out: list[str] = []
    warnings: list[str] = []
    rest = list(argv)
    prompt_seen = False  # a first argument, or -p (after which an argument is the prompt, never a command)
    while rest:
        token = rest.pop(0)
        if token == "--" or (token in commands and not prompt_seen):
            return Rewritten([*out, token, *rest], tuple(warnings))
        prompt_seen = prompt_seen or token in ("-p", "--print") or not token.startswith("-")
        out.extend(_one_flag(token, rest, takes_value, known, warnings))
    return Rewritten(out, tuple(warnings))


def _one_flag(
    token: str, rest: list[str], takes_value: Collection[str], known: Collection[str], warnings: list[str]
) -> list[str]:
    """What `token` (and the values it takes from `rest`) becomes."""
    name, eq, inline = token.partition("=")

    def value() -> str:
        return inline if eq else (rest.pop(0) if rest else "")

    if name in ("-r", "--resume") and not eq and (not rest or rest[0].startswith("-")):
        return ["--resume="]  # no id: a picker in a terminal (faces/cli/pick_session.py), as Claude Code's
    if name in RENAMED:
        ours, fixed = RENAMED[name]
        return [ours, fixed if fixed is not None else value()]
    if name in known:
        if name not in takes_value or (eq and not name.startswith("--")):
            return [token]
        if eq:  # kept in one token: a value starting with "-" stays bound to its flag
            return [f"{name}={_our_value(name, inline)}"]
        return [token, _our_value(name, rest.pop(0))] if rest else [token]
    if name in IGNORED:
        count, instead = IGNORED[name]
        takes = count == 1 or (count == OPTIONAL and bool(rest) and not rest[0].startswith("-"))
        shown = f"{token} {value()}" if takes and not eq else token
        warnings.append(f"warning: {_short(shown)} is not supported by sprout-agent and is ignored: {instead}")
        return []
    if name == "--max-thinking-tokens":
        return _thinking_tokens(value(), warnings)
    if name in ("--system-prompt-file", "--append-system-prompt-file"):
        return [name.removesuffix("-file"), _read_prompt_file(name, value())]
    return [token]


def _our_value(name: str, value: str) -> str:
    if name == "--thinking":
        return THINKING_WORDS.get(value.strip().lower(), value)
    return value


def _thinking_tokens(value: str, warnings: list[str]) -> list[str]:
    """`--max-thinking-tokens N`: thinking on (0: off); the budget is SPROUT_AGENT_THINKING_BUDGET's."""
    try:
        tokens = int(value)
    except ValueError:
        raise UsageError(f"--max-thinking-tokens must be a number of tokens, got {value!r}") from None
    if tokens <= 0:
        return ["--thinking", "off"]
    warnings.append(
        f"warning: --max-thinking-tokens {tokens}: thinking is on with SPROUT_AGENT_THINKING_BUDGET's budget "
        "(the number is not used)"
    )
    return ["--thinking", "on"]


def _read_prompt_file(flag: str, path: str) -> str:
    try:
        return Path(path).expanduser().read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(f"{flag} {path}: cannot read it: {getattr(error, 'strerror', None) or error}") from None


def _short(text: str, limit: int = 60) -> str:
    """A flag and its value as the warning shows it: a long value (JSON settings, a schema) is cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
