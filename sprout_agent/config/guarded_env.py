"""The environment variables a repository may not set: one table, read by a project's `.env` (dotenv_file.py)
and a batch task's `env` (batch/tasks.py), and by `.env.example` to say which ones must be exported.

A cloned repository and a task file generated from unreviewed data are both untrusted input: neither may choose
where requests and credentials go, what runs, or weaken a guard the user set (hooks, consent, the sandbox, the
budget); docs/security.md says what each group protects.
"""

from __future__ import annotations

import functools
import re

# (what the variables decide, their names: full-match patterns, any case, separated by blanks). Stdlib only:
# settings.py reads it for .env.example.
REFUSED: tuple[tuple[str, str], ...] = (
    # Every ANTHROPIC_* but the key and the model: a repository's endpoint would get your key and the whole
    # conversation. Proxies and CA bundles route or intercept any traffic.
    # OTEL_* and the telemetry switch: where traces of your sessions (and, if you allow, their contents) go.
    # A cassette holds the whole conversation, and a replay answers in the model's place (docs/cassettes.md).
    ("where requests and credentials go",
     r"ANTHROPIC_(?!API_KEY$|MODEL$).* .*_PROXY SSL_CERT_.* .*_CA_BUNDLE NODE_EXTRA_CA_CERTS NODE_TLS_.* "
     r"OTEL_.* SPROUT_AGENT_TELEMETRY.* TRACEPARENT TRACESTATE SPROUT_AGENT_RECORD SPROUT_AGENT_REPLAY.* "
     r"SPROUT_AGENT_CASSETTE_NAME "
     # The provider, its region, endpoint and credentials (docs/providers.md), and the command printing a key.
     r"CLAUDE_CODE_USE_.* CLAUDE_CODE_SKIP_.* CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS AWS_.* CLOUD_ML_REGION "
     r"VERTEX_REGION_.* GOOGLE_.* GCLOUD_.* CLOUDSDK_.* AZURE_.* SPROUT_AGENT_API_KEY_HELPER CLAUDE_CODE_API_KEY_.* "
     # Where an Azure managed identity's token comes from (Entra ID for Foundry): App Service's, Arc's, IMDS's.
     r"IDENTITY_ENDPOINT IDENTITY_HEADER IDENTITY_SERVER_THUMBPRINT MSI_.* IMDS_ENDPOINT"),
    # The batch's command for each task; which built-in servers start (the sandboxed dev server, or none); which
    # process runs the session (the warm interpreter).
    # GIT_*: GIT_DIR, GIT_CONFIG_* and the like point the git our tools run at a repository or config of theirs.
    ("what runs",
     "PATH PYTHON.* LD_.* DYLD_.* NODE_OPTIONS GIT_.* TMPDIR SPROUT_AGENT_BATCH_.* SPROUT_AGENT_BUILTIN_SERVERS "
     "SPROUT_AGENT_WARM.*"),
    # Which servers' hooks run, their timeout and objection budgets: a repository must not switch off a guard the
    # user runs as a hook, nor make it give up sooner.
    ("your hooks",
     "MCP_HOOK_SERVERS SPROUT_AGENT_HOOK_TIMEOUT_MS SPROUT_AGENT_PRE_TOOL_MAX_OBJECTIONS "
     "SPROUT_AGENT_STOP_MAX_REJECTIONS SPROUT_AGENT_TOOL_HOOKS"),
    # Trusting the project's servers, answering their questions, logging in without a browser; who may drive
    # `mcp serve` over HTTP (its token).
    ("what needs your consent",
     "SPROUT_AGENT_TRUST_PROJECT SPROUT_AGENT_ELICITATION SPROUT_AGENT_OAUTH_TEST_REDIRECT SPROUT_AGENT_SERVE_TOKEN"),
    # Sampling and web search are billed to you (and fetch sends data out); zero prices defeat the budgets.
    # Deeper subagents multiply what a task can spend.
    ("what spends your money",
     "SPROUT_AGENT_ALLOW_SAMPLING SPROUT_AGENT_WEB SPROUT_AGENT_PRICES SPROUT_AGENT_SUBAGENT_DEPTH"),
    ("the sandbox", "SPROUT_AGENT_SANDBOX.* SPROUT_DEV_.*"),
    # The way back from what the agent did (docs/rewind.md): a repository must not switch it off.
    ("your checkpoints", "SPROUT_AGENT_CHECKPOINTS"),
    # How soon a quiet request says so: a notice each millisecond would bury the screen and the scripts' stderr.
    ("what you are told", "SPROUT_AGENT_API_WAITING_MS"),
    # HOME and XDG_* locate your config, approvals and sessions; the rate gate is a file every run writes;
    # CLAUDE_CONFIG_DIR is where a copy of each transcript is written, in Claude Code's format.
    ("where your files are", "HOME XDG_.* SPROUT_AGENT_RATE_GATE CLAUDE_CONFIG_DIR"),
)  # fmt: skip

# What a batch task's `env` may not set on top of REFUSED (a task's env is its process's real environment, where
# a project's `.env` is only a default under it): the key, so a task's requests never go to another account, and
# the model, which has the task's own `model` field.
TASK_ALSO_REFUSED: tuple[str, ...] = ("ANTHROPIC_API_KEY", "ANTHROPIC_MODEL")


@functools.cache
def _groups() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """REFUSED compiled at its first use: a run without a `.env` or a settings `env` never reads it (~5 ms at start)."""
    return tuple(
        (why, re.compile("|".join(f"(?:{p})" for p in names.split()), re.IGNORECASE)) for why, names in REFUSED
    )


def refused_because(name: str) -> str | None:
    """What `name` decides, when a project's `.env` may not set it; None when it may."""
    return next((why for why, pattern in _groups() if pattern.fullmatch(name)), None)


def task_refused_because(name: str) -> str | None:
    """As `refused_because`, for a batch task's `env` (which may not set TASK_ALSO_REFUSED either)."""
    if name.upper() in TASK_ALSO_REFUSED:
        return "which account the requests go to, and which model (a task has `model`)"
    return refused_because(name)
