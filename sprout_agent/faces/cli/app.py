"""The `sprout-agent` command (Typer): parses flags and picks the mode; heavy libraries load lazily."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from sprout_agent import CLAUDE_CODE_PROTOCOL, __version__
from sprout_agent.config.locations import Locations
from sprout_agent.config.settings import EFFORT_LEVELS, THINKING_SETTINGS, choice, model_id
from sprout_agent.core.errors import UsageError
from sprout_agent.faces.cli import flags as o
from sprout_agent.faces.cli.argv import POSITIONAL, PromptOrCommand
from sprout_agent.faces.cli.commands.batch import batch_app
from sprout_agent.faces.cli.commands.servers import hooks_app, mcp_app
from sprout_agent.faces.cli.commands.sessions_app import sessions_app
from sprout_agent.faces.cli.exits import exit_now, fail, fail_as
from sprout_agent.faces.cli.flags import InputFormat, OutputFormat

app = typer.Typer(
    cls=PromptOrCommand,
    subcommand_metavar="[PROMPT] | COMMAND [ARGS]...",
    add_completion=False,
    no_args_is_help=False,
    help="sprout-agent: a coding agent with MCP tools and MCP-driven lifecycle hooks.\n\n"
    'In a terminal it is an interactive session (`sprout-agent "PROMPT"` starts it with that prompt); with -p '
    "or piped stdin it runs one prompt to completion (answer on stdout, progress on stderr). "
    '`cat log | sprout-agent -p "explain this"` attaches the piped text to the prompt. '
    "Claude Code's other flags are accepted: mapped onto ours, or ignored with a warning (docs/cli.md).",
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)


def _prompt_tool(value: str | None, input_format: InputFormat, output_format: OutputFormat) -> str | None:
    """`--permission-prompt-tool stdio` (what the SDKs pass with a can_use_tool callback): only with stream-json
    input, the channel the SDK answers on. Claude Code's other form, an MCP tool's name, is not supported."""
    if value is not None and (value != "stdio" or input_format is not InputFormat.stream_json):
        fail_as(output_format.value, "--permission-prompt-tool takes stdio, with --input-format stream-json")
    return value


def _rules(ours: list[str] | None, claude: list[str] | None, *, deny: bool) -> tuple[str, ...]:
    """Our patterns plus Claude Code's rules translated (claude_rules.py); a rule not honoured is a warning."""
    from sprout_agent.core.claude_rules import translate

    translated = translate(claude or (), deny=deny)
    for warning in translated.warnings:
        sys.stderr.write(f"sprout-agent: {warning}\n")
    return o.patterns(ours) + translated.patterns


def _version(value: bool) -> None:
    if value:
        typer.echo(f"sprout-agent {__version__} (Claude Code headless protocol {CLAUDE_CODE_PROTOCOL})")
        raise typer.Exit()


@app.callback(invoke_without_command=True)
def main_command(
    ctx: typer.Context,
    print_mode: Annotated[
        bool, typer.Option("--print", "-p", help="Run the prompt (argument or piped stdin) to completion and exit.")
    ] = False,
    prompt: Annotated[
        str | None, typer.Option("--prompt", metavar="TEXT", help="The prompt, as an option (implies --print).")
    ] = None,
    config_files: o.ConfigOption = None,
    mcp_configs: o.McpConfigOption = None,
    model: o.ModelOption = None,
    fallback_model: o.FallbackModelOption = None,
    system_prompt: o.SystemPromptOption = None,
    append_system_prompt: o.AppendSystemPromptOption = None,
    max_requests: o.MaxRequestsOption = None,
    cwd: Annotated[
        Path | None, typer.Option(metavar="PATH", help="Working directory for the agent and its tools.")
    ] = None,
    add_dirs: o.AddDirOption = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show requests, usage and hooks.")] = False,
    strict_mcp_config: o.StrictMcpConfigOption = False,
    require_servers: o.RequireServersOption = False,
    max_budget_usd: o.MaxBudgetOption = None,
    output_format: Annotated[
        OutputFormat, typer.Option(help="text, json (one object at the end) or stream-json (one event per line).")
    ] = OutputFormat.text,
    input_format: Annotated[
        InputFormat, typer.Option(help="stream-json: user messages as JSON lines on stdin.")
    ] = InputFormat.text,
    continue_latest: Annotated[
        bool, typer.Option("--continue", "-c", help="Resume the latest session of this directory.")
    ] = False,
    resume_id: Annotated[
        str | None, typer.Option("--resume", "-r", metavar="ID", help="Resume the session with this id.")
    ] = None,
    session_id: o.SessionIdOption = None,
    fork_session: o.ForkSessionOption = False,
    permission_mode: o.PermissionModeOption = None,
    allow_tools: o.AllowToolsOption = None,
    deny_tools: o.DenyToolsOption = None,
    allowed_tools: o.AllowedToolsOption = None,
    disallowed_tools: o.DisallowedToolsOption = None,
    builtin_tools: o.BuiltinToolsOption = None,
    trust_project: o.TrustProjectOption = False,
    sandbox: o.SandboxOption = None,
    sandbox_network: o.SandboxNetworkOption = None,
    sandbox_allow_write: o.SandboxAllowWriteOption = None,
    thinking: o.ThinkingOption = None,
    effort: o.EffortOption = None,
    web: o.WebOption = None,
    elicitation: o.ElicitationOption = None,
    allow_sampling: o.AllowSamplingOption = False,
    permission_prompt_tool: o.PermissionPromptToolOption = None,
    include_partial_messages: o.IncludePartialMessagesOption = False,
    await_initialize: o.AwaitInitializeOption = False,
    replay_user_messages: o.ReplayUserMessagesOption = False,
    forward_subagent_text: o.ForwardSubagentTextOption = False,
    json_schema: o.JsonSchemaOption = None,
    agents_json: o.AgentsOption = None,
    setting_sources: o.SettingSourcesOption = None,
    settings: o.SettingsOption = None,
    record: o.RecordOption = None,
    replay: o.ReplayOption = None,
    replay_mode: o.ReplayModeOption = None,
    no_warm: o.NoWarmOption = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    if ctx.invoked_subcommand is not None:
        return
    work_dir = (cwd or Path.cwd()).resolve()
    if not work_dir.is_dir():
        fail_as(output_format.value, f"--cwd {work_dir}: not a directory")
    from sprout_agent.faces.cli.stdin_prompt import check_texts, headless_prompt

    positional: str | None = ctx.meta.get(POSITIONAL)
    if positional is not None and prompt is not None:
        fail_as(output_format.value, "give the prompt once: as an argument or with --prompt")
    scripted = output_format is not OutputFormat.text or input_format is InputFormat.stream_json
    headless = print_mode or prompt is not None or scripted or not sys.stdin.isatty()
    prompt = prompt if positional is None else positional
    texts = {"-p": prompt, "--system-prompt": system_prompt, "--append-system-prompt": append_system_prompt}
    check_texts(output_format.value, texts, model)
    first_prompt = None if headless else prompt
    if not headless:
        prompt = None
    elif input_format is InputFormat.text:
        if resume_id == "" and not (sys.stdin.isatty() and sys.stderr.isatty()):  # the picker needs a terminal:
            # say so before stdin is read for a prompt ("stdin was empty" named the wrong thing)
            from sprout_agent.faces.cli.pick_session import NEEDS_AN_ID

            fail_as(output_format.value, NEEDS_AN_ID)
        prompt = headless_prompt(output_format.value, prompt)
    from sprout_agent.faces.cli import start

    options = o.options_from(
        ctx.params,
        prompt=prompt,
        first_prompt=first_prompt,
        cwd=work_dir,
        add_dirs=tuple(path.resolve() for path in add_dirs or ()),
        permission_mode=o.checked_mode(permission_mode, output_format.value),
        allow_tools=_rules(allow_tools, allowed_tools, deny=False),
        deny_tools=_rules(deny_tools, disallowed_tools, deny=True),
        claude_rules=allowed_tools is not None or disallowed_tools is not None,
        permission_prompt_tool=_prompt_tool(permission_prompt_tool, input_format, output_format),
    )
    exit_now(start.run(options, not headless))


# The `mcp` and `hooks` subcommands live in commands/servers.py.
app.add_typer(mcp_app, name="mcp")
app.add_typer(hooks_app, name="hooks")
app.add_typer(batch_app, name="batch")  # commands/batch.py
app.add_typer(sessions_app, name="sessions")  # commands/sessions_app.py


@app.command("replay")
def replay_cli(
    ctx: typer.Context,
    target: Annotated[str, typer.Argument(metavar="SESSION|CASSETTE", help="A cassette, or a recorded session's id.")],
    cassettes: Annotated[
        Path | None,
        typer.Option(
            metavar="DIR", help="Where the session was recorded (--record DIR; default $SPROUT_AGENT_RECORD)."
        ),
    ] = None,
    in_place: Annotated[
        bool, typer.Option(help="Run in the working directory itself, not in a scratch copy of it (removed after).")
    ] = False,
    cwd: Annotated[Path | None, typer.Option(metavar="PATH", help="The working directory (default: here).")] = None,
    config_files: o.ConfigOption = None,
    mcp_configs: o.McpConfigOption = None,
    strict_mcp_config: o.StrictMcpConfigOption = False,
    model: o.ModelOption = None,
    permission_mode: o.PermissionModeOption = None,
    allow_tools: o.AllowToolsOption = None,
    deny_tools: o.DenyToolsOption = None,
    trust_project: o.TrustProjectOption = False,
    sandbox: o.SandboxOption = None,
) -> None:
    """Re-run a recorded -p session with today's tools, hooks and MCP servers, the model's side from its cassette,
    and report where it went another way: a tool result that changed, a call refused, a hook that objects now
    (exit 6; 0 when nothing did). docs/cassettes.md."""
    from sprout_agent.core.errors import SproutError
    from sprout_agent.faces.cli.commands.replay import fail_with, replay_command

    template = o.options_from(
        ctx.params,
        cwd=(cwd or Path.cwd()).resolve(),
        config_files=tuple(path.resolve() for path in config_files or ()),
        permission_mode=o.checked_mode(permission_mode),
        allow_tools=o.patterns(allow_tools),
        deny_tools=o.patterns(deny_tools),
    )
    try:
        exit_now(replay_command(target, cassettes, template, in_place))
    except SproutError as error:
        exit_now(fail_with(error))


@app.command("doctor")
def doctor_command(
    ctx: typer.Context,
    stop: Annotated[
        bool, typer.Option("--stop", help="Ask the warm interpreters to leave (no provider check).")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="JSON on stdout.")] = False,
    offline: Annotated[
        bool, typer.Option("--offline", help="Check the provider's setup without the one request (which is billed).")
    ] = False,
    model: o.ModelOption = None,
    settings: o.SettingsOption = None,
    setting_sources: o.SettingSourcesOption = None,
    trust_project: o.TrustProjectOption = False,
) -> None:
    """Check the model provider a run here would use: one request of 1 output token (billed by the provider; --offline
    skips it) says whether it is reachable, takes the credentials, serves the model and streams; then list the warm
    interpreters running for you. Exit code: a run's for the same failure (docs/providers.md)."""
    import os

    from sprout_agent.faces.cli.commands.warm_doctor import doctor_command as body

    top = ctx.find_root().params  # `sprout-agent --model opus doctor` works too
    given = {name: ctx.params.get(name) or top.get(name) for name in ("model", "settings", "setting_sources")}
    options = o.options_from(
        given, cwd=Path.cwd().resolve(), trust_project=trust_project or bool(top.get("trust_project"))
    )
    exit_now(body(os.environ, stop, as_json, None if stop else (options, offline)))


@app.command("acp")
def acp_command(
    ctx: typer.Context,
    config_files: o.ConfigOption = None,
    model: o.ModelOption = None,
    max_requests: o.MaxRequestsOption = None,
    permission_mode: o.PermissionModeOption = None,
    allow_tools: o.AllowToolsOption = None,
    deny_tools: o.DenyToolsOption = None,
    trust_project: o.TrustProjectOption = False,
    sandbox: o.SandboxOption = None,
    sandbox_network: o.SandboxNetworkOption = None,
    sandbox_allow_write: o.SandboxAllowWriteOption = None,
    thinking: o.ThinkingOption = None,
    effort: o.EffortOption = None,
    web: o.WebOption = None,
) -> None:
    """Serve the Agent Client Protocol on stdin/stdout, for editors (Zed, JetBrains, any ACP client)."""
    from sprout_agent.faces.acp.server import serve
    from sprout_agent.faces.acp.session_template import AcpSetup

    try:
        if model is not None:
            model_id(model, "--model")
        choice(thinking, THINKING_SETTINGS, "--thinking")  # misspelt: exit 2 now, not at each session/new
        choice(effort, EFFORT_LEVELS, "--effort")
    except UsageError as error:
        fail(str(error), error.exit_code)
    # Each session/new or session/load sets its own directory (and session to load).
    template = o.served_template(
        ctx.params, config_files, permission_mode, allow_tools, deny_tools, sandbox_allow_write
    )
    exit_now(serve(AcpSetup(template, Locations.for_user())))
