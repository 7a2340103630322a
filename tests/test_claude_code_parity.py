"""Our permission rules against the real Claude Code's (issue 42): the same `.claude/settings.json`, mode and call
put to the `claude` binary (the one the TypeScript Agent SDK ships, which .ci/run installs into .ci/peers) on the
fake API, and to our Policy in-process. Under `-p` nobody answers a question, so "asks" and "denied" both end as
Claude Code's permission denial: what is compared is whether the call runs. Skipped where the binary is missing.

The cases are tests/test_claude_settings.py's table, each with Claude Code's tool of the same kind. Left out: the
MCP rows (they need servers on both sides) and Grep and Glob (this Claude Code build has no such tools: its
searches go through Bash). A bare `Edit` rule covers the Edit tool only and `Edit(path)` every file-writing tool,
in both: the Write rows show it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.bounds import bounded
from tests.claude_code import CLAUDE, answers_to, claude_env, needs_claude
from tests.fake_anthropic import FakeAnthropic, reply, tool_use
from tests.test_claude_settings import decide, policy

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

# Our mode names as Claude Code's: our `auto` (every call runs unless a rule says otherwise) is its bypassPermissions.
AS_CLAUDE = {"default": "default", "auto": "bypassPermissions", "bypassPermissions": "bypassPermissions"}
CLAUDE_TOOL = {"bash": "Bash", "read": "Read", "write": "Write"}

CASES: list[tuple[str, dict[str, list[str]], str, dict[str, str]]] = [
    ("default", {"allow": ["Bash(npm run test:*)"]}, "bash", {"command": "npm run test -- -x"}),
    ("default", {"allow": ["Bash(npm run test:*)"]}, "bash", {"command": "npm run build"}),
    ("default", {"allow": ["Bash(npm run test:*)"]}, "bash", {"command": "npm run test; rm -rf /tmp/not-there"}),
    ("auto", {"deny": ["Read(./secrets/**)"]}, "read", {"file_path": "secrets/key.pem"}),
    ("auto", {"deny": ["Read(./secrets/**)"]}, "read", {"file_path": "public/readme.md"}),
    ("default", {"allow": ["Edit(/src/**)"]}, "write", {"file_path": "src/app/main.py"}),
    ("default", {"allow": ["Edit(/src/**)"]}, "write", {"file_path": "lib/main.py"}),
    ("auto", {"deny": ["Edit(*.lock)"]}, "write", {"file_path": "deep/down/poetry.lock"}),
    ("auto", {"deny": ["Read(//etc/**)"]}, "read", {"file_path": "/etc/hostname"}),
    ("auto", {"deny": ["Bash(git push:*)"], "allow": ["Bash(git:*)"]}, "bash", {"command": "git push"}),
    ("auto", {"ask": ["Bash(git push:*)"], "allow": ["Bash(git push:*)"]}, "bash", {"command": "git push"}),
    ("bypassPermissions", {"ask": ["Bash(git push:*)"]}, "bash", {"command": "git push -f"}),
    ("auto", {"ask": ["Edit"]}, "write", {"file_path": "x"}),
]


def _project(home: Path, rules: dict[str, list[str]]) -> Path:
    """A project whose settings hold `rules`, trusted as Claude Code's trust dialog would leave it (an untrusted
    workspace's allow rules are ignored by Claude Code, as a repository's are by us until approved)."""
    work = home / "work"
    for directory in ("secrets", "public", "src/app", "lib", "deep/down", ".claude"):
        (work / directory).mkdir(parents=True, exist_ok=True)
    (work / "secrets" / "key.pem").write_text("key\n")
    (work / "public" / "readme.md").write_text("readme\n")
    (work / ".claude" / "settings.json").write_text(json.dumps({"permissions": rules}))
    (home / ".claude.json").write_text(json.dumps({"projects": {str(work): {"hasTrustDialogAccepted": True}}}))
    return work


def _claude_runs(home: Path, work: Path, mode: str, tool: str, arguments: dict[str, str]) -> bool:
    """Whether Claude Code, under `-p`, runs the call (it is not among its permission denials)."""
    sent: dict[str, Any] = {
        k: v if k != "file_path" or v.startswith("/") else str(work / v) for k, v in arguments.items()
    }
    if tool == "write":
        sent["content"] = "written\n"
    call = tool_use(CLAUDE_TOOL[tool], sent, id="toolu_parity")
    with FakeAnthropic([reply(call)] + [reply("done")] * 10, auto_usage=True) as fake:
        env = claude_env(home, fake) | {"IS_SANDBOX": "1"}  # Claude Code refuses bypassPermissions as root without it
        argv = [str(CLAUDE), "-p", "go", "--output-format", "json", "--model", "claude-sonnet-4-6"]
        done = subprocess.run(
            [*argv, "--permission-mode", AS_CLAUDE[mode]],
            env=env,
            cwd=work,
            capture_output=True,
            text=True,
            timeout=bounded(120),
        )
    assert done.returncode == 0, done.stderr[-2000:]
    answered = answers_to(fake, call["id"])
    assert answered, "Claude Code never answered the call: the case proves nothing"
    denials = json.loads(done.stdout).get("permission_denials") or []
    return not any(denial.get("tool_use_id") == call["id"] for denial in denials)


@needs_claude
@pytest.mark.parametrize(("mode", "rules", "tool", "arguments"), CASES)
def test_a_call_runs_under_our_rules_exactly_when_it_runs_under_claude_codes(
    tmp_path: Path, mode: str, rules: dict[str, list[str]], tool: str, arguments: dict[str, str]
) -> None:
    work = _project(tmp_path, rules)
    ours = decide(policy(work, mode, **rules), tool, **arguments)
    assert (ours == "runs") == _claude_runs(tmp_path, work, mode, tool, arguments), f"ours: {ours}"
