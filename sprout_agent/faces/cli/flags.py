"""Every flag that reaches a run, declared once as an `Annotated` type, and `options_from`, which builds the run's
`Options` from a command's parameters by name.

A command's parameter takes the name of the `Options` (or `Limits`) field it fills: `config_files: ConfigOption`
is `--config`. So the main command, `acp` and `batch` share each declaration, and a new flag that reaches the loop
touches its declaration here, one parameter line per command that takes it, the record's field and the code that
uses it.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

from sprout_agent.core.permission_mode import PermissionMode, parse_mode

if TYPE_CHECKING:  # the record is imported when a run is built, not for --help or a subcommand
    from sprout_agent.config.options import Options


class OutputFormat(enum.StrEnum):
    text = "text"
    json = "json"
    stream_json = "stream-json"


class InputFormat(enum.StrEnum):
    text = "text"
    stream_json = "stream-json"


class SandboxMode(enum.StrEnum):
    off = "off"
    read_only = "read-only"
    workspace_write = "workspace-write"
    required = "required"


class ReplayMode(enum.StrEnum):
    strict = "strict"
    lenient = "lenient"


class OnOff(enum.StrEnum):
    on = "on"
    off = "off"


# The sandbox flags, shared by the main command and `acp`.
SandboxOption = Annotated[
    SandboxMode | None,
    typer.Option(
        help="OS sandbox for dev__bash: workspace-write (default where it works), read-only, off, or required "
        "(workspace-write that must work: exit 2 if it cannot). Env: SPROUT_AGENT_SANDBOX."
    ),
]
SandboxNetworkOption = Annotated[
    OnOff | None, typer.Option(help="Network for sandboxed commands (default on; always off in read-only).")
]
SandboxAllowWriteOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--sandbox-allow-write", metavar="PATH", help="Another directory sandboxed commands may write; repeatable."
    ),
]

# Flags more than one command takes (the main command, `acp`, the `mcp` commands).
ConfigOption = Annotated[
    list[Path] | None,
    typer.Option("--config", metavar="PATH", help="MCP config file (repeatable); replaces the lookup."),
]
ModelOption = Annotated[
    str | None, typer.Option("--model", metavar="NAME", help="Model name (default: $ANTHROPIC_MODEL or built in).")
]
MaxRequestsOption = Annotated[
    int | None, typer.Option("--max-turns", min=1, metavar="N", help="Most model requests per prompt.")
]
MaxBudgetOption = Annotated[
    float | None,
    typer.Option("--max-budget-usd", min=0, metavar="USD", help="End the session once this much is spent (exit 4)."),
]
AllowToolsOption = Annotated[
    list[str] | None,
    typer.Option(
        "--allow-tools", metavar="PATTERN", help="Tool patterns that always run (dev__bash, git__*); repeatable."
    ),
]
DenyToolsOption = Annotated[
    list[str] | None,
    typer.Option("--deny-tools", metavar="PATTERN", help="Tool patterns that never run; repeatable."),
]
TrustProjectOption = Annotated[
    bool,
    typer.Option(
        "--trust-project/--no-trust-project",
        help="Start the project's .mcp.json servers without approval (CI).",
    ),
]
ThinkingOption = Annotated[
    str | None,
    typer.Option(metavar="MODE", help="Extended thinking: adaptive, on (a budget) or off (default: the model's)."),
]
EffortOption = Annotated[
    str | None, typer.Option(metavar="LEVEL", help="Effort: low, medium, high, xhigh or max (as the model lists).")
]
WebOption = Annotated[
    bool | None,
    typer.Option(
        "--web/--no-web",
        help="Offer the API's web search and fetch to the model, where it supports them ($10 per 1000 searches; "
        "default off; env SPROUT_AGENT_WEB).",
    ),
]

SystemPromptOption = Annotated[str | None, typer.Option(metavar="TEXT", help="Replace the system prompt.")]
AppendSystemPromptOption = Annotated[str | None, typer.Option(metavar="TEXT", help="Append to the system prompt.")]
ElicitationOption = Annotated[
    str | None,
    typer.Option(metavar="POLICY", help="A server's question with nobody to ask: decline or accept-defaults."),
]
AllowSamplingOption = Annotated[
    bool, typer.Option(help="Headless: let MCP servers sample the model (sampling/createMessage), billed to you.")
]
PermissionPromptToolOption = Annotated[
    str | None,
    typer.Option(
        metavar="stdio",
        help="stdio: the Claude Agent SDK driving this run answers the permission questions (can_use_tool).",
    ),
]
IncludePartialMessagesOption = Annotated[
    bool, typer.Option(help="stream-json: also each raw Messages API stream event, as `stream_event` lines.")
]
AwaitInitializeOption = Annotated[
    bool,
    typer.Option(
        help="stream-json input: start the session once the SDK's initialize request is answered (the TypeScript "
        "SDK sends its MCP servers there). Driven by an Agent SDK, sprout-agent waits for it anyway."
    ),
]
ReplayUserMessagesOption = Annotated[
    bool,
    typer.Option(
        help="stream-json input and output: echo each user message from stdin as a `user` line with a uuid, which "
        "the SDKs' rewind_files takes (docs/sdk.md)."
    ),
]
ForwardSubagentTextOption = Annotated[
    bool,
    typer.Option(
        help="stream-json: a subagent's text goes out too (its `assistant` lines carry only its tool calls "
        "otherwise), as Claude Code's flag (docs/subagents.md)."
    ),
]
SettingSourcesOption = Annotated[
    str | None,
    typer.Option(
        "--setting-sources",
        metavar="SOURCES",
        help="user, project, local (comma-separated): whose settings files (~/.claude/settings.json, "
        ".claude/settings.json, .claude/settings.local.json), agent definitions, skills and commands are read, as "
        "Claude Code's flag chooses. Default: all.",
    ),
]
SettingsOption = Annotated[
    list[str] | None,
    typer.Option(
        "--settings",
        metavar="FILE|JSON",
        help="Claude Code's settings (a file, or inline JSON): over the project's and your own settings files, "
        "under the managed ones (docs/settings.md). Repeatable.",
    ),
]
AgentsOption = Annotated[
    list[str] | None,
    typer.Option(
        "--agents",
        metavar="JSON",
        help="Agent definitions for subagents, as Claude Code's flag takes them: "
        '`{"name": {"description": …, "prompt": …, "tools": […], "model": …}}` (docs/definitions.md).',
    ),
]
JsonSchemaOption = Annotated[
    str | None,
    typer.Option(
        "--json-schema",
        metavar="FILE|JSON",
        help="Structured output: each answer is a JSON value valid against this JSON Schema (a file or inline JSON "
        "whose root is an object), printed as JSON; `structured_output` in json and stream-json results.",
    ),
]
# Read by faces/cli/launch.py before parsing (the warm interpreter is chosen before Typer loads); declared here so
# that it is listed and accepted.
NoWarmOption = Annotated[
    bool,
    typer.Option(
        "--no-warm",
        help="Run in this process, not in the warm interpreter (also SPROUT_AGENT_WARM=0).",
        show_default=False,
    ),
]

# Cassettes (docs/cassettes.md): the model's side of a session, recorded once and replayed without a key.
RecordOption = Annotated[
    Path | None,
    typer.Option(
        "--record",
        metavar="DIR",
        help="Write each model request and its answer to DIR/<session id>.jsonl, credentials left out "
        "(env SPROUT_AGENT_RECORD).",
    ),
]
ReplayOption = Annotated[
    Path | None,
    typer.Option(
        "--replay",
        metavar="CASSETTE|DIR",
        help="Answer the model's requests from a recorded cassette: no key, no network (env SPROUT_AGENT_REPLAY).",
    ),
]
ReplayModeOption = Annotated[
    ReplayMode | None,
    typer.Option(
        help="strict (default): a request that differs from the recorded one fails the run (exit 6); lenient: it is "
        "answered by position, with a warning."
    ),
]

# Claude Code's flags (docs/cli.md: "Claude Code's command line").
PermissionModeOption = Annotated[
    str | None,
    typer.Option(
        metavar="MODE",
        help="auto, ask (approve each call) or read-only; or Claude Code's default, acceptEdits, plan, "
        "bypassPermissions, dontAsk (mapped onto ours). Not given: auto, or Claude Code's default for a Claude Code "
        "script (--allowedTools/--disallowedTools, an Agent SDK; docs/permissions.md).",
    ),
]


def checked_mode(given: str | None, output_format: str = "text") -> PermissionMode | None:
    """A --permission-mode as every command takes it (the main command, `acp`, `batch`): parsed by the one parser,
    None when not given (the run decides: `config.options.decided_mode`); a wrong one exits 2."""
    if given is None:
        return None
    try:
        return parse_mode(given)
    except ValueError as error:
        from sprout_agent.faces.cli.exits import fail_as

        fail_as(output_format, f"--permission-mode: {error}")


AllowedToolsOption = Annotated[
    list[str] | None,
    typer.Option(
        "--allowedTools",
        metavar="RULES",
        help="Claude Code's allow rules (Read, Bash(git:*), mcp__server__tool), comma- or space-separated.",
    ),
]
BuiltinToolsOption = Annotated[
    str | None,
    typer.Option(
        "--tools",
        metavar="TOOLS",
        help="The built-in tools offered, by Claude Code's names (Bash, Read, Write, Edit, Glob, Grep, TodoWrite) or "
        'ours (dev__bash…), comma- or space-separated; "" for none, "default" for all. MCP servers\' tools stay.',
    ),
]
DisallowedToolsOption = Annotated[
    list[str] | None,
    typer.Option("--disallowedTools", metavar="RULES", help="Claude Code's deny rules, as --allowedTools."),
]
McpConfigOption = Annotated[
    list[str] | None,
    typer.Option(
        "--mcp-config",
        metavar="FILE|JSON",
        help='More servers, added to the lookup: a file or inline {"mcpServers": …} JSON; repeatable.',
    ),
]
StrictMcpConfigOption = Annotated[
    bool, typer.Option(help="Use only the --mcp-config (and --config) servers: no project or user config.")
]
RequireServersOption = Annotated[
    bool, typer.Option(help="Fail if any configured MCP server is broken or fails to start.")
]
SessionIdOption = Annotated[
    str | None, typer.Option(metavar="UUID", help="Start a new session with this id (a UUID not used yet).")
]
ForkSessionOption = Annotated[
    bool, typer.Option(help="With --resume/--continue: go on in a new session, leaving the old one as it was.")
]
AddDirOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--add-dir", metavar="DIR", help="Another directory the built-in tools may read and write; repeatable."
    ),
]
FallbackModelOption = Annotated[
    str | None,
    typer.Option("--fallback-model", metavar="NAME", help="The model to use when the main one is overloaded."),
]


def patterns(values: Sequence[str] | None) -> tuple[str, ...]:
    """Repeatable and comma-separated alike: `--allow-tools a,b --allow-tools c`."""
    return tuple(part.strip() for value in values or () for part in value.split(",") if part.strip())


def options_from(params: Mapping[str, object], **decided: object) -> Options:
    """The run's `Options` from a command's parameters, by name: a parameter named as a field of `Options` fills
    it, one named as a field of `Limits` fills `limits`; lists become tuples, choices their value, a flag not
    given (None) keeps the record's default. `decided` (what the command worked out: the prompt, the checked
    permission mode, the translated rules) wins over the parameters."""
    from sprout_agent.config.options import Options
    from sprout_agent.core.limits import Limits

    option_names = {f.name for f in fields(Options)}
    limit_names = {f.name for f in fields(Limits)}
    given = {name: _plain(value) for name, value in params.items() if value is not None}
    limits = {name: value for name, value in given.items() if name in limit_names}
    chosen = {name: value for name, value in given.items() if name in option_names}
    # Typer checked each value against its declaration above, which has the field's type.
    return Options(**cast(dict[str, Any], {**chosen, "limits": Limits(**cast(dict[str, Any], limits)), **decided}))


def served_template(
    params: Mapping[str, object],
    config_files: Sequence[Path] | None,
    permission_mode: str | None,
    allow_tools: Sequence[str] | None,
    deny_tools: Sequence[str] | None,
    sandbox_allow_write: Sequence[Path] | None,
    **decided: object,
) -> Options:
    """The sessions' template of a command that serves them (`acp`, `mcp serve`): each session sets its own directory
    later, so paths are resolved here, against the directory the client started us in, not each session's."""
    return options_from(
        params,
        config_files=tuple(path.resolve() for path in config_files or ()),
        permission_mode=checked_mode(permission_mode),
        allow_tools=patterns(allow_tools),
        deny_tools=patterns(deny_tools),
        sandbox_allow_write=tuple(path.resolve() for path in sandbox_allow_write or ()),
        **decided,
    )


def _plain(value: object) -> object:
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, list):  # click gives tuples for repeatable options, lists for variadic arguments
        return tuple(cast(list[object], value))
    return value


def agent_argv(params: Mapping[str, object], declared: Sequence[Any], names: Sequence[str]) -> list[str]:
    """The `sprout-agent -p` flags that pass a command's shared options on (batch tasks): each of `names` that was
    given, as its own flag. `declared`: the command's click parameters (typer's vendored click `Parameter`s, hence
    Any), whose first long name is the flag."""
    argv: list[str] = []
    for parameter in declared:
        value = params.get(parameter.name)
        if parameter.name not in names or value is None:
            continue
        if value is False:  # given as --no-x only where not giving it means something else (--web/--no-web)
            argv += parameter.secondary_opts[:1] if parameter.default is None else []
            continue
        flag = next(name for name in parameter.opts if name.startswith("--"))
        for item in cast(Sequence[object], value) if isinstance(value, list | tuple) else [value]:
            text = str(item.resolve()) if isinstance(item, Path) else str(_plain(item))
            argv += [flag] if item is True else [flag, text]
    return argv
