"""`sprout-agent hooks test [SERVER…]`: starts the servers as a run here would, then runs core/hooks/kit.py's probe."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from dataclasses import replace

import anyio

from sprout_agent.config.consent import Verdict, held_back_notice
from sprout_agent.config.files import ServerConfig, session_only
from sprout_agent.config.settings import child_environment
from sprout_agent.core.events import Event
from sprout_agent.core.hooks.kit import HookReport, as_record, probe, report_lines
from sprout_agent.faces.cli.commands.command_hooks_test import CommandReport, command_hook_reports, home_dir
from sprout_agent.faces.cli.commands.doctor import Setup, missing_command, stderr_lines
from sprout_agent.trust.untrusted import printable


def hooks_test_command(setup: Setup, names: Sequence[str], timeout: float | None, as_json: bool) -> int:
    """Exit 0 when every hook keeps the contract, 1 when one breaks it or a server fails, 2 for a bad name."""
    known = {config.name for config in setup.loaded.servers}
    unknown = [name for name in names if name not in known]
    if unknown:
        sys.stderr.write(f"sprout-agent: no configured server named {printable(', '.join(unknown))} (see mcp list)\n")
        return 2
    reports, failed = anyio.run(_run, setup, tuple(names), timeout)
    record = as_record(reports, failed)
    commands, notices = ([], []) if names else _command_hooks(setup)  # naming servers probes only theirs
    record["settings_hooks"] = [{"line": report.line, "ok": report.ok} for report in commands]
    record["settings_notices"] = notices
    record["ok"] = bool(record["ok"]) and all(report.ok for report in commands)
    # A server names its hooks and writes their answers: shown through the mask `mcp doctor` shows them by.
    if as_json:
        print(setup.mask(json.dumps(record, indent=2, ensure_ascii=False)))
    else:
        lines = [*report_lines(reports, failed), *(["settings command hooks:"] if commands or notices else [])]
        lines += [f"  {report.line}" for report in commands] + [f"  {notice}" for notice in notices]
        print("\n".join(printable(setup.mask(line)) for line in lines))
    return 0 if record["ok"] else 1


def _command_hooks(setup: Setup) -> tuple[list[CommandReport], list[str]]:
    """The settings files' command hooks, run as a session here would run them (command_hooks_test.py)."""
    return command_hook_reports(setup.cwd, home_dir(), None, setup.data, setup.trusted, setup.sandbox)


async def _run(setup: Setup, names: tuple[str, ...], timeout: float | None) -> tuple[list[HookReport], dict[str, str]]:
    from sprout_agent.session.server_pool import server_pool  # the pool loads mcp itself, in a thread, after spawning

    failed: dict[str, str] = {}
    startable: list[ServerConfig] = []
    for config in setup.loaded.servers:
        if (names and config.name not in names) or session_only(config) is not None:
            continue  # a server only a session can serve has no hook to probe here (mcp doctor says so)
        verdict = setup.verdict(config)
        problem = missing_command(config, child_environment(os.environ, config.env))
        if verdict not in (None, Verdict.APPROVED):
            failed[config.name] = held_back_notice(config, verdict)
        elif problem is not None:
            failed[config.name] = problem
        else:
            startable.append(replace(config, start_timeout=timeout) if timeout else config)
    if not startable:  # nothing to probe: no pool, whose first start loads the mcp SDK (~1 s here)
        return [], failed

    def ignore(event: Event) -> None:  # start-up notices are mcp doctor's business
        del event

    pool = server_pool(startable, setup.place(), ignore)  # as a run starts them: OAuth, roots, answers, sandbox
    async with pool:
        for status in pool.status():
            if status.state != "running":  # with the server's own last words, as `mcp doctor` shows them
                tail = "".join(f"\n    {line}" for line in stderr_lines(status.stderr_tail))
                failed[status.name] = (status.last_error or status.state) + tail
        reports = await probe(pool, setup.settings.hook_timeout_ms, str(setup.cwd), names)
    return reports, failed
