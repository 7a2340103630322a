"""The `mcp` and `hooks` subcommands (Typer): the configured servers listed, checked, approved, logged in to,
and their hooks listed or tested. Split from app.py to keep each under the module cap; bodies live elsewhere."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from sprout_agent.config.locations import Locations
from sprout_agent.core.errors import EXIT_USAGE, exit_code_of
from sprout_agent.faces.cli import flags as o
from sprout_agent.faces.cli.exits import exit_now, fail
from sprout_agent.faces.cli.flags import ConfigOption as _ConfigOption

if TYPE_CHECKING:
    from sprout_agent.faces.mcp_serve.listening import Listening

mcp_app = typer.Typer(help="The configured MCP servers: list them, or start each one and report.", no_args_is_help=True)
_CwdOption = Annotated[
    Path | None, typer.Option(metavar="PATH", help="Look up the config as a run in this directory would.")
]
_JsonOption = Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")]
_TimeoutOption = Annotated[
    float | None,
    typer.Option("--timeout", min=0.1, metavar="SECONDS", help="Start timeout per server, seconds (default: its own)."),
]


def _doctor_setup(ctx: typer.Context, config: list[Path] | None, cwd: Path | None) -> object:
    from sprout_agent.faces.cli.commands import doctor

    # `sprout-agent --config x.json mcp doctor` works too: the top-level options apply.
    top = ctx.find_root().params
    config, cwd = config or top.get("config"), cwd or top.get("cwd")
    work_dir = (cwd or Path.cwd()).resolve()
    if not work_dir.is_dir():
        fail(f"--cwd {work_dir}: not a directory", EXIT_USAGE)
    where = Locations.for_user()
    return doctor.load_setup(tuple(config or ()), work_dir, where.config, where.data, bool(top.get("trust_project")))


@mcp_app.command("list")
def mcp_list(
    ctx: typer.Context, config: _ConfigOption = None, cwd: _CwdOption = None, as_json: _JsonOption = False
) -> None:
    """Show the configured servers (built-in ones included), where each came from, and its command."""
    from sprout_agent.faces.cli.commands import doctor

    setup = _doctor_setup(ctx, config, cwd)
    assert isinstance(setup, doctor.Setup)
    exit_now(doctor.list_command(setup, as_json))


@mcp_app.command("doctor")
def mcp_doctor(
    ctx: typer.Context,
    config: _ConfigOption = None,
    cwd: _CwdOption = None,
    timeout: _TimeoutOption = None,
    as_json: _JsonOption = False,
) -> None:
    """Start every server and report start-up times, tools, hooks, errors and stderr; exit 1 if any fails."""
    from sprout_agent.faces.cli.commands import doctor

    setup = _doctor_setup(ctx, config, cwd)
    assert isinstance(setup, doctor.Setup)
    exit_now(_interruptible(lambda: doctor.doctor_command(setup, timeout, as_json)))


_NamesArgument = Annotated[list[str] | None, typer.Argument(help="Project server names (see mcp list).")]
_AllOption = Annotated[bool, typer.Option("--all", help="Every server in the project's .mcp.json.")]


@mcp_app.command("approve")
def mcp_approve(
    ctx: typer.Context, names: _NamesArgument = None, every: _AllOption = False, cwd: _CwdOption = None
) -> None:
    """Approve project servers (the nearest .mcp.json here or above) so that runs here start them."""
    from sprout_agent.faces.cli.commands import consent as consent_commands
    from sprout_agent.faces.cli.commands import doctor

    setup = _doctor_setup(ctx, None, cwd)
    assert isinstance(setup, doctor.Setup)
    exit_now(consent_commands.consent_command(setup, names or (), every, approve=True))


@mcp_app.command("revoke")
def mcp_revoke(
    ctx: typer.Context, names: _NamesArgument = None, every: _AllOption = False, cwd: _CwdOption = None
) -> None:
    """Withdraw approvals: the project servers ask again (and headless runs do not start them)."""
    from sprout_agent.faces.cli.commands import consent as consent_commands
    from sprout_agent.faces.cli.commands import doctor

    setup = _doctor_setup(ctx, None, cwd)
    assert isinstance(setup, doctor.Setup)
    exit_now(consent_commands.consent_command(setup, names or (), every, approve=False))


@mcp_app.command("import")
def mcp_import(
    source: Annotated[str, typer.Argument(metavar="claude", help="Where from: claude (Claude Code).")],
    path: Annotated[
        Path | None, typer.Option("--from", metavar="PATH", help="Claude Code's file (default ~/.claude.json).")
    ] = None,
    project: Annotated[
        Path | None, typer.Option(metavar="DIR", help="Copy this directory's local-scope servers instead.")
    ] = None,
    force: Annotated[bool, typer.Option(help="Replace our servers of the same name.")] = False,
    dry_run: Annotated[bool, typer.Option(help="Show what would be copied; write nothing.")] = False,
) -> None:
    """Copy Claude Code's user-scope MCP servers (~/.claude.json) into your sprout-agent user config."""
    from sprout_agent.config.mcp_import import CLAUDE_FILE, import_command

    if source != "claude":
        fail(f"mcp import: unknown source {source!r} (known: claude)", EXIT_USAGE)
    where = Locations.for_user()
    origin = path or Path.home() / CLAUDE_FILE
    exit_now(import_command(origin, where.config, project=project, force=force, dry_run=dry_run))


_NameArgument = Annotated[str, typer.Argument(help="A remote (http or sse) server's name (see mcp list).")]


@mcp_app.command("login")
def mcp_login(ctx: typer.Context, name: _NameArgument, config: _ConfigOption = None, cwd: _CwdOption = None) -> None:
    """Log in to a remote server with OAuth (opens the browser); runs here later use the stored tokens."""
    from sprout_agent.faces.cli.commands import doctor
    from sprout_agent.faces.cli.commands import oauth as oauth_commands

    setup = _doctor_setup(ctx, config, cwd)
    assert isinstance(setup, doctor.Setup)
    exit_now(_interruptible(lambda: oauth_commands.login_command(setup, name)))


@mcp_app.command("logout")
def mcp_logout(ctx: typer.Context, name: _NameArgument, config: _ConfigOption = None, cwd: _CwdOption = None) -> None:
    """Forget a remote server's OAuth tokens (and its client registration)."""
    from sprout_agent.faces.cli.commands import doctor
    from sprout_agent.faces.cli.commands import oauth as oauth_commands

    setup = _doctor_setup(ctx, config, cwd)
    assert isinstance(setup, doctor.Setup)
    exit_now(oauth_commands.logout_command(setup, name))


@mcp_app.command("serve")
def mcp_serve(
    ctx: typer.Context,
    http: Annotated[
        str | None,
        typer.Option(
            metavar="[HOST:]PORT",
            help="Serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio (HOST: 127.0.0.1 unless given; "
            "anyone who can reach it drives the agent as you: docs/mcp-serve.md).",
        ),
    ] = None,
    max_sessions: Annotated[
        int, typer.Option(min=1, max=64, metavar="N", help="Calls that may run at once; past it a call is refused.")
    ] = 4,
    config_files: _ConfigOption = None,
    model: o.ModelOption = None,
    max_requests: o.MaxRequestsOption = None,
    max_budget_usd: o.MaxBudgetOption = None,
    permission_mode: o.PermissionModeOption = None,
    allow_tools: o.AllowToolsOption = None,
    deny_tools: o.DenyToolsOption = None,
    trust_project: o.TrustProjectOption = False,
    sandbox: o.SandboxOption = None,
    sandbox_network: o.SandboxNetworkOption = None,
    sandbox_allow_write: o.SandboxAllowWriteOption = None,
) -> None:
    """Serve the agent itself over MCP: a `sprout` tool (a whole task, run as -p runs it) and `sprout-reply`.
    What this command allows is the most a call may ask for (docs/mcp-serve.md)."""
    import os

    from sprout_agent.config.settings import model_id
    from sprout_agent.core.errors import UsageError
    from sprout_agent.faces.mcp_serve.calls import ServeSetup
    from sprout_agent.faces.mcp_serve.serve import serve

    try:
        if model is not None:
            model_id(model, "--model")
        listening = _listening(http) if http is not None else None
    except UsageError as error:
        fail(str(error), error.exit_code)
    if listening is not None and (refusal := listening.refusal(os.environ)) is not None:
        fail(refusal, EXIT_USAGE)
    template = o.served_template(
        ctx.params,
        config_files,
        permission_mode,
        allow_tools,
        deny_tools,
        sandbox_allow_write,
        cwd=Path.cwd().resolve(),
    )
    exit_now(serve(ServeSetup(template, Locations.for_user(), dict(os.environ), max_sessions), listening))


def _listening(spec: str) -> Listening:
    """`--http [HOST:]PORT` (an IPv6 host in brackets); loopback unless a host is named."""
    from sprout_agent.core.errors import UsageError
    from sprout_agent.faces.mcp_serve.listening import Listening

    host, _, port = spec.rpartition(":")
    host = host.removeprefix("[").removesuffix("]") or "127.0.0.1"
    if not port.isdigit() or int(port) > 65535 or not host.strip():
        raise UsageError(f"--http takes [HOST:]PORT (a port from 0 to 65535), got {spec!r}")
    return Listening(host, int(port))


hooks_app = typer.Typer(
    help="The hooks the configured servers expose: list them, or test them against the contract.",
    invoke_without_command=True,
)


@hooks_app.callback()
def hooks_list(
    ctx: typer.Context,
    config: _ConfigOption = None,
    cwd: _CwdOption = None,
    timeout: _TimeoutOption = None,
    as_json: _JsonOption = False,
) -> None:
    """Start every server and list the hooks found, active or not under MCP_HOOK_SERVERS."""
    from sprout_agent.faces.cli.commands import doctor

    if ctx.invoked_subcommand is not None:
        return
    setup = _doctor_setup(ctx, config, cwd)
    assert isinstance(setup, doctor.Setup)
    exit_now(_interruptible(lambda: doctor.hooks_command(setup, timeout, as_json)))


_ServersArgument = Annotated[list[str] | None, typer.Argument(help="Server names to test (default: every server).")]


@hooks_app.command("test")
def hooks_test(
    ctx: typer.Context,
    servers: _ServersArgument = None,
    config: _ConfigOption = None,
    cwd: _CwdOption = None,
    timeout: _TimeoutOption = None,
    as_json: _JsonOption = False,
) -> None:
    """Call each hook with sample contexts and {}; report inputs, latency, answers, verdict; exit 1 on a break."""
    from sprout_agent.faces.cli.commands import doctor
    from sprout_agent.faces.cli.commands.hooks_test import hooks_test_command

    setup = _doctor_setup(ctx, config, cwd)
    assert isinstance(setup, doctor.Setup)
    exit_now(_interruptible(lambda: hooks_test_command(setup, servers or (), timeout, as_json)))


def _interruptible(command: Callable[[], int]) -> int:
    try:
        return command()
    except KeyboardInterrupt as error:  # Typer would print "Aborted!" and exit 1
        return exit_code_of(error)
