"""What a run is asked to do: `Options`, one field per flag, as every face builds them.

`session.prepared.prepare` turns them into a `Prepared` (or fails with exit 2) before anything starts.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from sprout_agent.core.errors import UsageError
from sprout_agent.core.limits import Limits
from sprout_agent.core.permission_mode import PermissionMode
from sprout_agent.trust.write_policy import ADD_DIRS_ENV


@dataclass(frozen=True)
class Options:
    prompt: str | None = None  # headless: the one prompt (piped stdin already attached)
    first_prompt: str | None = None  # interactive: `sprout-agent "PROMPT"` runs this first
    config_files: tuple[Path, ...] = ()
    model: str | None = None
    system_prompt: str | None = None
    append_system_prompt: str | None = None
    cwd: Path = field(default_factory=Path.cwd)
    verbose: bool = False
    mcp_configs: tuple[str, ...] = ()  # --mcp-config: paths or inline JSON, added to the lookup (Claude Code's)
    strict_mcp_config: bool = False  # --strict-mcp-config: only --config/--mcp-config servers (Claude Code's)
    require_servers: bool = False  # --require-servers: a server that fails to start (or is broken) fails the run
    limits: Limits = field(default_factory=Limits)  # --max-turns, --max-budget-usd: the loop's bounds
    output_format: str = "text"  # text | json | stream-json
    input_format: str = "text"  # text | stream-json
    resume_id: str | None = None  # --resume ID
    continue_latest: bool = False  # --continue
    session_id: str | None = None  # --session-id UUID: the new session's id
    fork_session: bool = False  # --fork-session: the resumed history goes on under a new id
    permission_mode: PermissionMode | None = None  # as given (ours or Claude Code's); None: `decided_mode` picks
    claude_rules: bool = False  # --allowedTools / --disallowedTools given (Claude Code's rule flags)
    allow_tools: tuple[str, ...] = ()  # patterns such as dev__bash or git__*
    deny_tools: tuple[str, ...] = ()
    builtin_tools: str | None = (
        None  # --tools: the built-in tools offered, by Claude Code's names ("": none); None = all
    )
    trust_project: bool = False  # --trust-project: the project's .mcp.json servers start without asking, this run
    permission_prompt_tool: str | None = None  # "stdio": the SDK's can_use_tool callback is the one asked
    sandbox: str | None = None  # --sandbox off | read-only | workspace-write | required; None = env or default
    sandbox_network: str | None = None  # --sandbox-network on | off
    sandbox_allow_write: tuple[Path, ...] = ()  # --sandbox-allow-write PATH (repeatable)
    thinking: str | None = None  # --thinking adaptive | on | off; None = SPROUT_AGENT_THINKING or the model's
    effort: str | None = None  # --effort LEVEL; None = SPROUT_AGENT_EFFORT or the API's default
    elicitation: str | None = None  # --elicitation decline | accept-defaults; None = SPROUT_AGENT_ELICITATION
    allow_sampling: bool = False  # --allow-sampling: headless, servers may sample the model without asking
    web: bool | None = None  # --web / --no-web; None = SPROUT_AGENT_WEB (off by default)
    add_dirs: tuple[Path, ...] = ()  # --add-dir: more directories the built-in tools may write
    fallback_model: str | None = None  # --fallback-model: used when the model is overloaded or unavailable
    include_partial_messages: bool = False  # stream-json: raw stream events as `stream_event` lines
    await_initialize: bool = False  # stream-json: the session starts after the SDK's `initialize` (its servers)
    replay_user_messages: bool = False  # stream-json: stdin's user messages echoed with a uuid (SDK rewind_files)
    forward_subagent_text: bool = False  # stream-json: a subagent's text too, not only its tool calls and results
    json_schema: str | None = None  # --json-schema: a file or inline JSON; each answer is a value valid against it
    agents_json: tuple[str, ...] = ()  # --agents (and the SDK's initialize `agents`): agent definitions as JSON
    setting_sources: str | None = None  # --setting-sources user,project,local: whose definitions are read
    settings: tuple[str, ...] = ()  # --settings FILE|JSON, then the SDK's initialize.settings (claude_settings.py)
    record: Path | None = None  # --record DIR: the model's side of the session into DIR/<session id>.jsonl
    replay: Path | None = None  # --replay CASSETTE|DIR: the model's side served from a cassette (docs/cassettes.md)
    replay_mode: str | None = None  # --replay-mode strict | lenient; None = SPROUT_AGENT_REPLAY_MODE or strict


SDK_MARK = "CLAUDE_AGENT_SDK_VERSION"


def decided_mode(options: Options, environ: Mapping[str, str]) -> PermissionMode:
    """The run's permission mode, the one place it is defaulted. Not given: Claude Code's `default` for a run that
    says it is a Claude Code script (its rule flags, or an Agent SDK driving it), so its restrictions hold (what no
    rule allows is asked, or refused when nobody can be asked); our own command lines get ours, `auto`. Then, with
    the SDK's can_use_tool callback to ask, `auto` becomes `ask`, as Claude Code's default mode asks: a callback
    that is never called would be a surprise (the SDK's bypassPermissions runs everything unasked). `environ` is
    the real environment: a project's .env cannot choose."""
    mode = options.permission_mode
    if mode is None:
        sdk = options.input_format == "stream-json" and SDK_MARK in environ
        mode = PermissionMode.DEFAULT if options.claude_rules or sdk else PermissionMode.AUTO
    if options.permission_prompt_tool == "stdio" and mode is PermissionMode.AUTO:
        return PermissionMode.ASK
    return mode


def add_dirs_env(add_dirs: tuple[Path, ...], cwd: Path) -> dict[str, str]:
    """The built-in dev server's variable for --add-dir: more directories its write and edit may reach (its
    bash gets them from the sandbox's writable directories)."""
    for path in add_dirs:
        if not (cwd / path).is_dir():
            raise UsageError(f"--add-dir {path}: not a directory")
    return {ADD_DIRS_ENV: os.pathsep.join(str((cwd / path).resolve()) for path in add_dirs)} if add_dirs else {}
