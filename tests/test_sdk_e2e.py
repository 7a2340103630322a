"""The real Claude Agent SDKs (Python `claude-agent-sdk`, TypeScript `@anthropic-ai/claude-agent-sdk`) drive the
real `sprout-agent` process against the fake API: what only their own clients show (their spawn, their parsing
of our lines, their control protocol). The control rules themselves are tested in-process (test_sdk_control.py).

Skipped when an SDK is not installed (.ci/run installs both).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

from sprout_agent.trust.sandbox import probe as sandbox_probe
from tests.bounds import bounded
from tests.fake_anthropic import FakeAnthropic, model_info, reply, tool_use
from tests.harness import ROOT, agent_env, result_text, tool_results

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
DEV = {"SPROUT_AGENT_BUILTIN_SERVERS": "dev", "SPROUT_AGENT_SANDBOX": "off", "CLAUDE_AGENT_SDK_SKIP_VERSION_CHECK": "1"}
TS_SDK = ROOT / ".ci/peers/node_modules/@anthropic-ai/claude-agent-sdk"


def wrapper(tmp_path: Path) -> Path:
    """The SDKs start an executable: this one runs our CLI with the test's interpreter."""
    path = tmp_path / "sprout-agent"
    path.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m sprout_agent "$@"\n')
    path.chmod(0o755)
    return path


def sdk_options(tmp_path: Path, fake: FakeAnthropic, **more: Any) -> Any:
    sdk = pytest.importorskip("claude_agent_sdk")
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return sdk.ClaudeAgentOptions(
        cli_path=str(wrapper(tmp_path)), env=agent_env(tmp_path, fake, DEV), cwd=str(work), **more
    )


@pytest.mark.anyio
async def test_python_query_runs_an_allowed_tool_call_and_denies_the_rest_in_permission_denials(tmp_path: Path) -> None:
    """allowed_tools and no permission_mode, as claude-code-action restricts the agent: what no rule allows is
    denied and listed, as Claude Code does with nobody to ask (it ran before)."""
    sdk = pytest.importorskip("claude_agent_sdk")
    write = {"file_path": "x.txt", "content": "x"}
    script = [
        reply(
            tool_use("dev__bash", {"command": "echo from-the-tool"}, id="t_echo"),
            tool_use("dev__write", write, id="t_write"),
            tool_use("dev__bash", {"command": "echo x > y.txt"}, id="t_redirect"),
        ),
        reply("all done"),
    ]
    with FakeAnthropic(script) as fake:
        options = sdk_options(tmp_path, fake, allowed_tools=["Bash(echo:*)"])
        with anyio.fail_after(bounded(60)):
            messages = [m async for m in sdk.query(prompt="run it", options=options)]
    uses = [b for m in messages if isinstance(m, sdk.AssistantMessage) for b in m.content]
    assert any(isinstance(b, sdk.ToolUseBlock) for b in uses)
    result = messages[-1]
    assert isinstance(result, sdk.ResultMessage) and result.result == "all done" and not result.is_error
    denials = result.permission_denials or []
    assert [(d["tool_name"], d["tool_use_id"]) for d in denials] == [
        ("Write", "t_write"),
        ("Bash", "t_redirect"),
    ]
    assert denials[0]["tool_input"] == write
    results = tool_results(fake.requests[1].body)
    assert "from-the-tool" in result_text(results[0]) and "not approved" in result_text(results[1])
    assert not (tmp_path / "work" / "x.txt").exists() and not (tmp_path / "work" / "y.txt").exists()


@pytest.mark.anyio
async def test_python_query_without_permission_options_no_longer_runs_a_shell_command(tmp_path: Path) -> None:
    """The SDK names no mode and no rule: Claude Code's default mode, told by the variable the SDK sets."""
    sdk = pytest.importorskip("claude_agent_sdk")
    script = [reply(tool_use("dev__bash", {"command": "touch made"}, id="t_touch")), reply("could not")]
    with FakeAnthropic(script) as fake:
        with anyio.fail_after(bounded(60)):
            messages = [m async for m in sdk.query(prompt="run it", options=sdk_options(tmp_path, fake))]
    init = next(m for m in messages if isinstance(m, sdk.SystemMessage) and m.subtype == "init")
    assert init.data["permissionMode"] == "default"
    result = messages[-1]
    assert isinstance(result, sdk.ResultMessage) and [d["tool_use_id"] for d in result.permission_denials or []] == [
        "t_touch"
    ]
    assert not (tmp_path / "work" / "made").exists()


@pytest.mark.anyio
async def test_python_client_two_prompts_an_interrupt_mid_tool_and_a_denied_call(tmp_path: Path) -> None:
    sdk = pytest.importorskip("claude_agent_sdk")
    asked: list[str] = []
    bash_allowed = anyio.Event()

    async def can_use_tool(name: str, args: dict[str, Any], context: Any) -> Any:
        asked.append(name)
        if name == "Bash":
            bash_allowed.set()
        if name == "Write":
            return sdk.PermissionResultDeny(message="no writes today")
        return sdk.PermissionResultAllow()

    script = [
        reply(tool_use("dev__bash", {"command": "sleep 60"})),
        reply(tool_use("dev__write", {"file_path": "x.txt", "content": "x"})),
        reply("second done"),
    ]
    with FakeAnthropic(script) as fake:
        options = sdk_options(tmp_path, fake, can_use_tool=can_use_tool)
        with anyio.fail_after(bounded(90)):
            async with sdk.ClaudeSDKClient(options) as client:
                await client.query("first")
                await bash_allowed.wait()  # the call is past its permission question: the interrupt finds it running
                await client.interrupt()
                first = [m async for m in client.receive_response()]
                await client.query("second")
                second = [m async for m in client.receive_response()]
    assert any(isinstance(b, sdk.ToolUseBlock) for m in first if isinstance(m, sdk.AssistantMessage) for b in m.content)
    assert isinstance(first[-1], sdk.ResultMessage) and first[-1].is_error
    assert isinstance(second[-1], sdk.ResultMessage) and second[-1].result == "second done"
    assert asked == ["Bash", "Write"]
    assert "interrupted" in result_text(tool_results(fake.requests[1].body)[0])
    assert "no writes today" in result_text(tool_results(fake.requests[2].body)[-1])
    assert not (tmp_path / "work" / "x.txt").exists()


@pytest.mark.anyio
@pytest.mark.skipif(sandbox_probe() is not None, reason="no bubblewrap sandbox here")
async def test_python_can_use_tool_neither_rewrites_past_disallowed_tools_nor_lets_a_plain_allow_leave_the_sandbox(
    tmp_path: Path,
) -> None:
    """The Python SDK sends a plain `PermissionResultAllow()` as an allow whose updatedInput is the input it was
    given: to the re-run request that keeps the command in the sandbox. A rewrite to a disallowed command is
    refused and `permission_denials` lists it as rewritten."""
    sdk = pytest.importorskip("claude_agent_sdk")
    outside = Path(f"/etc/sprout-e2e-{uuid.uuid4().hex[:8]}")
    asked: list[tuple[dict[str, Any], str | None]] = []

    async def can_use_tool(name: str, args: dict[str, Any], context: Any) -> Any:
        asked.append((dict(args), context.decision_reason))
        if args.get("command") == "echo harmless":
            return sdk.PermissionResultAllow(updated_input={"command": "rm -f victim.txt"})
        return sdk.PermissionResultAllow()  # allow everything, as a callback written for the happy path does

    script = [
        reply(
            tool_use("dev__bash", {"command": "echo harmless"}, id="t_rm"),
            tool_use("dev__bash", {"command": f"touch {outside}"}, id="t_out"),
        ),
        reply("done"),
    ]
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "victim.txt").write_text("keep me")
    try:
        with FakeAnthropic(script) as fake:
            options = sdk_options(tmp_path, fake, can_use_tool=can_use_tool, disallowed_tools=["Bash(rm:*)"])
            options.env["SPROUT_AGENT_SANDBOX"] = "workspace-write"
            with anyio.fail_after(bounded(90)):
                async with sdk.ClaudeSDKClient(options) as client:
                    await client.query("go")
                    messages = [m async for m in client.receive_response()]
        assert not outside.exists()
    finally:
        outside.unlink(missing_ok=True)
    assert (tmp_path / "work" / "victim.txt").read_text() == "keep me"
    result = messages[-1]
    assert isinstance(result, sdk.ResultMessage) and result.result == "done"
    assert [(d["tool_use_id"], d["tool_input"]) for d in result.permission_denials or []] == [
        ("t_rm", {"command": "rm -f victim.txt"})
    ]
    rerun = [(args, why) for args, why in asked if why is not None]
    assert rerun == [({"command": f"touch {outside}", "dangerouslyDisableSandbox": False}, rerun[0][1])]
    assert "sandbox: write outside" in str(rerun[0][1]) and len(asked) == 3
    texts = {r["tool_use_id"]: result_text(r) for r in tool_results(fake.requests[1].body)}
    assert "denied by a dev__bash" in texts["t_rm"] and "sandbox: write outside" in texts["t_out"]


@pytest.mark.anyio
async def test_python_sdk_in_process_mcp_tool(tmp_path: Path) -> None:
    sdk = pytest.importorskip("claude_agent_sdk")

    @sdk.tool("add", "Adds two numbers", {"a": int, "b": int})
    async def add(args: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": f"sum is {args['a'] + args['b']}"}]}

    server = sdk.create_sdk_mcp_server("calculator", tools=[add])  # mounted as "calc": the key names it
    script = [reply(tool_use("calc__add", {"a": 2, "b": 3})), reply("five")]
    with FakeAnthropic(script) as fake:
        options = sdk_options(tmp_path, fake, mcp_servers={"calc": server}, allowed_tools=["mcp__calc__add"])
        with anyio.fail_after(bounded(60)):
            messages = [m async for m in sdk.query(prompt="add", options=options)]
    assert isinstance(messages[-1], sdk.ResultMessage) and messages[-1].result == "five"
    assert result_text(tool_results(fake.requests[1].body)[0]) == "sum is 5"


@pytest.mark.anyio
async def test_python_query_with_output_format_gets_the_structured_answer_after_tool_calls(tmp_path: Path) -> None:
    """`output_format` (`--json-schema`): a shell call first, then the StructuredOutput call, whose input arrives as
    `structured_output` (anthropics/claude-code#36033 reports it lost after tool calls). The model supports the
    API's structured outputs here, so the tool goes strict; the fake refuses a strict schema the API would."""
    sdk = pytest.importorskip("claude_agent_sdk")
    schema = {
        "type": "object",
        "properties": {
            "files": {"type": "integer", "minimum": 0},
            "names": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["files", "names"],
    }
    script = [
        reply("Counting.", tool_use("dev__bash", {"command": "echo 2"}, id="t_count")),
        reply(tool_use("StructuredOutput", {"files": -1, "names": []}, id="t_bad")),
        reply(tool_use("StructuredOutput", {"files": 2, "names": ["a", "b"]}, id="t_out")),
    ]
    with FakeAnthropic(script, models=[model_info("claude-test", structured_outputs=True)]) as fake:
        options = sdk_options(
            tmp_path,
            fake,
            model="claude-test",
            permission_mode="bypassPermissions",
            output_format={"type": "json_schema", "schema": schema},
        )
        with anyio.fail_after(bounded(60)):
            messages = [m async for m in sdk.query(prompt="count the files", options=options)]
    result = messages[-1]
    assert isinstance(result, sdk.ResultMessage) and result.subtype == "success" and not result.is_error
    assert result.structured_output == {"files": 2, "names": ["a", "b"]}
    assert json.loads(result.result or "") == result.structured_output
    assert fake.refused == []
    (offered,) = [t for t in fake.requests[0].body["tools"] if t["name"] == "StructuredOutput"]
    assert offered["strict"] is True and offered["input_schema"]["additionalProperties"] is False
    assert "2" in result_text(tool_results(fake.requests[1].body)[0])
    refused = tool_results(fake.requests[2].body)[-1]
    assert refused["is_error"] and "/files: -1 is less than the minimum of 0" in result_text(refused)
    uses = [
        b.name
        for m in messages
        if isinstance(m, sdk.AssistantMessage)
        for b in m.content
        if isinstance(b, sdk.ToolUseBlock)
    ]
    assert uses[1:] == ["StructuredOutput", "StructuredOutput"]  # Claude Code's name, as its SDKs expect


TS_SCRIPT = """
import { query, createSdkMcpServer, tool } from "@anthropic-ai/claude-agent-sdk";
import { z } from "zod";
const asked = [];
const messages = [];
const added = [];
// Mounted under another key than its name, as the SDK's own calculator example does; the TypeScript SDK names
// its in-process servers only in the initialize request.
const calc = createSdkMcpServer({
  name: "calculator",
  tools: [tool("add", "Add two numbers", { a: z.number(), b: z.number() }, async ({ a, b }) => {
    added.push([a, b]);
    return { content: [{ type: "text", text: `sum is ${a + b}` }] };
  })],
});
for await (const message of query({
  prompt: "run it",
  options: {
    pathToClaudeCodeExecutable: process.env.SPROUT_WRAPPER,
    cwd: process.env.SPROUT_WORK,
    env: JSON.parse(process.env.SPROUT_ENV),
    mcpServers: { calc },
    canUseTool: async (name, input) => {
      asked.push(name);
      return name === "Write"
        ? { behavior: "deny", message: "no writes from ts" }
        : { behavior: "allow", updatedInput: input };
    },
  },
})) messages.push(message);
const init = messages.find((m) => m.type === "system" && m.subtype === "init");
const types = messages.map((m) => m.type);
console.log(JSON.stringify({ asked, added, tools: init.tools, types, last: messages.at(-1) }));
"""


def run_typescript(tmp_path: Path, fake: FakeAnthropic, script: str, name: str, **env: str) -> Any:
    """Runs a TypeScript SDK script (`name`.mjs beside the package, so it resolves it) against sprout-agent in
    tmp_path/work; returns the JSON its last stdout line reports. `env`: more variables for the script."""
    node = shutil.which("node")
    if node is None or not TS_SDK.exists():
        pytest.skip("node or @anthropic-ai/claude-agent-sdk is not installed (.ci/run installs it into .ci/peers)")
    # Beside the package, so node resolves it; a name of its own, since .ci/peers is shared by concurrent runs.
    script_path = TS_SDK.parent.parent.parent / f"{name}-{uuid.uuid4().hex}.mjs"
    script_path.write_text(script)
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    env = {
        "PATH": agent_env(tmp_path, fake)["PATH"],
        "SPROUT_WRAPPER": str(wrapper(tmp_path)),
        "SPROUT_WORK": str(work),
        "SPROUT_ENV": json.dumps(agent_env(tmp_path, fake, DEV)),
        **env,
    }
    try:
        done = subprocess.run([node, str(script_path)], env=env, capture_output=True, text=True, timeout=bounded(90))
    finally:
        script_path.unlink(missing_ok=True)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_typescript_query_with_a_tool_call_and_a_denied_call(tmp_path: Path) -> None:
    steps = [
        reply(
            tool_use("dev__bash", {"command": "echo from-ts"}),
            tool_use("dev__write", {"file_path": "t.txt"}),
            tool_use("calc__add", {"a": 15, "b": 27}),
        ),
        reply("ts done"),
    ]
    with FakeAnthropic(steps) as fake:
        report = run_typescript(tmp_path, fake, TS_SCRIPT, "sprout-sdk-check")
    assert report["asked"] == ["Bash", "Write", "mcp__calc__add"]
    assert "mcp__calc__add" in report["tools"] and report["added"] == [[15, 27]]
    assert report["last"]["type"] == "result" and report["last"]["result"] == "ts done"
    results = [result_text(r) for r in tool_results(fake.requests[1].body)]
    assert results[0].startswith("from-ts") and "no writes from ts" in results[1] and results[2] == "sum is 42"


TS_STRUCTURED = """
import { query } from "@anthropic-ai/claude-agent-sdk";
const messages = [];
for await (const message of query({
  prompt: "count",
  options: {
    pathToClaudeCodeExecutable: process.env.SPROUT_WRAPPER,
    cwd: process.env.SPROUT_WORK,
    env: JSON.parse(process.env.SPROUT_ENV),
    model: "claude-test",
    permissionMode: "bypassPermissions",
    outputFormat: { type: "json_schema", schema: JSON.parse(process.env.SPROUT_SCHEMA) },
  },
})) messages.push(message);
console.log(JSON.stringify({ last: messages.at(-1) }));
"""


def test_typescript_query_with_output_format_gets_structured_output(tmp_path: Path) -> None:
    """`outputFormat`: the TypeScript SDK passes the schema as --json-schema and again in `initialize`."""
    schema = {"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]}
    steps = [
        reply(tool_use("dev__bash", {"command": "echo 3"}, id="t_count")),
        reply(tool_use("StructuredOutput", {"count": 3}, id="t_out")),
    ]
    with FakeAnthropic(steps, models=[model_info("claude-test", structured_outputs=True)]) as fake:
        report = run_typescript(
            tmp_path, fake, TS_STRUCTURED, "sprout-sdk-structured", SPROUT_SCHEMA=json.dumps(schema)
        )
    last = report["last"]
    assert last["type"] == "result" and last["subtype"] == "success", last
    assert last["structured_output"] == {"count": 3} and fake.refused == []


@pytest.mark.anyio
async def test_python_client_rewinds_files_to_a_user_message_a_shell_commands_file_included(tmp_path: Path) -> None:
    """enable_file_checkpointing and rewind_files, as the SDK's documentation shows them: the replayed user
    message's uuid names the point; a file made by a command goes too (Claude Code covers only its edit tools).
    A dry run answers in Claude Code's shape; without the option the request fails as Claude Code's does."""
    sdk = pytest.importorskip("claude_agent_sdk")
    work = tmp_path / "work"
    work.mkdir()
    (work / "app.py").write_text("v1\n")
    script = [
        reply(tool_use("dev__read", {"file_path": "app.py"}, id="t_read")),
        reply(tool_use("dev__write", {"file_path": "app.py", "content": "v2\n"}, id="t_v2")),
        reply("first done"),
        reply(tool_use("dev__bash", {"command": "echo made > gen.txt"}, id="t_gen")),
        reply(tool_use("dev__write", {"file_path": "app.py", "content": "v3\n"}, id="t_v3")),
        reply("second done"),
    ]

    def prompt_uuid(messages: list[Any]) -> str:
        echoed = [m for m in messages if isinstance(m, sdk.UserMessage) and m.uuid and not m.parent_tool_use_id]
        return next(m.uuid for m in echoed if any(isinstance(b, sdk.TextBlock) for b in m.content))

    with FakeAnthropic(script) as fake:
        replay = {"replay-user-messages": None}
        more = {"enable_file_checkpointing": True, "extra_args": replay, "permission_mode": "bypassPermissions"}
        options = sdk_options(tmp_path, fake, **more)
        with anyio.fail_after(bounded(90)):
            async with sdk.ClaudeSDKClient(options) as client:
                await client.query("make it v2")
                first = prompt_uuid([m async for m in client.receive_response()])
                await client.query("generate, then v3")
                second = prompt_uuid([m async for m in client.receive_response()])
                assert (work / "app.py").read_text() == "v3\n" and (work / "gen.txt").exists()
                preview = await client._query._send_control_request(  # pyright: ignore[reportPrivateUsage]
                    {"subtype": "rewind_files", "user_message_id": second, "dry_run": True}
                )
                assert (work / "app.py").read_text() == "v3\n"  # a dry run changes nothing
                await client.rewind_files(second)
                assert (work / "app.py").read_text() == "v2\n" and not (work / "gen.txt").exists()
                await client.rewind_files(first)
                assert (work / "app.py").read_text() == "v1\n"
                with pytest.raises(Exception, match="No file checkpoint found"):
                    await client.rewind_files(str(uuid.uuid4()))
    assert preview["canRewind"] is True and preview["conflicts"] == []
    assert sorted(preview["filesChanged"]) == [str((work / "app.py").resolve()), str((work / "gen.txt").resolve())]
    assert (preview["insertions"], preview["deletions"]) == (1, 2)
