"""Command hooks from Claude Code's settings files (`hooks`), a second hook source beside the MCP hooks and before
the SDKs' callbacks at each hook point (docs/hooks.md#command-hooks-from-settings). Each runs as Claude Code runs
it: the command in `/bin/sh -c`, its JSON input on stdin, its matcher, its `timeout`, exit code 0 (stdout read as
Claude Code's JSON output, or text), 2 (a block: stderr is the reason) or other (a warning; nothing is blocked).

Under our rules: a command that outlives its timeout is killed with its whole process group and counts as no
answer; it runs in the session's OS sandbox when the sandbox is on (`"sandbox": false` in your own settings lets a
hook out; a repository's cannot); the loop bounds its objections as it bounds the callbacks'.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

import anyio

from sprout_agent.config.claude_settings import SettingsFile
from sprout_agent.core.events import Event, Notice
from sprout_agent.core.hooks import program_callbacks as cb
from sprout_agent.core.hooks.contract import truncate
from sprout_agent.core.hooks.hook_output import HookCallbackError, matcher_error, matches, read_output
from sprout_agent.core.late import Handle
from sprout_agent.core.permissions import Policy
from sprout_agent.core.processes import signal_group, spawn
from sprout_agent.session.prepared import Prepared
from sprout_agent.trust.sandbox import Sandbox, SandboxUnavailable
from sprout_agent.trust.secrets import command_env

DEFAULT_TIMEOUT = 60.0  # seconds, Claude Code's
MAX_TIMEOUT = 600.0  # Claude Code's cap for a tool hook; no hook holds a session longer
OUTPUT_MAX_BYTES = 1024 * 1024  # of stdout and of stderr: more is cut
BLOCKING_EXIT = 2
_TEXT_IS_CONTEXT = frozenset({cb.USER_PROMPT_SUBMIT, cb.SESSION_START})  # plain stdout is context for these


@dataclass(frozen=True, slots=True)
class CommandHook:
    event: str
    matcher: str | None
    command: str
    timeout: float
    source: str  # the settings file, for notices and `hooks test`
    sandboxed: bool = True


def parse_hooks(files: tuple[tuple[SettingsFile, object], ...]) -> tuple[list[CommandHook], list[str]]:
    """Every command hook of the files (highest precedence first), and a notice for each one that cannot run."""
    hooks: list[CommandHook] = []
    notices: list[str] = []
    for found, raw in files:
        for event, matchers in _object(raw).items():
            if event not in cb.CALLED_EVENTS:
                notices.append(f"{found.shown}: hooks.{event}: sprout-agent has no such hook point; not run")
                continue
            for entry in map(_object, _items(matchers)):
                hooks += _entry_hooks(found, event, entry, notices)
    return hooks, notices


def _entry_hooks(found: SettingsFile, event: str, entry: dict[str, object], notices: list[str]) -> list[CommandHook]:
    matcher = entry.get("matcher")
    why = "not a string" if matcher is not None and not isinstance(matcher, str) else matcher_error(matcher)
    if why is not None:
        notices.append(f"{found.shown}: hooks.{event} matcher {matcher!r} is not a pattern ({why}); not run")
        return []
    made: list[CommandHook] = []
    for hook in map(_object, _items(entry.get("hooks"))):
        command, timeout = hook.get("command"), hook.get("timeout", DEFAULT_TIMEOUT)
        if hook.get("type") != "command" or not isinstance(command, str) or not command.strip():
            notices.append(f"{found.shown}: hooks.{event}: only command hooks run here; {hook.get('type')!r} skipped")
            continue
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            timeout = DEFAULT_TIMEOUT
        # Letting a hook out of the sandbox is yours to say: a repository's file cannot.
        out = hook.get("sandbox") is False and not found.repository
        made.append(
            CommandHook(
                event, cast(str | None, matcher), command, min(float(timeout), MAX_TIMEOUT), found.shown, not out
            )
        )
    return made


def _object(value: object) -> dict[str, object]:
    return cast(dict[str, object], value) if isinstance(value, dict) else {}


def _items(value: object) -> list[object]:
    return cast(list[object], value) if isinstance(value, list) else []


@dataclass(frozen=True, slots=True)
class Ran:
    """What a command did: its exit code (None: killed at its timeout), stdout and stderr."""

    code: int | None
    stdout: str
    stderr: str


class CommandHooks:
    """The settings files' command hooks, as the loop's `HookCallbacks` (program_callbacks.py)."""

    def __init__(
        self,
        hooks: list[CommandHook],
        *,
        cwd: str,
        sandbox: Sandbox | None,
        emit: Callable[[Event], None],
        common: Callable[[], Mapping[str, object]],
    ) -> None:
        self.hooks = hooks
        self.cwd = cwd
        self.sandbox = sandbox  # None or off: commands run unsandboxed, as dev__bash's do
        self.emit = emit
        self.common = common  # session_id, transcript_path, cwd, permission_mode: the session's, when asked

    def wants(self, event: str, subject: str | None = None) -> bool:
        return any(h.event == event and matches(h.matcher, subject) for h in self.hooks)

    async def run(
        self, event: str, fields: Mapping[str, object], subject: str | None = None, tool_use_id: str | None = None
    ) -> list[cb.CallbackAnswer]:
        """Every matching hook at once (one run per distinct command, as Claude Code dedupes them)."""
        chosen = list({h.command: h for h in self.hooks if h.event == event and matches(h.matcher, subject)}.values())
        payload = json.dumps({**self.common(), "hook_event_name": event, **fields}, default=str).encode()
        answers: list[cb.CallbackAnswer | None] = [None] * len(chosen)

        async def one(index: int, hook: CommandHook) -> None:
            answers[index] = self._answer(hook, await self.execute(hook, payload))

        async with anyio.create_task_group() as group:
            for index, hook in enumerate(chosen):
                group.start_soon(one, index, hook)
        return [answer for answer in answers if answer is not None]

    async def execute(self, hook: CommandHook, payload: bytes) -> Ran:
        """Runs the command (in the sandbox when on), its input on stdin; killed with its group at its timeout."""
        argv, env = ["/bin/sh", "-c", hook.command], {**command_env(), "CLAUDE_PROJECT_DIR": self.cwd}
        if hook.sandboxed and self.sandbox is not None:
            try:
                argv, env = self.sandbox.wrap(argv, env)
            except SandboxUnavailable as error:
                return Ran(126, "", str(error))
        try:
            process = await spawn(argv, env, self.cwd)
        except OSError as error:
            return Ran(127, "", f"cannot start /bin/sh: {error.strerror}")
        out: list[bytes] = [b"", b""]
        code: int | None = None
        try:
            with anyio.move_on_after(hook.timeout):
                async with anyio.create_task_group() as group:
                    group.start_soon(_feed, process.process, payload)
                    group.start_soon(_drain, process.process.stdout, out, 0)
                    group.start_soon(_drain, process.process.stderr, out, 1)
                code = await process.process.wait()
        finally:  # past its timeout, or the turn cancelled around it: the command and its children go
            if code is None:
                signal_group(process.pid, signal.SIGKILL)
                with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                    await process.process.wait()
        return Ran(code, _text(out[0]), _text(out[1]))

    def _answer(self, hook: CommandHook, ran: Ran) -> cb.CallbackAnswer | None:
        """The hook's answer as Claude Code reads the exit code and output; a warning where it says nothing."""
        where = f"{hook.event} hook `{truncate(hook.command, 80)}` ({hook.source})"
        if ran.code is None:
            self.emit(Notice(f"{where} ran past its {hook.timeout:g} s timeout and was killed", "warning"))
            return None
        if ran.code == BLOCKING_EXIT:
            return cb.CallbackAnswer(block=ran.stderr.strip() or f"blocked by {where}")
        if ran.code != 0:
            self.emit(Notice(f"{where} failed (exit {ran.code}): {truncate(ran.stderr.strip(), 400)}", "warning"))
            return None
        return self._stdout(hook, where, ran.stdout.strip())

    def _stdout(self, hook: CommandHook, where: str, stdout: str) -> cb.CallbackAnswer | None:
        if not stdout:
            return None
        try:
            output: object = json.loads(stdout)
        except ValueError:
            output = None
        if not isinstance(output, dict):
            return cb.CallbackAnswer(context=truncate(stdout)) if hook.event in _TEXT_IS_CONTEXT else None
        body = cast(dict[str, Any], output)
        try:
            answer = read_output(body)
        except HookCallbackError as error:
            self.emit(Notice(f"{where}: {error}", "warning"))
            return None
        if isinstance(message := body.get("systemMessage"), str) and message:
            self.emit(Notice(truncate(message, 400), "warning"))
        return answer


async def _feed(process: Any, payload: bytes) -> None:
    """The input on stdin, then EOF; a command that never reads it is fine."""
    stdin = process.stdin
    if stdin is None:
        return
    try:
        await stdin.send(payload)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass
    finally:
        await stdin.aclose()


async def _drain(stream: Any, out: list[bytes], index: int) -> None:
    """Reads a stream to its end, keeping the first OUTPUT_MAX_BYTES."""
    if stream is None:
        return
    async for chunk in stream:
        if len(out[index]) < OUTPUT_MAX_BYTES:
            out[index] += chunk[: OUTPUT_MAX_BYTES - len(out[index])]


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def settings_hooks(
    p: Prepared, emit: Callable[[Event], None], session_id: str, transcript: str, policy: Handle[Policy]
) -> CommandHooks | None:
    """The session's command hooks (None: no settings file has one); a hook that cannot run is a warning."""
    if not p.claude.hooks:
        return None
    hooks, notices = parse_hooks(p.claude.hooks)
    for notice in notices:
        emit(Notice(notice, "warning"))
    cwd = str(p.options.cwd)

    def common() -> dict[str, object]:
        mode = policy.get().permission_mode.claude_name  # bound: no hook runs before the agent, its policy, exists
        return {"session_id": session_id, "transcript_path": transcript, "cwd": cwd,
                "permission_mode": str(mode)}  # fmt: skip

    sandbox = Sandbox(p.sandbox.policy) if p.sandbox.active else None
    return CommandHooks(hooks, cwd=cwd, sandbox=sandbox, emit=emit, common=common) if hooks else None
