"""The interactive question about a repository's Claude Code settings (`.claude/settings.json`,
`settings.local.json`): what in them widens what the agent may do or runs something (allow rules, hooks, env,
apiKeyHelper, a wider mode, enableAllProjectMcpServers), listed whole, then one question per file, asked before the
project's MCP servers in the same way (consent_prompt.py) and remembered in the same approvals file.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, cast

from sprout_agent.config.applied_settings import Held
from sprout_agent.config.consent import Approvals, Verdict
from sprout_agent.core.errors import ConfigError
from sprout_agent.session.prepared import Prepared, prepare
from sprout_agent.trust.untrusted import printable

SHOWN_LIMIT = 400


def describe(held: Held) -> list[str]:
    """The lines a person needs to decide: every rule, hook command, variable and switch that would apply."""
    lines = [f"  {printable(held.file.shown)}:"]
    widening = held.widening
    permissions = widening.get("permissions")
    for key, value in _object(permissions).items():
        lines.append(f"      permissions.{printable(key)}: {_shown(value)}")
    for event, command in _commands(widening.get("hooks")):
        lines.append(f"      hook {printable(event)}: runs {printable(command, SHOWN_LIMIT)}")
    env = widening.get("env")
    for name, value in _object(env).items():
        lines.append(f"      env: {printable(name)}={_shown(value)}")
    for key, value in widening.items():
        if key not in ("permissions", "hooks", "env"):
            lines.append(f"      {printable(key)}: {_shown(value)}")
    return lines


def _shown(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return printable(text, SHOWN_LIMIT)


def _commands(hooks: object) -> list[tuple[str, str]]:
    """(event, command) of every hook in a `hooks` object; what is not a command is shown as JSON."""
    found: list[tuple[str, str]] = []
    for event, matchers in _object(hooks).items():
        for matcher in _items(matchers):
            for hook in _items(_object(matcher).get("hooks")):
                command = _object(hook).get("command", hook)
                found.append((event, command if isinstance(command, str) else json.dumps(command)))
    return found


def _object(value: object) -> dict[str, object]:
    return cast(dict[str, object], value) if isinstance(value, dict) else {}


def _items(value: object) -> list[object]:
    return cast(list[object], value) if isinstance(value, list) else []


def ask_about_project_settings(
    prepared: Prepared,
    press: Callable[[str, Any], str | None],
    write: Callable[[str], object],
) -> Prepared:
    """`prepared` again with the settings files the user approves now applied whole; answers are remembered."""
    from sprout_agent.faces.terminal.ask import Choice

    to_ask = [held for held in prepared.claude.held if held.verdict is not Verdict.DECLINED]
    if not to_ask:
        return prepared
    write("The project's Claude Code settings want to widen what the agent may do, or run commands:\n")
    write("their deny and ask rules apply already. Approve only what you trust.\n")
    for held in to_ask:
        changed = "  (changed since you approved it)" if held.verdict is Verdict.CHANGED else ""
        write("\n".join(describe(held)) + f"{changed}\n")
    answers: list[tuple[Held, bool]] = []
    for held in to_ask:
        answer = press(
            f"Apply all of {printable(held.file.shown)}?", [Choice("y", "yes", "yes"), Choice("n", "no", "no")]
        )
        if answer is None:
            break  # no answer is not a "no": nothing is remembered for the rest
        answers.append((held, answer == "yes"))
    try:
        Approvals.load(prepared.locations.data).answered_settings(
            (held.file.path, held.fingerprint, yes) for held, yes in answers if held.file.path is not None
        )
    except ConfigError as error:
        write(f"sprout-agent: {error} (the answers count for this run only)\n")
    approved = frozenset(held.fingerprint for held, yes in answers if yes)
    if not approved:
        return prepared
    return prepare(prepared.options, prepared.locations, prepared.inherited_env, settings_approved=approved)
