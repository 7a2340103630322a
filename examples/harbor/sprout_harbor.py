"""sprout-agent as a Harbor installed agent (Harbor: the harness of Terminal-Bench 2.0; `pip install harbor`, Python
3.12 or newer). Harbor imports it by path:

    PYTHONPATH=examples/harbor harbor run -d terminal-bench@2.0 \\
        --agent-import-path sprout_harbor:SproutAgent -m anthropic/claude-sonnet-4-5

It installs sprout-agent in the task's container with uv (from a wheel you pass, `--ak wheel=dist/….whl`, or from
the package index), with bubblewrap for its sandbox; runs the instruction with `-p` and stream-json, under the model
and the limits Harbor passes; then exports the session as an ATIF trajectory (`sessions export ID --atif`) beside
the stream, and fills Harbor's context from it: tokens, cache, cost. A failed run is classified from the stream's
`result` line (the API's status), as Harbor's own adapters classify theirs. docs/benchmarks.md has the commands.
"""

# pyright: reportMissingImports=false, reportUnknownMemberType=false, reportUnknownVariableType=false
# pyright: reportUnknownArgumentType=false, reportAttributeAccessIssue=false, reportIncompatibleVariableOverride=false
# pyright: reportOptionalCall=false

from __future__ import annotations

import json
import shlex
import uuid
from pathlib import Path, PurePosixPath
from types import SimpleNamespace
from typing import Annotated, Any, ClassVar, Literal

from harbor.agents.agent_auth_resolution import ModelConnectionSpec, ProviderAccess
from harbor.agents.capabilities import AgentCapabilities
from harbor.agents.installed.base import (
    AgentAuthenticationError,
    ApiInternalServerError,
    ApiOverloadedError,
    ApiRateLimitError,
    BaseInstalledAgent,
    ModelNotFoundError,
    NonZeroAgentExitCodeError,
    PackageSpec,
    UnknownApiError,
    filter_jsonl_events,
    with_prompt_template,
)
from harbor.agents.options import Cli, Env, InstalledAgentOptions
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext
from harbor.models.model_api_format import ModelApiFormat
from harbor.models.trajectories import Trajectory
from pydantic import Field

STREAM = "sprout-agent.txt"  # the run's stream-json lines and its stderr, in the agent's logs directory
TRAJECTORY = "trajectory.json"  # the ATIF export, where Harbor reads model usage from
PATH_SETUP = 'export PATH="$HOME/.local/bin:$PATH"; '  # where uv puts its tools
UV_INSTALLER = "https://astral.sh/uv/install.sh"
UPLOADS = PurePosixPath("/installed-agent")  # Harbor makes it; the wheel goes there


class SproutOptions(InstalledAgentOptions):
    max_turns: Annotated[int | None, Cli("--max-turns")] = Field(
        default=None, description="Most model requests for the task."
    )
    max_budget_usd: Annotated[str | None, Cli("--max-budget-usd")] = Field(
        default=None, description="End the run once this much is spent (USD)."
    )
    permission_mode: Annotated[
        Literal["default", "acceptEdits", "plan", "auto", "dontAsk", "bypassPermissions"] | None,
        Cli("--permission-mode", format="--permission-mode={value}"),
    ] = Field(default="bypassPermissions", description="Permission mode (nobody is there to ask).")
    reasoning_effort: Annotated[Literal["low", "medium", "high", "xhigh", "max"] | None, Env("SPROUT_AGENT_EFFORT")] = (
        Field(default=None, description="The model's effort (Harbor's --effort); unset: the API's default.")
    )
    sandbox: Annotated[
        Literal["workspace-write", "read-only", "off", "required"] | None, Cli("--sandbox", format="--sandbox={value}")
    ] = Field(default=None, description="The OS sandbox of dev__bash; unset: workspace-write where it works.")
    wheel: str | None = Field(default=None, description="A sprout-agent wheel on the host, installed in its place.")
    package: str | None = Field(
        default=None, description="What uv installs (a requirement or URL); unset: sprout-agent[==version]."
    )


class SproutAgent(BaseInstalledAgent):
    """Installs sprout-agent in the task's environment and runs the instruction headless."""

    capabilities = AgentCapabilities(base_url=True, reasoning_effort=True, atif=True, resume=True, mcp_servers=True)
    options_model = SproutOptions
    options: SproutOptions
    SYSTEM_PACKAGES: ClassVar[dict[str, PackageSpec]] = {
        **BaseInstalledAgent.SYSTEM_PACKAGES,
        "bubblewrap": PackageSpec(
            commands=("bwrap",),
            packages={m: ("bubblewrap",) for m in ("apt-get", "dnf", "yum", "apk")},
        ),
    }
    MODEL_CONNECTION = ModelConnectionSpec(
        default_provider="anthropic",
        agent_provider_access=ProviderAccess(
            api_key_candidate_names=["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"],
            base_url_candidate_names=["ANTHROPIC_BASE_URL"],
        ),
        api_key_destination_names={"default": "ANTHROPIC_API_KEY"},
        base_url_destination_names={"default": "ANTHROPIC_BASE_URL"},
        supported_api_formats=[ModelApiFormat.ANTHROPIC_MESSAGES],
        default_api_format_by_provider={"default": ModelApiFormat.ANTHROPIC_MESSAGES},
    )

    def __init__(self, logs_dir: Path, *args: Any, **kwargs: Any) -> None:
        super().__init__(logs_dir, *args, **kwargs)
        self._session_id: str | None = None

    @staticmethod
    def name() -> str:
        return "sprout-agent"

    def get_version_command(self) -> str | None:
        return PATH_SETUP + "sprout-agent --version"

    def parse_version(self, stdout: str) -> str:
        words = stdout.split()
        return next((w for w in words if w[:1].isdigit()), stdout.strip())

    # ------------------------------------------------------------------ install
    async def install(self, environment: BaseEnvironment) -> None:
        if await self.is_requested_version_installed(environment):
            return
        await self.ensure_system_dependencies(environment, ("curl", "git", "bubblewrap"))
        spec = await self._package(environment)
        await self.exec_as_agent(environment, command=self.install_command(spec))

    def install_command(self, spec: str) -> str:
        """uv (installed first when missing) installs sprout-agent as a tool of its own, in an environment uv makes
        with a Python that fits (downloaded when the image has none), byte-compiled: uv does not compile by default,
        and a task's one run would otherwise compile the SDKs first (~2.5 s of CPU)."""
        return (
            "set -euo pipefail; "
            + PATH_SETUP
            + f"command -v uv >/dev/null 2>&1 || curl -LsSf {UV_INSTALLER} | sh; "
            + PATH_SETUP
            + f'UV_TOOL_BIN_DIR="$HOME/.local/bin" uv tool install --force --compile-bytecode {shlex.quote(spec)}; '
            + "sprout-agent --version"
        )

    async def _package(self, environment: BaseEnvironment) -> str:
        if self.options.wheel:
            wheel = Path(self.options.wheel).expanduser()
            target = (UPLOADS / wheel.name).as_posix()
            await environment.upload_file(wheel, target)
            return target
        if self.options.package:
            return self.options.package
        return f"sprout-agent=={self._version}" if self._version else "sprout-agent"

    # ------------------------------------------------------------------ run
    @with_prompt_template
    async def run(self, instruction: str, environment: BaseEnvironment, context: AgentContext) -> None:
        env = self._run_env()
        logs = self.environment_logs_dir
        setup = f"mkdir -p {shlex.quote(logs.as_posix())}"
        if mcp := self._mcp_config():
            setup += f" && printf '%s' {shlex.quote(mcp)} > {shlex.quote((logs / 'mcp.json').as_posix())}"
        await self.exec_as_agent(environment, command=setup, env=env)
        try:
            await self.exec_as_agent(
                environment, command=self.run_command(), env={**env, "SPROUT_INSTRUCTION": instruction}
            )
        finally:  # a failed run leaves a trajectory too, as far as it got
            await self._export(environment, env)

    def run_command(self) -> str:
        """The instruction on stdin (never on the command line, where `ps` shows it), the stream to the logs."""
        logs = self.environment_logs_dir
        if self._resume and self._session_id:
            session = f"--resume {self._session_id}"  # the same session: its id and its transcript go on
        else:
            self._session_id = str(uuid.uuid4())
            session = f"--session-id {self._session_id}"
        flags = self.build_cli_flags()
        mcp = f" --mcp-config {shlex.quote((logs / 'mcp.json').as_posix())}" if self.mcp_servers else ""
        return (
            PATH_SETUP
            + 'printf "%s" "$SPROUT_INSTRUCTION" | { unset SPROUT_INSTRUCTION; '
            + f"sprout-agent -p --output-format=stream-json --verbose {session}{mcp}"
            + (f" {flags}" if flags else "")
            + f"; }} 2>&1 | tee {shlex.quote((logs / STREAM).as_posix())}"
        )

    def _run_env(self) -> dict[str, str]:
        access = self.model_connection
        env = {k: v for k, v in access.env.items() if v}
        if access.execution_base_url:
            env["ANTHROPIC_BASE_URL"] = access.execution_base_url
        if self.model_name:
            env["ANTHROPIC_MODEL"] = self._parse_model_name(self.model_name)[1]
        # No warm interpreter left behind in the task's container; the run is the only one there.
        return env | self._resolved_env_vars | {"SPROUT_AGENT_WARM": "0"} | self.mcp_header_env.env

    def _mcp_config(self) -> str | None:
        """The task's MCP servers as an `--mcp-config` file (Claude Code's `mcpServers` shape)."""
        if not self.mcp_servers:
            return None
        servers: dict[str, dict[str, Any]] = {}
        refs = self.mcp_header_env.refs
        for server in self.mcp_servers:
            if server.transport == "stdio":
                servers[server.name] = {"command": server.command, "args": server.args}
                continue
            entry: dict[str, Any] = {"type": "http" if server.transport == "streamable-http" else server.transport}
            entry["url"] = server.url
            if server.name in refs:
                entry["headers"] = {name: f"${{{var}}}" for name, var in refs[server.name].items()}
            servers[server.name] = entry
        return json.dumps({"mcpServers": servers})

    async def _export(self, environment: BaseEnvironment, env: dict[str, str]) -> None:
        target = shlex.quote((self.environment_logs_dir / TRAJECTORY).as_posix())
        command = PATH_SETUP + f"sprout-agent sessions export {self._session_id} --atif --out {target}"
        try:
            await self.exec_as_agent(environment, command=command, env=env)
        except NonZeroAgentExitCodeError as error:  # no session (the run failed before its first message)
            self.logger.debug(f"no ATIF trajectory: {error}")

    # ------------------------------------------------------------------ after the run
    def populate_context_post_run(self, context: AgentContext) -> None:
        result = _result_line(self.logs_dir / STREAM)
        trajectory = self.read_trajectory()
        totals = trajectory.final_metrics if trajectory is not None else None
        if totals is not None:
            context.n_input_tokens = totals.total_prompt_tokens or 0
            context.n_cache_tokens = totals.total_cached_tokens or 0
            context.n_output_tokens = totals.total_completion_tokens or 0
            context.cost_usd = totals.total_cost_usd
        elif result is not None:  # no transcript to export: the stream's own totals
            usage = result.get("usage") or {}
            cached = int(usage.get("cache_read_input_tokens") or 0)
            written = int(usage.get("cache_creation_input_tokens") or 0)
            context.n_input_tokens = int(usage.get("input_tokens") or 0) + cached + written
            context.n_cache_tokens, context.n_output_tokens = cached, int(usage.get("output_tokens") or 0)
            context.cost_usd = result.get("total_cost_usd")
        if result is not None:
            keys = ("session_id", "subtype", "is_error", "stop_reason", "num_turns", "terminal_reason")
            context.metadata = {**(context.metadata or {}), **{k: result[k] for k in keys if k in result}}

    def read_trajectory(self) -> Trajectory | None:
        path = self.logs_dir / TRAJECTORY
        try:
            return Trajectory.model_validate_json(path.read_text())
        except (OSError, ValueError) as error:
            self.logger.debug(f"no trajectory at {path}: {error}")
            return None

    def _classify_exec_error(self, command: str, result: Any) -> NonZeroAgentExitCodeError:
        """From the `result` line's API status when there is one; else Harbor's patterns over the result and error
        lines only (the model's text and tool output in the stream could echo any error phrase)."""
        if "--output-format=stream-json" not in command:
            return super()._classify_exec_error(command, result)
        line = _last_result(result.stdout or "")
        if line is not None and isinstance(status := line.get("api_error_status"), int):
            detail = f"sprout-agent: API error {status}: {line.get('result', '')}"
            return _BY_STATUS.get(status, ApiInternalServerError if status >= 500 else UnknownApiError)(detail)
        evidence = SimpleNamespace(
            return_code=result.return_code,
            stdout=filter_jsonl_events(result.stdout, lambda e: e.get("type") in ("result", "error")),
            stderr=result.stderr,
        )
        return super()._classify_exec_error(command, evidence)


_BY_STATUS: dict[int, type[NonZeroAgentExitCodeError]] = {
    401: AgentAuthenticationError,
    403: AgentAuthenticationError,
    404: ModelNotFoundError,
    429: ApiRateLimitError,
    500: ApiInternalServerError,
    529: ApiOverloadedError,
    503: ApiOverloadedError,
}


def _last_result(stdout: str) -> dict[str, Any] | None:
    found: dict[str, Any] | None = None
    for line in stdout.splitlines():
        if line.startswith("{"):
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict) and event.get("type") == "result":
                found = event
    return found


def _result_line(path: Path) -> dict[str, Any] | None:
    try:
        return _last_result(path.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return None
