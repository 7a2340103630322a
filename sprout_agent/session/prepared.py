"""Everything decided from the options before any server or import starts (`Prepared`), the session to resume
included: a bad flag, file or session id fails here with exit 2. The REPL, the headless runner and ACP sessions
hand a `Prepared` to `runtime.open_runtime`.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from sprout_agent.config import applied_settings, consent
from sprout_agent.config import files as cfg
from sprout_agent.config import settings as st
from sprout_agent.config.claude_settings import Places as SettingsPlaces
from sprout_agent.config.claude_settings import SettingsFile, load_settings
from sprout_agent.config.credential_commands import CredentialCommands
from sprout_agent.config.credential_commands import choose as choose_commands
from sprout_agent.config.definition_files import load_definitions, places
from sprout_agent.config.definitions import BUILTIN_AGENTS, Definitions
from sprout_agent.config.dotenv_file import read_dotenv
from sprout_agent.config.locations import Locations
from sprout_agent.config.options import Options, add_dirs_env, decided_mode
from sprout_agent.config.output_schema import load_output_schema
from sprout_agent.config.output_styles import load_style
from sprout_agent.config.provider import missing_extra
from sprout_agent.config.sandboxing import SandboxPlan, plan, server_notices
from sprout_agent.config.server_config import configured_credentials
from sprout_agent.core.claude_rules import offered_builtins
from sprout_agent.core.compaction import context_window, parse_threshold
from sprout_agent.core.errors import ConfigError, MissingCredential, UsageError
from sprout_agent.core.ledger import Price, parse_prices
from sprout_agent.core.permission_mode import PermissionMode, parse_mode
from sprout_agent.core.structured import OutputContract
from sprout_agent.session import index as session_index
from sprout_agent.session import store
from sprout_agent.session.taping import TapePlan, tape_plan
from sprout_agent.trust import program_lookup
from sprout_agent.trust.opening import Reader
from sprout_agent.trust.write_policy import writable_roots


@dataclass(frozen=True)
class Prepared:
    """Everything that can be decided before any server or import: fails fast with exit code 2.

    Two environments, for two jobs. `settings_env` is what the run's settings are read from: the real environment
    over the project's `.env` (the API key may come from either). `inherited_env` is the real environment alone:
    what MCP servers and commands inherit (through the secrets filter), and what decides the settings a project
    must not choose (sampling, elicitation, OAuth storage, the rate gate). A project's `.env` never reaches it."""

    options: Options
    settings: st.Settings
    loaded: cfg.LoadedConfig
    settings_env: dict[str, str]
    model: str  # --model, else ANTHROPIC_MODEL, else the default
    prices: dict[str, Price]  # SPROUT_AGENT_PRICES overrides
    window: int  # context window, tokens
    threshold: int | None  # compaction threshold, tokens; None = off
    locations: Locations
    permission_mode: PermissionMode  # as given, or as `decided_mode` defaulted it
    resume: store.LoadedSession | None = None  # --continue / --resume
    inherited_env: Mapping[str, str] = field(default_factory=dict[str, str])
    held_back: consent.Gated | None = None  # project servers waiting for consent; None = none
    sandbox: SandboxPlan = field(default_factory=SandboxPlan.off)  # what dev__bash commands run under
    output: OutputContract | None = None  # --json-schema: what each answer must be
    definitions: Definitions = field(default_factory=lambda: Definitions(agents=BUILTIN_AGENTS))
    claude: applied_settings.Applied = field(default_factory=applied_settings.Applied)  # Claude Code's settings
    style: tuple[str, str] = ("default", "")  # outputStyle: its name and the instructions it adds
    tape: TapePlan | None = None  # --record / --replay (session/taping.py); None: neither
    credentials: CredentialCommands = field(default_factory=CredentialCommands)  # apiKeyHelper, awsAuthRefresh, …

    @property
    def thinking(self) -> str | None:
        return st.choice(self.options.thinking, st.THINKING_SETTINGS, "--thinking") or self.settings.thinking

    @property
    def effort(self) -> str | None:
        return st.choice(self.options.effort, st.EFFORT_LEVELS, "--effort") or self.settings.effort

    @property
    def skills(self) -> tuple[tuple[str, str], ...]:
        """(name, description) of the skills the model may load: only with the built-in `agent` server, whose
        `skill` tool reads them."""
        served = any(s.name == "agent" and s.transport == "in-process" for s in self.loaded.servers)
        return tuple((s.name, s.description) for s in self.definitions.skills) if served else ()

    @property
    def program_trusted(self) -> Callable[[str], bool]:
        """Whether the commands' PATH finds a program name outside the workspace's writable roots, which a
        permission rule for a program we know requires (trust/program_lookup.py)."""
        cwd = os.path.realpath(self.options.cwd)
        more = (*self.sandbox.policy.allow_write, *(str(d) for d in self.options.add_dirs))
        return program_lookup.outside(writable_roots(cwd, more), self.inherited_env, cwd)

    def with_style(self, append: str | None) -> str | None:
        """`--append-system-prompt` (or the SDK's) with the output style's instructions before it."""
        parts = [part for part in (self.style[1], append) if part]
        return "\n\n".join(parts) if parts else None

    @property
    def sandboxed_tools(self) -> tuple[tuple[str, str], ...]:
        """dev's bash, when it is the built-in server's and the sandbox works: read-only mode runs it there, and ask
        mode may re-run what the sandbox stopped outside it."""
        builtin_dev = any(s.name == "dev" and s.transport == "in-process" for s in self.loaded.servers)
        return (("dev", "bash"),) if builtin_dev and self.sandbox.active else ()

    @property
    def reader(self) -> Reader:
        """The one reader with the run's deny list, for the files the agent reads itself for the model (CLAUDE.md)."""
        return Reader(self.sandbox.deny_list(self.inherited_env))

    @property
    def configured_credentials(self) -> dict[str, str]:
        """The credentials the config hands its servers, for the telemetry's secret filter."""
        return configured_credentials(self.loaded.servers)

    @property
    def elicitation(self) -> str:
        """How a face with nobody to ask answers a server's question: decline | accept-defaults."""
        return st.elicitation_policy(self.options.elicitation, self.inherited_env)

    @property
    def allow_sampling(self) -> bool:
        return st.sampling_allowed(self.options.allow_sampling, self.inherited_env)

    @property
    def web(self) -> bool:
        return self.settings.web if self.options.web is None else self.options.web

    def held_back_notices(self) -> tuple[str, ...]:
        """One line per project server this run does not start, for a face with nobody to ask."""
        gated = self.held_back
        held = tuple(held.notice() for held in self.claude.held)
        if gated is None:
            return held
        return held + tuple(consent.held_back_notice(server, gated.verdicts[server.name]) for server in gated.pending)


def prepare(
    options: Options,
    locations: Locations,
    environ: Mapping[str, str],
    *,
    settings_approved: frozenset[str] = frozenset(),
) -> Prepared:
    """Reads `.env`, settings and config files; `environ` (the real environment) wins over `.env`.

    Project servers the user has not approved are held back (`held_back`), and so is what widens in a repository's
    settings file (`claude.held`); the faces ask or say so. `settings_approved`: the fingerprints of the settings
    files a person approved just now (applied even when the answer could not be saved)."""
    home = Path(environ["HOME"]) if environ.get("HOME") else None
    trusted = options.trust_project or consent.trusted_by_environment(environ)
    approvals = _Approvals(locations.data, trusted, settings_approved)
    mode = decided_mode(options, environ)
    claude = _claude_settings(options, locations, home, approvals.verdict, mode)
    if options.permission_mode is None and claude.mode is not None:  # --permission-mode wins over defaultMode
        mode = decided_mode(replace(options, permission_mode=parse_mode(claude.mode)), environ)
    dotenv = read_dotenv(options.cwd)
    env = {**dotenv.values, **claude.env, **environ}
    settings = st.Settings.from_env(env)
    commands = choose_commands(claude.commands, env, settings.provider, settings.api_key_present)
    tape = tape_plan(options, environ)
    if tape is not None and tape.replay is not None:  # nothing leaves the process: no credential asked for or fetched
        settings, commands = (
            replace(settings, provider=replace(settings.provider, skip_auth=True)),
            CredentialCommands(),
        )
    else:
        check_credentials(settings, commands)
    model = _model(options, settings, env)
    st.choice(options.thinking, st.THINKING_SETTINGS, "--thinking")  # a misspelt flag fails here, with exit 2
    st.choice(options.effort, st.EFFORT_LEVELS, "--effort")
    st.elicitation_policy(options.elicitation, environ)
    output = load_output_schema(options.json_schema, options.cwd) if options.json_schema is not None else None
    window = context_window(model, settings.max_context_tokens)
    threshold = parse_threshold(settings.compact_threshold, window, settings.max_output_tokens)
    prices = parse_prices(settings.prices)
    _check_session_id(options, locations.sessions)
    added_dirs = add_dirs_env(options.add_dirs, options.cwd)
    loaded = _loaded(options, env, environ, locations)
    sandbox = _sandbox(options, mode, locations, environ, loaded.sandbox, claude.rules.denied_paths())
    tools_env = {**sandbox.server_env(), **added_dirs}
    offered, tools_warnings = (None, ()) if options.builtin_tools is None else offered_builtins(options.builtin_tools)
    loaded = cfg.with_builtin_servers(loaded, settings.builtin_servers, options.cwd, tools_env, offered)
    loaded = replace(loaded, notices=loaded.notices + tools_warnings)
    loaded = _without_disabled(loaded, claude.disabled_servers)
    has_project_servers = any(server.project for server in loaded.servers)
    remembered = approvals.loaded() if has_project_servers and not trusted else consent.Approvals(None)
    gated = consent.gate(
        loaded, remembered, consent.secrets_in(env, environ), trusted=trusted or claude.all_project_servers,
        enabled=claude.enabled_servers,
    )  # fmt: skip
    notices = (
        claude.notices
        + gated.loaded.notices
        + dotenv.notices
        + tuple(n for n in (sandbox.notice(),) if n is not None)
        + server_notices(sandbox, gated.loaded.servers)
    )
    loaded = replace(gated.loaded, notices=notices)
    resume = _resumed(options, locations.sessions)
    where = places(options.cwd, home, locations.config, options.setting_sources)
    definitions = load_definitions(where, options.agents_json, sandbox.deny_list(environ))
    style, said = _style(claude.output_style, options.cwd, home, sandbox, environ)
    loaded = replace(loaded, notices=loaded.notices + definitions.notices + said)
    return Prepared(
        options,
        settings,
        loaded,
        env,
        model,
        prices,
        window,
        threshold,
        locations,
        mode,
        resume,
        inherited_env=dict(environ),
        held_back=gated if gated.pending else None,
        sandbox=sandbox,
        output=output,
        definitions=definitions,
        claude=claude,
        style=style,
        tape=tape,
        credentials=commands,
    )


def prepare_in_directory(options: Options, locations: Locations, environ: Mapping[str, str]) -> Prepared:
    """`prepare` for a face that runs sessions of several directories in one process (ACP, `mcp serve`): it never
    changes the process's directory, so a server without a directory of its own is given the session's, as a
    process started there (`-p` changes to --cwd) would have run it."""
    prepared = prepare(options, locations, environ)
    cwd = str(options.cwd)
    servers = tuple(server if server.cwd else replace(server, cwd=cwd) for server in prepared.loaded.servers)
    return replace(prepared, loaded=replace(prepared.loaded, servers=servers))


def _without_disabled(loaded: cfg.LoadedConfig, disabled: frozenset[str]) -> cfg.LoadedConfig:
    """The project's `.mcp.json` servers a settings file's disabledMcpjsonServers names are not started, whatever
    else approves them (Claude Code's order: disabled before enabled)."""
    dropped = [s.name for s in loaded.servers if s.project and s.name in disabled]
    if not dropped:
        return loaded
    notice = f"project MCP servers not started (disabledMcpjsonServers): {', '.join(dropped)}"
    servers = tuple(s for s in loaded.servers if not (s.project and s.name in disabled))
    return replace(loaded, servers=servers, notices=(*loaded.notices, notice))


def check_credentials(settings: st.Settings, commands: CredentialCommands | None = None) -> None:
    """The provider's extra is installed, and the first party has a key (the clouds' credential chains are theirs
    to find: a failure names the variables to set, model/api_errors.py); no key is a MissingCredential (ACP's
    Authentication required)."""
    provider = settings.provider
    if (missing := missing_extra(provider)) is not None:
        raise UsageError(missing)
    helper = commands.key_helper if commands is not None else settings.key_helper
    if provider.kind != "anthropic" or settings.api_key_present or helper is not None:
        return
    if not st.serves_without_a_key(settings.base_url):
        raise MissingCredential(
            "ANTHROPIC_API_KEY is not set: export it (or put it in .env) and run again"
            + ("" if settings.base_url is None else " (only a server on this machine's loopback may need no key)")
        )


def _model(options: Options, settings: st.Settings, env: Mapping[str, str]) -> str:
    """--model, else ANTHROPIC_MODEL: an alias (sonnet, opus, haiku) or an id, as the provider names it."""
    where = "--model" if options.model else "ANTHROPIC_MODEL"
    return st.provider_model(options.model or settings.model, env, settings.provider, where)


def _style(
    name: str | None, cwd: Path, home: Path | None, sandbox: SandboxPlan, environ: Mapping[str, str]
) -> tuple[tuple[str, str], tuple[str, ...]]:
    """The outputStyle's name and instructions (read only when a settings file names one), and a notice if unknown."""
    if name is None:
        return ("default", ""), ()
    text, notice = load_style(name, cwd, home, sandbox.deny_list(environ))
    return ((name, text), ()) if text is not None else (("default", ""), (notice or "",))


@dataclass
class _Approvals:
    """The remembered consent answers, read once and only when a repository file or server needs them."""

    data: Path | None
    trusted: bool
    approved_now: frozenset[str]
    _loaded: consent.Approvals | None = None

    def loaded(self) -> consent.Approvals:
        if self._loaded is None:
            self._loaded = consent.Approvals.load(self.data)
        return self._loaded

    def verdict(self, found: SettingsFile, print_: str) -> consent.Verdict:
        trusted = self.trusted or print_ in self.approved_now
        return applied_settings.verdicts(self.loaded(), trusted)(found, print_)


def _claude_settings(
    options: Options,
    locations: Locations,
    home: Path | None,
    verdict: Callable[[SettingsFile, str], consent.Verdict],
    run_mode: PermissionMode,
) -> applied_settings.Applied:
    """Claude Code's settings files as this run applies them (none read that are not there); `run_mode`: the mode
    the run has without them, which a repository's file may narrow at once."""
    where = SettingsPlaces(options.cwd, home, locations.config, locations.managed_settings, options.settings)
    found = load_settings(where, options.setting_sources)
    if options.verbose:  # the keys kept and ignored: one line, with -v only
        found = replace(found, notices=found.notices + found.verbose)
    if not found.files:
        return applied_settings.Applied(notices=found.notices)
    return applied_settings.apply(found, verdict, cwd=options.cwd, home=home, run_mode=run_mode)


# Both Agent SDKs (Python and TypeScript) set it on the CLI process they start, which they drive over stream-json.
def _sandbox(
    options: Options,
    mode: PermissionMode,
    locations: Locations,
    environ: Mapping[str, str],
    configured: cfg.SandboxPaths,
    denied: tuple[str, ...] = (),
) -> SandboxPlan:
    """The sandbox policy; the agent's own directories (sessions, history, config) are hidden from commands, and so
    is every path a settings file's `Read(…)` deny rule names (`Read(./.env)`): no tool reads around the rule."""
    own = tuple(p for p in (locations.data, locations.sessions, locations.config, locations.logs) if p is not None)
    own += tuple(Path(path) for path in denied)
    return plan(
        options.sandbox,
        options.sandbox_network,
        (*options.sandbox_allow_write, *options.add_dirs, *configured.allow_write),
        permission_mode=mode,
        cwd=options.cwd,
        hidden=(*own, *configured.deny_read),
        environ=environ,
    )


def _loaded(
    options: Options, env: Mapping[str, str], environ: Mapping[str, str], locations: Locations
) -> cfg.LoadedConfig:
    """The config files; a server with a bad definition is skipped with a notice, not the run (unless
    --require-servers). A bad file (unreadable, not JSON) still fails the run, except the project's own."""
    loaded = cfg.load_config(
        options.config_files,
        options.cwd,
        env,
        locations.config,
        strict=False,
        user_env=environ,
        mcp_configs=options.mcp_configs,
        only_given=options.strict_mcp_config,
    )
    if loaded.broken and options.require_servers:
        raise ConfigError(loaded.broken[0].error)
    skipped = tuple(f"{entry.error} (server '{entry.name}' skipped)" for entry in loaded.broken)
    return replace(loaded, notices=loaded.notices + skipped)


def _check_session_id(options: Options, sessions_dir: Path | None) -> None:
    """--session-id names a new session: a UUID no recorded session has; --fork-session needs a session to fork."""
    resuming = options.resume_id is not None or options.continue_latest
    if options.fork_session and not resuming:
        raise UsageError("--fork-session goes with --resume ID or --continue")
    if options.session_id is None:
        return
    if resuming and not options.fork_session:
        raise UsageError("--session-id names a new session: with --resume/--continue, add --fork-session")
    if not session_index.valid_id(options.session_id):
        raise UsageError(f"--session-id must be a UUID (such as {uuid.UUID(int=0)}), got {options.session_id!r}")
    if sessions_dir is not None and session_index.exists(sessions_dir, options.session_id):
        raise UsageError(f"--session-id {options.session_id}: a session with this id exists already (use --resume)")


def _resumed(options: Options, sessions_dir: Path | None) -> store.LoadedSession | None:
    """The session --continue or --resume names, loaded and repaired; a bad id fails here with exit 2."""
    if options.resume_id is None and not options.continue_latest:
        return None
    if options.resume_id is not None and options.continue_latest:
        raise UsageError("give --continue or --resume ID, not both")
    if sessions_dir is None:
        raise UsageError("sessions are not recorded here: nothing to resume")
    if options.resume_id is not None:
        return store.load(session_index.find(sessions_dir, options.resume_id))
    return store.load(session_index.latest_for(sessions_dir, str(options.cwd)))
