"""The user's guards a repository would like to weaken: one list of (variable, the value it would set), for the
`.env` tests (test_config.py) and the batch task `env` tests (test_batch.py). Written out, not read from
guarded_env.py, so a name dropped from that table fails both."""

from __future__ import annotations

WEAKENING: list[tuple[str, str]] = [
    ("MCP_HOOK_SERVERS", "none-of-yours"),  # no hook of yours runs
    ("SPROUT_AGENT_HOOK_TIMEOUT_MS", "1"),  # every hook call times out
    ("SPROUT_AGENT_PRE_TOOL_MAX_OBJECTIONS", "0"),  # _PreToolUse objections off
    ("SPROUT_AGENT_STOP_MAX_REJECTIONS", "0"),  # the _Stop gate off
    ("SPROUT_AGENT_TOOL_HOOKS", "0"),
    ("SPROUT_AGENT_TRUST_PROJECT", "1"),  # the project's servers start unasked
    ("SPROUT_AGENT_ALLOW_SAMPLING", "1"),  # servers sample the model on your bill
    ("SPROUT_AGENT_ELICITATION", "accept-defaults"),  # the agent answers servers' questions
    ("SPROUT_AGENT_WEB", "on"),  # web search and fetch, billed and reaching out
    ("SPROUT_AGENT_BUILTIN_SERVERS", "none"),  # the sandboxed dev server gone
    ("SPROUT_AGENT_OAUTH_TEST_REDIRECT", "1"),  # logins without a browser
    ("HOME", "/tmp/planted-home"),  # another user config, approvals file, sessions
    ("XDG_CONFIG_HOME", "/tmp/planted-config"),
    ("XDG_DATA_HOME", "/tmp/planted-data"),
    ("xdg_state_home", "/tmp/planted-state"),  # any case
    ("GIT_DIR", "planted.git"),  # the git our tools run reads a repository of theirs
    ("GIT_CONFIG_GLOBAL", "/tmp/planted-gitconfig"),
]
