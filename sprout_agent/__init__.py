"""sprout-agent: a command-line coding agent with MCP-driven lifecycle hooks.

`testing.py` is for your own tests: the agent driven by a recorded conversation (docs/cassettes.md)."""

__version__ = "0.1.0"
# The Claude Code release whose headless protocol (stream-json, the SDKs' control requests) sprout-agent speaks:
# the one bundled with the Claude Agent SDK our tests drive it with (claude-agent-sdk 0.2.189). Reported as the
# protocol level, next to our own name, never as our version (docs/stream-json.md, `claude_code_version`).
CLAUDE_CODE_PROTOCOL = "2.1.332"
