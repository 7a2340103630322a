"""Composition root: config → ServerPool → Hooks → LLM → Agent → renderer; the only module knowing all."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread

from sprout_agent import config as cfg
from sprout_agent import processes, store
from sprout_agent import settings as st
from sprout_agent.agent import Agent, TurnResult
from sprout_agent.compaction import Compactor, context_window, parse_threshold
from sprout_agent.errors import (
    EXIT_BUDGET,
    EXIT_MAX_TURNS,
    EXIT_OK,
    EXIT_RUNTIME,
    SproutError,
    UsageError,
)
from sprout_agent.events import Event, Notice
from sprout_agent.hooks import Hooks, parse_allowlist
from sprout_agent.ledger import Ledger, Price, parse_prices
from sprout_agent.permissions import Ask, Policy
from sprout_agent.protocols import Model
from sprout_agent.system_prompt import build_system_prompt

if TYPE_CHECKING:
    from sprout_agent.servers import ServerPool


@dataclass(frozen=True)
class Options:
    prompt: str | None
    config_files: tuple[Path, ...] = ()
    model: str | None = None
    system_prompt: str | None = None
    append_system_prompt: str | None = None
    max_turns: int | None = None
    cwd: Path = field(default_factory=Path.cwd)
    verbose: bool = False
    strict_mcp_config: bool = False
    max_budget_usd: float | None = None
    output_format: str = "text"  # text | json | stream-json
    input_format: str = "text"  # text | stream-json
    resume_id: str | None = None  # --resume ID
    continue_latest: bool = False  # --continue
    permission_mode: str = "auto"  # auto | ask | read-only
    allow_tools: tuple[str, ...] = ()  # patterns such as dev__bash or git__*
    deny_tools: tuple[str, ...] = ()


@dataclass
class Prepared:
    """Everything that can be decided before any server or import: fails fast with exit code 2."""

    options: Options
    settings: st.Settings
    loaded: cfg.LoadedConfig
    env: dict[str, str]
    model: str  # --model, else ANTHROPIC_MODEL, else the default
    prices: dict[str, Price]  # SPROUT_AGENT_PRICES overrides
    window: int  # context window, tokens
    threshold: int | None  # compaction threshold, tokens; None = off
    sessions_dir: Path | None = None  # None: nothing is recorded
    resume: store.LoadedSession | None = None  # --continue / --resume


def prepare(options: Options, user_config_dir: Path | None, sessions_dir: Path | None = None) -> Prepared:
    env = {**cfg.read_dotenv(options.cwd), **os.environ}  # the real environment wins over .env
    settings = st.Settings.from_env(env)
    if not settings.api_key_present and not settings.base_url:
        raise UsageError("ANTHROPIC_API_KEY is not set: export it (or put it in .env) and run again")
    model = options.model or settings.model
    window = context_window(model, settings.max_context_tokens)
    threshold = parse_threshold(settings.compact_threshold, window, settings.max_output_tokens)
    prices = parse_prices(settings.prices)
    loaded = cfg.load_config(options.config_files, options.cwd, env, user_config_dir)
    loaded = cfg.with_builtin_servers(loaded, settings.builtin_servers, options.cwd)
    resume = _resumed(options, sessions_dir)
    return Prepared(options, settings, loaded, env, model, prices, window, threshold, sessions_dir, resume)


def _resumed(options: Options, sessions_dir: Path | None) -> store.LoadedSession | None:
    """The session --continue or --resume names, loaded and repaired; a bad id fails here with exit 2."""
    if options.resume_id is None and not options.continue_latest:
        return None
    if options.resume_id is not None and options.continue_latest:
        raise UsageError("give --continue or --resume ID, not both")
    if sessions_dir is None:
        raise UsageError("sessions are not recorded here: nothing to resume")
    if options.resume_id is not None:
        return store.load(store.find(sessions_dir, options.resume_id))
    return store.load(store.latest_for(sessions_dir, str(options.cwd)))


class Runtime:
    """Owns the server pool in one task (entered and exited there) and builds the model and agent."""

    def __init__(self, prepared: Prepared, emit: Callable[[Event], None], ask: Ask | None = None) -> None:
        self.prepared = prepared
        self.emit = emit
        self.ask = ask  # the interactive session's permission question; None = nobody to ask
        self.ready = anyio.Event()
        self.done = anyio.Event()
        self.owner_finished = anyio.Event()
        self._model_built = anyio.Event()
        self.child_env = partial(st.child_environment, prepared.env)
        self.session_id = prepared.resume.session_id if prepared.resume else uuid.uuid4().hex
        self.store = self._make_store()
        self.pool: ServerPool | None = None
        self.agent: Agent | None = None

    async def own(self) -> None:
        p = self.prepared
        child_env = self.child_env
        # Servers start first and boot on the other core while we import mcp (~1 s) and anthropic (~2 s).
        prespawned = await processes.spawn_all(
            {c.name: ((c.command, *c.args), child_env(c.env), c.cwd) for c in p.loaded.servers if not c.in_process}
        )
        try:
            await self._own(prespawned)
        finally:
            for process in prespawned.values():  # the pool ended those it adopted; these are the rest
                if isinstance(process, processes.ServerProcess):
                    process.kill_now()

    async def _own(self, prespawned: dict[str, processes.ServerProcess | OSError]) -> None:
        p = self.prepared
        settings = p.settings
        servers = await anyio.to_thread.run_sync(_import_servers, abandon_on_cancel=True)
        pool = servers.ServerPool(
            p.loaded.servers,
            emit=self.emit,
            start_timeout=settings.server_start_timeout,
            tool_timeout=settings.tool_timeout,
            result_max_bytes=settings.tool_result_max_bytes,
            child_env=self.child_env,
            stderr_log=self._server_log(),
            prespawned=prespawned,
        )
        self.pool = pool
        model_box: list[Model] = []
        try:
            async with anyio.create_task_group() as group:
                # anthropic costs ~2 s to import; it loads in a thread while the servers hand-shake.
                group.start_soon(self._build_model, model_box)
                async with pool:
                    await self._model_built.wait()
                    self._check_strict(pool)
                    self.agent = self._build_agent(pool, model_box[0])
                    self._load_resumed(self.agent)
                    self.ready.set()
                    await self.done.wait()
        finally:
            if self.store is not None:
                self.store.close()
            self.owner_finished.set()

    def _server_log(self) -> Path | None:
        """With --verbose, servers' stderr goes to a log file (never to the terminal)."""
        if not self.prepared.options.verbose:
            return None
        import platformdirs

        path = Path(platformdirs.user_log_dir("sprout-agent")) / "servers.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        self.emit(Notice(f"MCP server stderr is logged to {path}"))
        return path

    def _make_store(self) -> store.SessionStore | None:
        """The transcript: appended to when resuming, else a new file (created at the first message)."""
        p = self.prepared
        if p.resume is not None:
            return store.SessionStore.resuming(p.resume)
        if p.sessions_dir is None:
            return None
        model = p.model
        return store.SessionStore.new(p.sessions_dir, self.session_id, str(p.options.cwd), model)

    def _load_resumed(self, agent: Agent) -> None:
        resumed = self.prepared.resume
        if resumed is not None:
            agent.load(resumed.history, "resume")
            self.emit(Notice(f"resumed session {resumed.session_id} ({len(resumed.history)} messages)"))

    async def _build_model(self, box: list[Model]) -> None:
        box.append(await anyio.to_thread.run_sync(self._make_model, abandon_on_cancel=True))
        self._model_built.set()

    def _make_model(self) -> Model:
        from sprout_agent.llm import AnthropicModel

        settings = self.prepared.settings
        key = self.prepared.env.get("ANTHROPIC_API_KEY") or self.prepared.env.get("ANTHROPIC_AUTH_TOKEN")
        return AnthropicModel(
            model=self.prepared.model,
            max_tokens=settings.max_output_tokens,
            emit=self.emit,
            api_key=key or "none",  # a keyless local server behind ANTHROPIC_BASE_URL
            base_url=settings.base_url,
        )

    def _check_strict(self, pool: ServerPool) -> None:
        if not self.prepared.options.strict_mcp_config:
            return
        failed = [s.name for s in pool.status() if s.state != "running"]
        if failed:
            raise SproutError(f"--strict-mcp-config: server(s) failed to start: {', '.join(failed)}")

    def _build_agent(self, pool: ServerPool, model: Model) -> Agent:
        p = self.prepared
        names = {server.name for server in p.loaded.servers}
        allowlist = parse_allowlist(p.settings.hook_servers)
        if allowlist is not None and not allowlist.everything:
            for missing in sorted(allowlist.names - names):
                self.emit(Notice(f"MCP_HOOK_SERVERS names '{missing}', but no server has that name", "warning"))
        ledger = Ledger(p.model, p.prices)
        compactor = Compactor(
            model=model,
            window=p.window,
            threshold=p.threshold,
            max_compactions=p.settings.max_compactions,
            emit=self.emit,
            on_usage=ledger.add,
        )
        hooks = Hooks(
            pool,
            allowlist=allowlist,
            timeout_ms=p.settings.hook_timeout_ms,
            stop_max_rejections=p.settings.stop_max_rejections,
            emit=self.emit,
        )
        system = build_system_prompt(
            p.options.cwd, replace=p.options.system_prompt, append=p.options.append_system_prompt
        )
        return Agent(
            model=model,
            host=pool,
            hooks=hooks,
            emit=self.emit,
            system=system,
            ledger=ledger,
            compactor=compactor,
            max_turns=p.options.max_turns,
            max_budget_usd=p.options.max_budget_usd,
            max_parallel_tools=p.settings.max_parallel_tools,
            cwd=str(p.options.cwd),
            session_id=self.session_id,
            recorder=self.store,
            permit=Policy(
                p.options.permission_mode, allow=p.options.allow_tools, deny=p.options.deny_tools, ask=self.ask
            ),
        )


def _import_servers() -> ModuleType:
    from sprout_agent import servers

    return servers


def exit_code_for(result: TurnResult) -> int:
    if result.stop_reason == "max_turns":
        return EXIT_MAX_TURNS
    if result.stop_reason == "budget":
        return EXIT_BUDGET
    if result.stop_reason in ("end_turn", "stop_sequence"):
        return EXIT_OK
    return EXIT_RUNTIME


def run(prepared: Prepared, interactive: bool) -> int:
    """Runs the REPL, or the prompt(s) to completion (headless.py); returns the exit code."""
    if not interactive:
        from sprout_agent.headless import run_headless

        return run_headless(prepared)
    from sprout_agent.repl import run_repl
    from sprout_agent.ui.render import TerminalRenderer

    renderer = TerminalRenderer(interactive=interactive, verbose=prepared.options.verbose)
    if prepared.options.verbose:
        read = ", ".join(str(p) for p in prepared.loaded.files_read) or "none"
        renderer.say(f"config files read: {read}", "dim")
    for notice in prepared.loaded.notices:
        renderer.say(notice, "yellow")
    return anyio.run(run_repl, prepared, renderer)
