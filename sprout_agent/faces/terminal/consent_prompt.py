"""The interactive question before a project's `.mcp.json` servers first start: each unapproved server's full
command line, cwd and env, then one question per server answered with one key like every other question
(ask.py): yes, all remaining (listed above), or no (Esc too); answers are remembered.

The listing is plain lines on stderr: it runs before the REPL's prompt_toolkit session exists, and a question
this important should read the same on any terminal. Each question is a small prompt_toolkit application.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, TypeAlias

import anyio

from sprout_agent.config.consent import Approvals, Gated, Secrets, Verdict, describe, secrets_in, short_command
from sprout_agent.config.files import ServerConfig
from sprout_agent.core.errors import ConfigError
from sprout_agent.session.prepared import Prepared
from sprout_agent.trust.untrusted import printable

if TYPE_CHECKING:  # imported when a question is asked: most starts have none (repl.py does the same)
    from sprout_agent.faces.terminal.ask import Choice

# Shows a question and its one-key choices; the chosen choice's answer, None when nobody answered (Ctrl-C).
Press: TypeAlias = "Callable[[str, Sequence[Choice]], str | None]"


def _press(question: str, choices: Sequence[Choice]) -> str | None:
    from sprout_agent.faces.terminal.ask import choose

    sys.stderr.write(question + "\n")
    sys.stderr.flush()
    picked = anyio.run(partial(choose, choices, escape="no"))
    label = next((choice.label for choice in choices if choice.answer == picked), "no answer: nothing remembered")
    sys.stderr.write(f"  → {label}\n")
    return picked


def ask_about_project_servers(
    prepared: Prepared,
    press: Press = _press,
    write: Callable[[str], object] = sys.stderr.write,
) -> Prepared:
    """`prepared` with the servers the user approves now added; declined ones are remembered as declined. The
    project's settings files are asked about first, the same way (settings_consent.py)."""
    from sprout_agent.faces.terminal.settings_consent import ask_about_project_settings

    prepared = ask_about_project_settings(prepared, press, write)
    held = prepared.held_back
    if held is None:
        return prepared
    to_ask = [server for server in held.pending if held.verdicts[server.name] is not Verdict.DECLINED]
    if not to_ask:
        return prepared  # every one was declined before: the face shows the notices
    secrets = secrets_in(prepared.settings_env, prepared.inherited_env)
    approved, declined = _ask(to_ask, held, secrets, press, write)
    _remember(prepared, approved, declined, secrets, write)
    if not approved:
        return prepared
    rest = tuple(server for server in held.pending if server not in approved)
    loaded = replace(prepared.loaded, servers=prepared.loaded.servers + tuple(approved))
    still_held = Gated(loaded, rest, {s.name: held.verdicts[s.name] for s in rest}) if rest else None
    return replace(prepared, loaded=loaded, held_back=still_held)


def _ask(
    servers: list[ServerConfig],
    held: Gated,
    secrets: Secrets,
    press: Press,
    write: Callable[[str], object],
) -> tuple[list[ServerConfig], list[ServerConfig]]:
    """Every server is shown before the first question, so "all" only ever covers what the user has seen."""
    files = sorted({str(server.source) for server in servers})
    write(f"The project config {printable(', '.join(files))} wants to start MCP servers you have not approved.\n")
    write("They run as commands on this machine, with your user's rights. Approve only what you trust.\n")
    for server in servers:
        changed = "  (changed since you approved it)" if held.verdicts[server.name] is Verdict.CHANGED else ""
        write("\n".join(describe(server, secrets)) + f"{changed}\n")
    from sprout_agent.faces.terminal.ask import Choice

    approved: list[ServerConfig] = []
    declined: list[ServerConfig] = []
    for index, server in enumerate(servers):
        rest = len(servers) - index
        every = [Choice("a", f"all {rest} remaining, listed above", "all")] if rest > 1 else []
        choices = [Choice("y", "yes", "yes"), *every, Choice("n", "no", "no")]
        answer = press(f"Start '{printable(server.name)}' ({short_command(server, secrets)})?", choices)
        if answer is None:
            break  # no answer is not a "no": nothing is remembered for the rest
        if answer == "all":
            approved.extend(servers[index:])
            break
        (approved if answer == "yes" else declined).append(server)
    return approved, declined


def _remember(
    prepared: Prepared,
    approved: list[ServerConfig],
    declined: list[ServerConfig],
    secrets: Secrets,
    write: Callable[[str], object],
) -> None:
    approvals = Approvals.load(prepared.locations.data)
    try:
        if approved:
            approvals = approvals.answered(approved, approved=True, secrets=secrets)
        if declined:
            approvals.answered(declined, approved=False, secrets=secrets)
    except ConfigError as error:
        write(f"sprout-agent: {error} (the answers count for this run only)\n")
