"""The tables of every environment variable sprout-agent reads, with its default and meaning: `ENV_VARS`, which
Settings reads (the real environment over a project's `.env`), and `PROCESS_ENV_VARS`, read from the process's own
environment where they are used. `.env.example` is rendered from them; tests/test_config.py checks that every name
the code reads is in one of them."""

from __future__ import annotations

from dataclasses import dataclass

from sprout_agent.config.guarded_env import refused_because

DEFAULT_MODEL = "claude-sonnet-5-5"  # newest Sonnet in anthropic 2.15's ModelParam


@dataclass(frozen=True, slots=True)
class EnvVar:
    name: str
    default: str  # "" = unset by default
    meaning: str


# The one list of variables the agent reads: Settings.from_env and .env.example both come from it.
ENV_VARS: tuple[EnvVar, ...] = (
    EnvVar("ANTHROPIC_API_KEY", "", "Anthropic API key (required unless ANTHROPIC_AUTH_TOKEN is set)"),
    EnvVar("ANTHROPIC_AUTH_TOKEN", "", "bearer token, instead of ANTHROPIC_API_KEY"),
    EnvVar("ANTHROPIC_BASE_URL", "", "API endpoint; unset = https://api.anthropic.com"),
    EnvVar("ANTHROPIC_MODEL", DEFAULT_MODEL, "model id"),
    EnvVar("API_TIMEOUT_MS", "600000", "a model request's read timeout, milliseconds (Claude Code's name)"),
    EnvVar("SPROUT_AGENT_API_WAITING_MS", "15000", "a quiet request says so after this long, milliseconds, 1-15000"),
    EnvVar("ANTHROPIC_DEFAULT_HAIKU_MODEL", "claude-haiku-5-5", "a subagent definition's `model: haiku`"),
    EnvVar("ANTHROPIC_DEFAULT_SONNET_MODEL", "claude-sonnet-5-5", "a subagent definition's `model: sonnet`"),
    EnvVar("ANTHROPIC_DEFAULT_OPUS_MODEL", "claude-opus-5-5", "a subagent definition's `model: opus`"),
    EnvVar("MCP_HOOK_SERVERS", "", "servers whose hooks run: * or comma-separated names; unset = no hooks"),
    EnvVar("SPROUT_AGENT_HOOK_TIMEOUT_MS", "2500", "per hook call timeout, milliseconds, at least 1"),
    EnvVar("SPROUT_AGENT_STOP_MAX_REJECTIONS", "3", "session-wide _Stop objection budget (0 = off)"),
    EnvVar("SPROUT_AGENT_TOOL_HOOKS", "", "1 = call _PreToolUse and _PostToolUse hooks (off: see docs/hooks.md)"),
    EnvVar(
        "SPROUT_AGENT_PRE_TOOL_MAX_OBJECTIONS",
        "",
        "session-wide _PreToolUse objection budget; unset = unlimited, 0 = off",
    ),
    EnvVar("SPROUT_AGENT_SERVER_START_TIMEOUT", "30", "MCP server start-up timeout, seconds"),
    EnvVar("SPROUT_AGENT_TOOL_TIMEOUT", "600", "per tool call timeout, seconds"),
    EnvVar("SPROUT_AGENT_TOOL_RESULT_MAX_BYTES", "51200", "tool result text kept for the model, bytes"),
    EnvVar("SPROUT_AGENT_MAX_PARALLEL_TOOLS", "8", "tool calls run at once (1 = one at a time)"),
    EnvVar("SPROUT_AGENT_SUBAGENT_DEPTH", "1", "how deep subagents may nest (1: a subagent starts none)"),
    EnvVar("SPROUT_AGENT_MAX_OUTPUT_TOKENS", "32000", "max_tokens per model response"),
    EnvVar("SPROUT_AGENT_MAX_CONTEXT_TOKENS", "", "context window, tokens; unset = the model's known window"),
    EnvVar(
        "SPROUT_AGENT_THINKING", "", "extended thinking: adaptive, on (a budget) or off; unset = the model's default"
    ),
    EnvVar("SPROUT_AGENT_THINKING_BUDGET", "16000", "thinking budget_tokens with thinking on (at least 1024)"),
    EnvVar("SPROUT_AGENT_EFFORT", "", "effort: low, medium, high, xhigh or max; unset = the API's default"),
    EnvVar("SPROUT_AGENT_WEB", "off", "web search and fetch run by the API (on or off; --web); $10 per 1000 searches"),
    EnvVar("SPROUT_AGENT_COMPACT_THRESHOLD", "", "when to compact; unset = built-in default"),
    EnvVar("SPROUT_AGENT_MAX_COMPACTIONS", "10", "compactions per session (0 = never compact)"),
    EnvVar(
        "SPROUT_AGENT_PRICES",
        "",
        'price overrides, $/MTok: {"model-prefix": [in, out, cache_read, cache_write]}',
    ),
    EnvVar(
        "SPROUT_AGENT_CHECKPOINTS",
        "on",
        "checkpoints of the writable tree before each turn that could write, for /rewind",
    ),
    EnvVar("SPROUT_AGENT_BUILTIN_SERVERS", "dev,todo,agent", "built-in MCP servers to start: comma-separated, or none"),
    # Claude Code's provider variables, meaning what they mean there (docs/providers.md); the SDK and the clouds'
    # own libraries read the credentials (the AWS chain, Google's application default credentials).
    EnvVar("CLAUDE_CODE_USE_BEDROCK", "", "1: requests go to Amazon Bedrock (needs AWS_REGION and the bedrock extra)"),
    EnvVar("AWS_REGION", "", "Bedrock's region, such as us-east-1 (AWS_DEFAULT_REGION is read when it is unset)"),
    EnvVar("AWS_DEFAULT_REGION", "", "Bedrock's region when AWS_REGION is unset"),
    EnvVar(
        "ANTHROPIC_BEDROCK_BASE_URL", "", "Bedrock runtime endpoint; unset = bedrock-runtime.<region>.amazonaws.com"
    ),
    EnvVar(
        "CLAUDE_CODE_SKIP_BEDROCK_AUTH", "", "1: requests to Bedrock are not signed (a gateway in front signs them)"
    ),
    EnvVar(
        "CLAUDE_CODE_USE_VERTEX", "", "1: requests go to Google Vertex AI (needs CLOUD_ML_REGION and the vertex extra)"
    ),
    EnvVar("CLOUD_ML_REGION", "", "Vertex AI's region: global, or a region such as us-east5"),
    EnvVar(
        "ANTHROPIC_VERTEX_PROJECT_ID", "", "Vertex AI's project; unset = GCLOUD_PROJECT, GOOGLE_CLOUD_PROJECT or ADC's"
    ),
    EnvVar("GCLOUD_PROJECT", "", "Vertex AI's project when ANTHROPIC_VERTEX_PROJECT_ID is unset"),
    EnvVar("GOOGLE_CLOUD_PROJECT", "", "Vertex AI's project when neither of the two above is set"),
    EnvVar("ANTHROPIC_VERTEX_BASE_URL", "", "Vertex AI endpoint; unset = the region's aiplatform.googleapis.com"),
    EnvVar("CLAUDE_CODE_SKIP_VERTEX_AUTH", "", "1: no Google token is sent (a gateway in front authenticates)"),
    EnvVar("CLAUDE_CODE_USE_FOUNDRY", "", "1: requests go to Microsoft Foundry"),
    EnvVar("ANTHROPIC_FOUNDRY_RESOURCE", "", "Foundry resource name (https://<name>.services.ai.azure.com/anthropic/)"),
    EnvVar("ANTHROPIC_FOUNDRY_BASE_URL", "", "Foundry endpoint, instead of ANTHROPIC_FOUNDRY_RESOURCE"),
    EnvVar("ANTHROPIC_FOUNDRY_API_KEY", "", "Foundry key (unset: ANTHROPIC_FOUNDRY_AUTH_TOKEN, else Entra ID)"),
    EnvVar("ANTHROPIC_FOUNDRY_AUTH_TOKEN", "", "a bearer token for Foundry, instead of its key or Entra ID"),
    EnvVar("CLAUDE_CODE_SKIP_FOUNDRY_AUTH", "", "1: Foundry requests carry no credentials (a gateway adds them)"),
    EnvVar(
        "CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS", "", "1: no anthropic-beta header is sent (gateways that refuse them)"
    ),
    EnvVar("SPROUT_AGENT_API_KEY_HELPER", "", "a command (run by /bin/sh) that prints the key; run again when stale"),
    EnvVar("CLAUDE_CODE_API_KEY_HELPER_TTL_MS", "300000", "how long the helper's key is used before it runs again"),
)
DEFAULTS = {var.name: var.default for var in ENV_VARS}

# Read from the process environment where they are used, never through Settings, so a .env line does not
# set them (.env is merged into a dict, never into os.environ). The SPROUT_DEV_* ones belong to the built-in
# tools, which never import the core (they are an MCP server like any other, run in our process or
# standalone over stdio) and so cannot share ENV_VARS; SPROUT_AGENT_DEBUG is read by launch.py's last-resort
# error handler. Listed here so that .env.example names every variable; tests/test_config.py checks that
# every such name in sprout_agent/ is in one of the two tables.
PROCESS_ENV_VARS: tuple[EnvVar, ...] = (
    EnvVar(
        "SPROUT_AGENT_WARM",
        "1",
        "0: never hand a -p run to the warm interpreter, nor start one (as --no-warm; docs/cli.md, Start-up)",
    ),
    EnvVar("SPROUT_AGENT_WARM_IDLE_SECONDS", "600", "the warm interpreter ends after this long without a run"),
    EnvVar("SPROUT_DEV_ALLOW_OUTSIDE", "", "dev tools: 1 lets write and edit reach outside the working directory"),
    EnvVar("SPROUT_DEV_ADD_DIRS", "", "dev tools: more directories write and edit may reach, :-separated (--add-dir)"),
    EnvVar("SPROUT_DEV_BASH_TIMEOUT", "120", "dev tools: bash's timeout when the model gives none, seconds (1 to 600)"),
    EnvVar("SPROUT_DEV_NO_RG", "", "dev tools: 1 makes grep use its pure-Python search even when rg is on PATH"),
    EnvVar(
        "SPROUT_AGENT_TRUST_PROJECT",
        "",
        "1: start the project's .mcp.json servers without approval (as --trust-project); never read from .env",
    ),
    EnvVar(
        "SPROUT_AGENT_ELICITATION",
        "decline",
        "a server's question with nobody to ask (headless, ACP): decline, or accept-defaults (as --elicitation)",
    ),
    EnvVar(
        "SPROUT_AGENT_ALLOW_SAMPLING",
        "",
        "1: headless runs let servers sample the model, on your bill (as --allow-sampling); never read from .env",
    ),
    # Read by the anthropic SDK and botocore themselves, from this process's environment (docs/providers.md).
    EnvVar("ANTHROPIC_CUSTOM_HEADERS", "", "more request headers, `Name: value` per line (a gateway's own auth)"),
    EnvVar("AWS_PROFILE", "", "Bedrock: the AWS profile whose credentials sign requests (SSO, roles, keys)"),
    EnvVar("AWS_BEARER_TOKEN_BEDROCK", "", "Bedrock: an API key, instead of the AWS credential chain"),
    EnvVar("SPROUT_AGENT_DEBUG", "", "any value: an internal error raises with its traceback instead of one line"),
    EnvVar(
        "SPROUT_AGENT_TELEMETRY",
        "",
        "1: OpenTelemetry traces, metrics and logs, as the OTEL_* variables say (docs/telemetry.md); never from .env",
    ),
    EnvVar("SPROUT_AGENT_TELEMETRY_CONTENT", "", "1: spans carry prompts, tool inputs and results too (never secrets)"),
    EnvVar(
        "SPROUT_AGENT_SANDBOX",
        "workspace-write",
        "OS sandbox for dev__bash (as --sandbox): off, read-only, workspace-write, required (must work, else exit 2)",
    ),
    EnvVar("SPROUT_AGENT_SANDBOX_NETWORK", "on", "network for sandboxed commands: on or off (read-only: always off)"),
    EnvVar("SPROUT_AGENT_SANDBOX_ALLOW_WRITE", "", "more directories sandboxed commands may write, :-separated"),
    EnvVar("SPROUT_AGENT_SANDBOX_DENY_READ", "", "more paths hidden from sandboxed commands, :-separated"),
    EnvVar("SPROUT_DEV_SANDBOX", "workspace-write", "dev tools standalone: the sandbox mode (as SPROUT_AGENT_SANDBOX)"),
    EnvVar("SPROUT_DEV_SANDBOX_REQUIRED", "", "dev tools standalone: 1 refuses to run commands unsandboxed"),
    EnvVar("SPROUT_DEV_SANDBOX_NETWORK", "on", "dev tools standalone: network for sandboxed commands, on or off"),
    EnvVar("SPROUT_DEV_SANDBOX_ALLOW_WRITE", "", "dev tools standalone: more writable directories, :-separated"),
    EnvVar("SPROUT_DEV_SANDBOX_DENY_READ", "", "dev tools standalone: more hidden paths, :-separated"),
    EnvVar("SPROUT_DEV_SANDBOX_BWRAP", "", "the bubblewrap binary; unset = bwrap on PATH (agent and dev tools)"),
    EnvVar(
        "SPROUT_AGENT_SANDBOX_MECHANISM",
        "auto",
        "what confines commands: auto (bubblewrap, else Landlock), bubblewrap or landlock (only that one)",
    ),
    EnvVar("SPROUT_DEV_SANDBOX_MECHANISM", "auto", "dev tools standalone: as SPROUT_AGENT_SANDBOX_MECHANISM"),
    EnvVar(
        "SPROUT_AGENT_RATE_GATE",
        "",
        "a file the runs of a batch share: each waits on it before a request, a 429 closes it (set by batch)",
    ),
    EnvVar(
        "SPROUT_AGENT_RECORD", "", "a directory: each session's model traffic recorded there as a cassette (--record)"
    ),
    EnvVar("SPROUT_AGENT_REPLAY", "", "a cassette, or a directory of them: replay the model's side (--replay)"),
    EnvVar("SPROUT_AGENT_REPLAY_MODE", "strict", "strict or lenient: what a replayed request that differs does"),
    EnvVar("SPROUT_AGENT_CASSETTE_NAME", "", "the cassette's name instead of the session id (set by batch per task)"),
    EnvVar("SPROUT_AGENT_BATCH_AGENT", "", "batch: the command each task runs; unset = this sprout-agent (python -m)"),
    EnvVar(
        "SPROUT_AGENT_SHARD_INDEX", "", "batch --shard COUNT: this shard's index, from 0 (before JOB_COMPLETION_INDEX)"
    ),
    EnvVar(
        "SPROUT_AGENT_SERVE_TOKEN",
        "",
        "mcp serve --http: the bearer token every request must carry (docs/mcp-serve.md); never read from .env",
    ),
    EnvVar(
        "SPROUT_AGENT_OAUTH_TEST_REDIRECT",
        "",
        "tests only: 1 finishes OAuth logins without a browser (GETs the authorization URL itself); never from .env",
    ),
)


def render_env_example() -> str:
    """The text of `.env.example`: every variable, its default and meaning, all commented but the key; those a
    project's `.env` may not set (guarded_env.py) are in the second part, to export."""
    lines = [
        "# sprout-agent reads these variables; copy this file to .env in your project to set them.",
        "# The real environment wins over .env. Blank values mean the default.",
    ]
    for var in ENV_VARS:
        if refused_because(var.name) is None:
            lines += _described(var, "" if var.name == "ANTHROPIC_API_KEY" else "# ")
    lines += [
        "",
        "# ---- Read only from the real environment (export them): a project's .env cannot set these (it is ignored",
        "# with a notice), since they choose where requests go, what runs, or your guards (docs/security.md). A",
        "# built-in server run standalone over stdio gets its SPROUT_DEV_* from its .mcp.json `env` (servers inherit",
        "# only a short list of safe variables).",
    ]
    for var in (*(v for v in ENV_VARS if refused_because(v.name) is not None), *PROCESS_ENV_VARS):
        lines += _described(var, "# ")
    return "\n".join(lines) + "\n"


def _described(var: EnvVar, prefix: str) -> list[str]:
    default = f". Default: {var.default}" if var.default else ""
    return ["", f"# {var.meaning}{default}", f"{prefix}{var.name}={var.default}"]
