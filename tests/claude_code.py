"""The real Claude Code, for tests that put something to it beside us: the `claude` binary the TypeScript Agent SDK
ships (.ci/run installs it in .ci/peers; SPROUT_TEST_CLAUDE names another), and the environment it runs in on the
fake API, quiet (nothing leaves the machine)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.fake_anthropic import FakeAnthropic
from tests.harness import tool_results

ROOT = Path(__file__).resolve().parent.parent
CLAUDE = Path(
    os.environ.get("SPROUT_TEST_CLAUDE")
    or ROOT / ".ci/peers/node_modules/@anthropic-ai/claude-agent-sdk-linux-x64/claude"
)
needs_claude = pytest.mark.skipif(not os.access(CLAUDE, os.X_OK), reason=f"no Claude Code binary at {CLAUDE}")
# No updater, no telemetry, no other traffic: only the fake API is asked (scripts/bench's Claude Code figures too).
CLAUDE_QUIET = {"DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1"}


def claude_env(home: Path, fake: FakeAnthropic) -> dict[str, str]:
    """A clean environment for `claude` on the fake API, in its own home."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "ANTHROPIC_API_KEY": "sk-ant-claude-side-0123456789",
        "ANTHROPIC_BASE_URL": fake.base_url,
        **CLAUDE_QUIET,
    }


def answers_to(fake: FakeAnthropic, call_id: str) -> list[dict[str, Any]]:
    """Every tool_result Claude Code sent back for the call `call_id`."""
    return [b for r in fake.requests for b in tool_results(r.body) if b.get("tool_use_id") == call_id]
