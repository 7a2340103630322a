"""The real Python SDK's hook callbacks drive the real `sprout-agent` process against the fake API, as the SDK
repository's own e2e tests (e2e-tests/test_hooks.py) and examples/hooks.py use them: a PreToolUse deny with
reason and systemMessage, PostToolUse additionalContext and `continue_: False` with stopReason, UserPromptSubmit
context, and can_use_tool's updated_input. The rules are tested in-process (test_sdk_hooks.py).

Skipped when the SDK is not installed (.ci/run installs it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from sprout_agent.core.tool_names import sdk_tool_name
from tests.bounds import bounded
from tests.fake_anthropic import FakeAnthropic, reply, tool_use
from tests.harness import assert_history_valid, result_text, tool_results
from tests.test_sdk_e2e import run_typescript, sdk_options

pytestmark = pytest.mark.e2e
BASH, WRITE = sdk_tool_name("dev", "bash"), sdk_tool_name("dev", "write")


@pytest.mark.anyio
@pytest.mark.filterwarnings("ignore:can_use_tool will not be invoked")  # Bash is allowed on purpose: hooks gate it
@pytest.mark.slow
async def test_python_sdk_hook_callbacks_deny_add_context_and_stop_and_can_use_tool_changes_a_write(
    tmp_path: Path,
) -> None:
    """One client, two prompts (one process: a start costs seconds): the first's Bash call is denied by a
    PreToolUse callback and its Write changed by can_use_tool; the second's Bash call gets PostToolUse context and
    a `continue_: False` that ends the turn without an error."""
    sdk = pytest.importorskip("claude_agent_sdk")
    invoked: list[str] = []

    async def guard(data: Any, tool_use_id: str | None, context: Any) -> Any:
        invoked.append(f"guard {data['tool_name']}")
        if "blocked" in data["tool_input"]["command"]:  # the SDK repository's test_hook_with_permission_decision…
            return {
                "reason": "Bash commands are blocked in this test for safety",
                "systemMessage": "Command blocked by hook",
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "deny",
                    "permissionDecisionReason": "Security policy: Bash blocked",
                },
            }
        return {}

    async def color(data: Any, tool_use_id: str | None, context: Any) -> Any:
        return {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "hot pink"}}

    async def context_hook(data: Any, tool_use_id: str | None, context: Any) -> Any:
        invoked.append(f"context {tool_use_id}")  # its test_hook_with_additional_context
        return {
            "systemMessage": "Additional context provided by hook",
            "suppressOutput": False,
            "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "executed with monitoring"},
        }

    async def stop_hook(data: Any, tool_use_id: str | None, context: Any) -> Any:
        if "test message" not in data["tool_input"]["command"]:
            return {"continue_": True}
        invoked.append(f"stop {data['tool_name']}")  # its test_hook_with_continue_and_stop_reason
        return {"continue_": False, "stopReason": "Execution halted by test hook for validation"}

    async def can_use_tool(name: str, args: dict[str, Any], context: Any) -> Any:
        return sdk.PermissionResultAllow(updated_input={**args, "file_path": "safe.txt"})

    hooks = {
        "PreToolUse": [sdk.HookMatcher(matcher=BASH, hooks=[guard])],
        "PostToolUse": [sdk.HookMatcher(matcher=BASH, hooks=[context_hook, stop_hook], timeout=30)],
        "UserPromptSubmit": [sdk.HookMatcher(matcher=None, hooks=[color])],
    }
    calls = [
        tool_use("dev__bash", {"command": "echo blocked"}, id="t_bash"),
        tool_use("dev__write", {"file_path": "risky.txt", "content": "x"}, id="t_write"),
    ]
    script = [
        reply(*calls),
        reply("done"),
        reply(tool_use("dev__bash", {"command": "echo 'test message'"}, id="t_echo")),
        reply("never asked"),
    ]
    with FakeAnthropic(script) as fake:
        options = sdk_options(tmp_path, fake, hooks=hooks, can_use_tool=can_use_tool, allowed_tools=[BASH])
        with anyio.fail_after(bounded(60)):
            async with sdk.ClaudeSDKClient(options=options) as client:
                await client.query("Run this bash command: echo blocked")
                first = [m async for m in client.receive_response()]
                await client.query("Run: echo 'test message'")
                second = [m async for m in client.receive_response()]
    assert invoked == [f"guard {BASH}", f"guard {BASH}", "context t_echo", f"stop {BASH}"]  # the matcher: Bash only
    done, stopped = first[-1], second[-1]
    assert isinstance(done, sdk.ResultMessage) and done.result == "done" and not done.is_error
    assert {"hook": "_UserPromptSubmit", "server": "sdk", "text": "hot pink"} in [
        json.loads(result_text(r)) for r in tool_results(fake.requests[0].body)
    ]
    bash, write = tool_results(fake.requests[1].body)[-2:]  # after the prompt hook's pair
    assert not write.get("is_error")
    assert bash["is_error"] and "Security policy: Bash blocked" in result_text(bash)
    assert (tmp_path / "work" / "safe.txt").read_text() == "x" and not (tmp_path / "work" / "risky.txt").exists()
    ran = [b for m in fake.requests[1].body["messages"] for b in m["content"] if b["type"] == "tool_use"]
    assert ran[-1]["input"] == {"file_path": "safe.txt", "content": "x"}  # the history shows the call as it ran
    assert isinstance(stopped, sdk.ResultMessage) and not stopped.is_error and stopped.stop_reason == "hook_stopped"
    assert len(fake.requests) == 3  # the hook stopped the turn: the model is not asked after the echo
    for request in fake.requests:
        assert_history_valid(request.body)


TS_HOOKS_SCRIPT = """
import { query } from "@anthropic-ai/claude-agent-sdk";
const called = [];
const deny = async (input) => {
  called.push(`${input.hook_event_name} ${input.tool_name}`);
  return { hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "deny",
    permissionDecisionReason: "not from ts" } };
};
const note = async (input) => {
  called.push(`${input.hook_event_name} ${input.tool_name}`);
  return { hookSpecificOutput: { hookEventName: "PostToolUse", additionalContext: "noted by ts" } };
};
const messages = [];
for await (const message of query({
  prompt: "run it",
  options: {
    pathToClaudeCodeExecutable: process.env.SPROUT_WRAPPER,
    cwd: process.env.SPROUT_WORK,
    env: JSON.parse(process.env.SPROUT_ENV),
    allowedTools: [process.env.SPROUT_BASH, process.env.SPROUT_WRITE],
    hooks: {
      PreToolUse: [{ matcher: process.env.SPROUT_WRITE, hooks: [deny], onFailure: "block" }],
      PostToolUse: [{ matcher: process.env.SPROUT_BASH, hooks: [note], timeout: 30 }],
    },
  },
})) messages.push(message);
console.log(JSON.stringify({ called, last: messages.at(-1) }));
"""


def test_typescript_sdk_hook_callbacks_deny_a_write_and_note_a_bash_call_with_on_failure_block_accepted(
    tmp_path: Path,
) -> None:
    """The TypeScript SDK refuses a session whose `onFailure: "block"` matcher the CLI does not honour: ours
    says it does, and its callbacks run."""
    calls = [
        tool_use("dev__bash", {"command": "echo from-ts"}, id="t_bash"),
        tool_use("dev__write", {"file_path": "t.txt", "content": "x"}, id="t_write"),
    ]
    with FakeAnthropic([reply(*calls), reply("ts done")]) as fake:
        names = {"SPROUT_BASH": BASH, "SPROUT_WRITE": WRITE}
        report = run_typescript(tmp_path, fake, TS_HOOKS_SCRIPT, "sprout-sdk-hooks-check", **names)
    assert sorted(report["called"]) == [f"PostToolUse {BASH}", f"PreToolUse {WRITE}"]
    assert report["last"]["type"] == "result" and report["last"]["result"] == "ts done"
    bash, write = tool_results(fake.requests[1].body)
    assert "from-ts" in result_text(bash) and "noted by ts" in result_text(bash)
    assert write["is_error"] and "not from ts" in result_text(write) and not (tmp_path / "work" / "t.txt").exists()
