"""`sprout-agent hooks test`'s second half: the settings files' command hooks, each run once as a session here would
run it (sandbox, timeout, kill) with a sample of its event's input, its exit code and output checked against
Claude Code's contract. A repository's hooks you have not approved are listed, never run."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import anyio

from sprout_agent.config.applied_settings import apply, verdicts
from sprout_agent.config.claude_settings import Places, load_settings
from sprout_agent.config.sandboxing import SandboxPlan
from sprout_agent.core.events import Event, Notice
from sprout_agent.core.hooks import program_callbacks as cb
from sprout_agent.core.hooks.hook_output import HookCallbackError, read_output
from sprout_agent.session.command_hooks import BLOCKING_EXIT, CommandHook, CommandHooks, parse_hooks
from sprout_agent.trust.sandbox import Sandbox

_SAMPLES: Mapping[str, Mapping[str, object]] = {
    cb.PRE_TOOL_USE: {"tool_name": "Bash", "tool_input": {"command": "true"}, "tool_use_id": "toolu_hooks_test"},
    cb.POST_TOOL_USE: {
        "tool_name": "Bash",
        "tool_input": {"command": "true"},
        "tool_response": [],
        "tool_use_id": "toolu_hooks_test",
    },
    cb.POST_TOOL_USE_FAILURE: {"tool_name": "Bash", "tool_input": {"command": "false"}, "error": "[exit code: 1]"},
    cb.USER_PROMPT_SUBMIT: {"prompt": "sprout-agent hooks test"},
    cb.STOP: {"stop_hook_active": False, "last_assistant_message": ""},
    cb.SUBAGENT_STOP: {"stop_hook_active": False, "last_assistant_message": "", "agent_type": "general-purpose"},
    cb.SUBAGENT_START: {"agent_id": "hooks-test", "agent_type": "general-purpose"},
    cb.PRE_COMPACT: {"trigger": "manual", "custom_instructions": None},
    cb.SESSION_START: {"source": "startup"},
    cb.SESSION_END: {"reason": "other"},
    cb.NOTIFICATION: {"message": "sprout-agent hooks test", "notification_type": "permission_prompt"},
}


@dataclass(frozen=True, slots=True)
class CommandReport:
    hook: CommandHook
    line: str
    ok: bool


def command_hook_reports(cwd: Path, home: Path | None, ours: Path | None, data: Path | None, trusted: bool,
                         sandbox: SandboxPlan) -> tuple[list[CommandReport], list[str]]:  # fmt: skip
    """Every command hook of the settings files here, run once; the lines for the hooks that cannot run."""
    from sprout_agent.config.consent import Approvals

    found = load_settings(Places(cwd, home, ours))
    applied = apply(found, verdicts(Approvals.load(data), trusted), cwd=cwd, home=home, run_mode="auto")
    hooks, notices = parse_hooks(applied.hooks)
    notices = [*applied.notices, *(held.notice() for held in applied.held if "hooks" in held.widening), *notices]
    said: list[str] = []

    def emit(event: Event) -> None:
        if isinstance(event, Notice):
            said.append(event.text)

    runner = CommandHooks(hooks, cwd=str(cwd), sandbox=Sandbox(sandbox.policy) if sandbox.active else None,
                          emit=emit, common=lambda: {"session_id": "hooks-test", "transcript_path": "",
                                                     "cwd": str(cwd), "permission_mode": "default"})  # fmt: skip
    reports = [anyio.run(_probe, runner, hook) for hook in hooks]
    return reports, [*notices, *said]


async def _probe(runner: CommandHooks, hook: CommandHook) -> CommandReport:
    fields = {**runner.common(), "hook_event_name": hook.event, **_SAMPLES.get(hook.event, {})}
    started = time.monotonic()
    ran = await runner.execute(hook, json.dumps(fields).encode())
    took = f"{time.monotonic() - started:.2f} s"
    name = f"{hook.event}{f'[{hook.matcher}]' if hook.matcher else ''} `{hook.command}` ({hook.source})"
    if ran.code is None:
        return CommandReport(hook, f"✗ {name}: ran past its {hook.timeout:g} s timeout and was killed", False)
    if ran.code == BLOCKING_EXIT:
        return CommandReport(hook, f"✓ {name}: blocks (exit 2) in {took}: {ran.stderr.strip()[:200]}", True)
    if ran.code != 0:
        why = ran.stderr.strip()[:200]
        return CommandReport(hook, f"✗ {name}: exit {ran.code} in {took} (nothing is blocked): {why}", False)
    return _output(hook, name, took, ran.stdout.strip())


def _output(hook: CommandHook, name: str, took: str, stdout: str) -> CommandReport:
    try:
        output: object = json.loads(stdout) if stdout.startswith("{") else None
    except ValueError:
        return CommandReport(hook, f"✗ {name}: exit 0 in {took}, but its output is not valid JSON", False)
    if isinstance(output, dict):
        try:
            read_output(output)  # pyright: ignore[reportUnknownArgumentType]
        except HookCallbackError as error:
            return CommandReport(
                hook, f"✗ {name}: exit 0 in {took}, output against Claude Code's contract: {error}", False
            )
        return CommandReport(hook, f"✓ {name}: exit 0 in {took}, JSON output read", True)
    return CommandReport(hook, f"✓ {name}: exit 0 in {took}" + (", text output" if stdout else ""), True)


def home_dir() -> Path | None:
    return Path(os.environ["HOME"]) if os.environ.get("HOME") else None
