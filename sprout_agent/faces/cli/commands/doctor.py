"""`sprout-agent mcp list`, `mcp doctor` and `hooks`: what is configured, and whether each server starts.

Never imports anthropic; the mcp SDK loads only when servers are started (doctor, hooks).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, assert_never

import anyio

from sprout_agent.config.consent import (
    Approvals,
    Secrets,
    Verdict,
    for_reading,
    held_back_notice,
    secrets_in,
    trusted_by_environment,
)
from sprout_agent.config.dotenv_file import read_dotenv
from sprout_agent.config.files import (
    BrokenServer,
    ListedTransport,
    LoadedConfig,
    ServerConfig,
    listed_transport,
    load_config,
    session_only,
    with_builtin_servers,
)
from sprout_agent.config.sandboxing import SandboxPlan, plan
from sprout_agent.config.settings import Settings, child_environment, elicitation_policy
from sprout_agent.core.events import Event, Notice
from sprout_agent.core.hooks.contract import HOOK_POINTS, TOOL_HOOKS, is_hook, parse_allowlist
from sprout_agent.core.permission_mode import PermissionMode
from sprout_agent.core.protocols import ToolSpec
from sprout_agent.trust.untrusted import printable

BUILT_IN = "built in"
NOT_APPROVED = "not approved"  # a project server held back for consent: not started, not a failure
SESSION_ONLY = "session only"  # a server only a running session can serve (config/files.session_only): skipped
SKIPPED = (NOT_APPROVED, SESSION_ONLY)
KNOWN_HOOKS = HOOK_POINTS

if TYPE_CHECKING:
    from sprout_agent.session.server_pool import ServerPlace


@dataclass(frozen=True, slots=True)
class Setup:
    """The configuration exactly as a run in `cwd` would see it, but with bad entries kept, not fatal."""

    cwd: Path
    env: dict[str, str]
    settings: Settings
    loaded: LoadedConfig  # every server, approved or not: `verdict` says which may start
    approvals: Approvals
    trusted: bool  # --trust-project or SPROUT_AGENT_TRUST_PROJECT: project servers start without approval
    # consent.for_reading: every text shown (command, args, url, errors, notices) goes through it
    mask: Callable[[str], str]
    sandbox: SandboxPlan = field(default_factory=SandboxPlan.off)  # as a run here would have it
    data: Path | None = None  # the user data directory: OAuth tokens when the OS has no keyring
    secrets: Secrets = field(default_factory=Secrets)  # in the definitions, yours and the .env's (consent.py)

    def place(self) -> ServerPlace:
        """Where the servers start: as a run here would start them (without --verbose: no stderr log)."""
        from sprout_agent.session.server_pool import ServerPlace

        elicitation = elicitation_policy(None, os.environ)  # never .env, as in a run
        return ServerPlace(self.settings, os.environ, self.sandbox, self.cwd, self.data, None, elicitation)

    def verdict(self, config: ServerConfig) -> Verdict | None:
        """None for a server that needs no consent (not from the project's file)."""
        if not config.project:
            return None
        return Verdict.APPROVED if self.trusted else self.approvals.verdict(config, self.secrets)


def load_setup(
    config_files: Sequence[Path], cwd: Path, user_config_dir: Path | None, data_dir: Path | None, trust: bool
) -> Setup:
    dotenv = read_dotenv(cwd)
    env = {**dotenv.values, **os.environ}  # the real environment wins over .env, as in a run
    settings = Settings.from_env(env)
    loaded = load_config(config_files, cwd, env, user_config_dir, strict=False, user_env=os.environ)
    loaded = replace(loaded, notices=loaded.notices + dotenv.notices)
    trusted = trust or trusted_by_environment(os.environ)
    hidden = tuple(p for p in (data_dir, user_config_dir) if p is not None)
    hidden += loaded.sandbox.deny_read
    sandbox = plan(
        None, None, loaded.sandbox.allow_write, permission_mode=PermissionMode.AUTO, cwd=cwd, hidden=hidden,
        environ=os.environ, strict=False,
    )  # fmt: skip
    servers = with_builtin_servers(loaded, settings.builtin_servers, cwd, sandbox.server_env())
    secrets = secrets_in(env, os.environ)
    mask = for_reading(secrets, env, servers.servers)
    approvals = Approvals.load(data_dir)
    return Setup(cwd, env, settings, servers, approvals, trusted, mask, sandbox, data_dir, secrets)


@dataclass(slots=True)
class ServerReport:
    name: str
    source: str  # the config file, or "built in"
    command: str
    args: list[str]
    ok: bool = False
    state: str = "not started"  # running | failed | config error | missing command
    error: str = ""
    unset_vars: list[str] = field(default_factory=list[str])
    initialize_seconds: float | None = None  # spawn + initialize handshake
    list_seconds: float | None = None  # tools/list
    tools: list[str] = field(default_factory=list[str])
    hooks: list[str] = field(default_factory=list[str])
    hooks_active: bool = False  # under the current MCP_HOOK_SERVERS
    stderr_tail: str = ""
    approval: str = ""  # project servers only: approved | not approved | declined | changed
    sandbox: str = ""  # the OS sandbox it starts in (its "sandbox" key, as this run would apply it); "" = none
    transport: ListedTransport = "stdio"  # a built-in server is "stdio" here (config/files.py listed_transport)
    url: str | None = None  # a remote server's (its command is then "<transport> <url>")


def _source(path: Path | None, cwd: Path) -> str:
    if path is None:
        return BUILT_IN
    try:
        return str(path.relative_to(cwd))
    except ValueError:
        return str(path)


def _report(config: ServerConfig, setup: Setup) -> ServerReport:
    match config.transport:
        case "stdio" | "in-process":
            command = config.command
        case "sdk":
            command = "sdk (hosted by the Claude Agent SDK driving a run)"
        case "http" | "sse":
            command = f"{config.transport} {config.url}"
        case _:
            assert_never(config.transport)
    mask = setup.mask
    source, args = _source(config.source, setup.cwd), [mask(arg) for arg in config.args]
    report = ServerReport(mask(config.name), source, mask(command), args)
    report.transport, report.url = listed_transport(config.transport), None if config.url is None else mask(config.url)
    verdict = setup.verdict(config)
    report.approval = "" if verdict is None else verdict.value
    if config.sandbox is not None:
        report.sandbox = (
            config.sandbox
            if setup.sandbox.active
            else f"{config.sandbox} asked, not applied (sandbox {setup.sandbox.describe()})"
        )
    return report


def _broken_report(entry: BrokenServer, setup: Setup) -> ServerReport:
    error = setup.mask(entry.error)
    report = ServerReport(entry.name, _source(entry.source, setup.cwd), "", [], state="config error", error=error)
    report.unset_vars = list(entry.unset_vars)
    return report


def missing_command(config: ServerConfig, env: Mapping[str, str]) -> str | None:
    """Why the command cannot be started, checked before spawning; None when it can be found."""
    command = config.command
    if config.transport in ("sdk", "http", "sse"):  # nothing to find: connecting says whether it is there
        return None
    if os.sep in command or (os.altsep is not None and os.altsep in command):
        path = Path(config.cwd or ".") / command  # an absolute command path ignores the left side
        if path.is_file() and os.access(path, os.X_OK):
            return None
        return f"command not found or not executable: {command}"
    if shutil.which(command, path=env.get("PATH")) is None:
        return f"command not found on PATH: {command}"
    return None


# ---------------------------------------------------------------- list


def list_reports(setup: Setup) -> list[ServerReport]:
    return [_report(c, setup) for c in setup.loaded.servers] + [_broken_report(b, setup) for b in setup.loaded.broken]


def list_command(setup: Setup, as_json: bool) -> int:
    reports = list_reports(setup)
    if as_json:
        keys = ("name", "source", "transport", "url", "command", "args", "error", "unset_vars", "approval")
        _print_json(setup, [{key: asdict(report)[key] for key in keys} for report in reports])
        return 0
    _print_notices(setup, setup.loaded.notices)
    if not reports:
        print("no MCP servers configured")
    for report in reports:
        line = report.error if report.state == "config error" else " ".join([report.command, *report.args])
        approval = f"  [{report.approval}]" if report.approval else ""
        print(f"{report.name}  ({report.source}){approval}  {printable(line)}")
    return 0


# ---------------------------------------------------------------- doctor


async def diagnose(setup: Setup, timeout: float | None) -> tuple[list[ServerReport], list[str]]:
    """Starts every startable server at once (each bounded by its start timeout, or `timeout`)."""
    reports = {config.name: _report(config, setup) for config in setup.loaded.servers}
    startable: list[ServerConfig] = []
    for config in setup.loaded.servers:
        problem = missing_command(config, child_environment(os.environ, config.env))
        verdict = setup.verdict(config)
        why = session_only(config)
        if why is not None:
            reports[config.name].state, reports[config.name].error = SESSION_ONLY, why
        elif verdict not in (None, Verdict.APPROVED):
            reports[config.name].state = NOT_APPROVED
            reports[config.name].error = setup.mask(held_back_notice(config, verdict))
        elif problem is None:
            startable.append(replace(config, start_timeout=timeout) if timeout else config)
        else:
            reports[config.name].state, reports[config.name].error = "missing command", setup.mask(problem)
    notices = await _start(startable, setup, reports) if startable else []
    broken = [_broken_report(entry, setup) for entry in setup.loaded.broken]
    return [*reports.values(), *broken], notices


async def _start(configs: list[ServerConfig], setup: Setup, reports: dict[str, ServerReport]) -> list[str]:
    from sprout_agent.session.server_pool import server_pool  # the pool loads mcp itself, in a thread, after spawning

    notices: list[str] = []

    def emit(event: Event) -> None:
        if isinstance(event, Notice):
            notices.append(event.text)

    pool = server_pool(configs, setup.place(), emit)  # as a run starts them: one factory
    allowlist = parse_allowlist(setup.settings.hook_servers)
    async with pool:
        specs: list[ToolSpec] = list(pool.tools())
        for status in pool.status():
            report = reports[status.name]
            report.ok = status.state == "running"
            report.state, report.error = status.state, setup.mask(status.last_error)
            report.initialize_seconds, report.list_seconds = status.initialize_seconds, status.list_seconds
            report.stderr_tail = "" if report.ok else setup.mask(status.stderr_tail)
            # A server may name a tool after what it was given (its env): shown through the mask like the rest.
            report.tools = [setup.mask(s.tool) for s in specs if s.server == status.name and not is_hook(s)]
            report.hooks = [setup.mask(s.tool) for s in specs if s.server == status.name and is_hook(s)]
            report.hooks_active = bool(report.hooks) and allowlist is not None and allowlist.allows(status.name)
    return notices


def doctor_command(setup: Setup, timeout: float | None, as_json: bool) -> int:
    reports, notices = anyio.run(diagnose, setup, timeout)
    sandbox = setup.sandbox
    sandbox_ok = not (sandbox.policy.required and sandbox.unavailable is not None)
    ok = sandbox_ok and all(report.ok or report.state in SKIPPED for report in reports)
    if as_json:
        _print_json(setup, [asdict(report) for report in reports], ok=ok, notices=notices)
    else:
        _print_notices(setup, [*setup.loaded.notices, *notices])
        for report in reports:
            print("\n".join(_doctor_lines(report, setup)))
        held = sum(report.state == NOT_APPROVED for report in reports)
        in_session = sum(report.state == SESSION_ONLY for report in reports)
        failed = sum(not report.ok for report in reports) - held - in_session
        summary = f"{len(reports) - failed - held - in_session} of {len(reports)} servers OK" + (
            f", {failed} failed" if failed else ""
        )
        summary += f", {in_session} only inside a session (not started)" if in_session else ""
        print(summary + (f", {held} not approved (not started)" if held else ""))
        mark = (
            "ok" if sandbox.active else "off" if sandbox.policy.mode == "off" else "FAIL" if not sandbox_ok else "warn"
        )
        print(f"[{mark}] sandbox for dev__bash: {sandbox.describe()}")
    return 0 if ok else 1


def _login(report: ServerReport) -> bool:
    return report.state == "needs login"


def stderr_lines(tail: str) -> list[str]:
    """A server's stderr tail as a person reads it under its failure: its own words, marked and escaped."""
    return [f"| {printable(line)}" for line in tail.splitlines()]


def _doctor_lines(report: ServerReport, setup: Setup) -> list[str]:
    command = " ".join([report.command, *report.args])
    mark = "ok" if report.ok else "skip" if report.state in SKIPPED else "login" if _login(report) else "FAIL"
    lines = [f"[{mark}] {report.name}  ({report.source})  {printable(command)}".rstrip()]
    if report.sandbox:
        lines.append(f"    sandbox: {report.sandbox}")
    if report.unset_vars:
        lines.append(f"    unset variables: {', '.join('${' + name + '}' for name in report.unset_vars)}")
    if not report.ok:
        state = "" if _login(report) else f"{report.state}: "  # its error says "needs login: run …" already
        lines.append(f"    {state}{printable(report.error or 'unknown reason')}")
        lines += [f"    {line}" for line in stderr_lines(report.stderr_tail)]
        return lines
    lines.append(f"    initialize {_seconds(report.initialize_seconds)}, tools/list {_seconds(report.list_seconds)}")
    lines.append(f"    tools ({len(report.tools)}): {', '.join(report.tools) or '-'}")
    if report.hooks:
        lines.append(f"    hooks: {', '.join(report.hooks)} ({_hook_state(report, setup)})")
    return lines


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} s"


def _hook_state(report: ServerReport, setup: Setup) -> str:
    unknown = [hook for hook in report.hooks if hook not in KNOWN_HOOKS]
    note = f"; never called: {', '.join(unknown)}" if unknown else ""
    if report.hooks_active:
        return f"active{note}"
    raw = setup.settings.hook_servers
    why = "MCP_HOOK_SERVERS is unset" if not (raw or "").strip() else f"MCP_HOOK_SERVERS={raw} leaves it out"
    return f"inactive: {why}{note}"


# ---------------------------------------------------------------- hooks


def hooks_command(setup: Setup, timeout: float | None, as_json: bool) -> int:
    reports, _ = anyio.run(diagnose, setup, timeout)
    tool_hooks = setup.settings.tool_hooks  # _PreToolUse and _PostToolUse need SPROUT_AGENT_TOOL_HOOKS=1 too
    rows = [
        {
            "server": r.name,
            "hook": hook,
            "active": r.hooks_active and (tool_hooks or hook not in TOOL_HOOKS),
            "known": hook in KNOWN_HOOKS,
        }
        for r in reports
        for hook in r.hooks
    ]
    failed = [r for r in reports if not r.ok and r.state not in SKIPPED]
    if as_json:
        print(json.dumps({"hooks": rows, "failed_servers": [r.name for r in failed]}, indent=2))
    else:
        for row in rows:
            state = "active" if row["active"] else "inactive"
            note = "" if row["known"] else "  (never called)"
            if row["hook"] in TOOL_HOOKS and not tool_hooks:
                note = "  (needs SPROUT_AGENT_TOOL_HOOKS=1)"
            print(f"{row['server']}  {row['hook']}  {state}{note}")
        if not rows:
            print("no hooks found")
        for report in failed:
            sys.stderr.write(f"sprout-agent: server {report.name} failed: {printable(report.error)} (see mcp doctor)\n")
    return 1 if failed else 0


# ---------------------------------------------------------------- output


def _print_notices(setup: Setup, notices: Sequence[str]) -> None:
    for notice in notices:
        sys.stderr.write(f"sprout-agent: {printable(setup.mask(notice))}\n")


def _print_json(
    setup: Setup, servers: list[dict[str, object]], *, ok: bool | None = None, notices: Sequence[str] = ()
) -> None:
    data: dict[str, object] = {
        "servers": servers,
        "files_read": [str(path) for path in setup.loaded.files_read],
        "notices": [setup.mask(notice) for notice in (*setup.loaded.notices, *notices)],
        "hook_servers": setup.settings.hook_servers,
        "sandbox": setup.sandbox.record(),
    }
    if ok is not None:
        data["ok"] = ok
    print(json.dumps(data, indent=2))
