"""Escalation: in ask mode a person may re-run a command the OS sandbox stopped outside it (once, or always
for the session); the model cannot ask for it, other servers' marks are not offered, headless never asks.
The loop runs the real in-process dev server with real bwrap."""

from __future__ import annotations

import io
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest
from rich.console import Console

from sprout_agent.config.options import Options
from sprout_agent.core.events import Event
from sprout_agent.core.messages import ToolUse
from sprout_agent.core.permission_mode import PermissionMode
from sprout_agent.core.permissions import Decision, Policy
from sprout_agent.core.protocols import ToolSpec
from sprout_agent.faces.acp.session_template import AcpSetup
from sprout_agent.faces.terminal.ask import question
from sprout_agent.trust import sandbox as _sandbox
from tests import fake_anthropic as fa
from tests.acp_pipes import new_session, pipe_agent, prompt_line, session_env
from tests.bounds import bounded
from tests.fake_sdk import FakeSdk, Json, run_with_sdk
from tests.harness import Terminal, agent_command, agent_env, call_tool, result_text, tool_results
from tests.loop_doubles import build_loop, builtin_pool, call, reply

pytestmark = pytest.mark.anyio
needs_bwrap = pytest.mark.skipif(_sandbox.probe() is not None, reason=f"no sandbox here: {_sandbox.probe()}")
BASH = ToolSpec("dev__bash", "dev", "bash", "", {}, read_only=False)


@pytest.fixture
def outside() -> Iterator[Path]:
    """A path anyone may write unsandboxed but the sandbox refuses: in a directory made under /var/tmp, outside the
    working directory (under /tmp, where bubblewrap's private /tmp would take the write) and every writable root."""
    if not os.access("/var/tmp", os.W_OK | os.X_OK):
        pytest.skip("no writable /var/tmp: no path here that this user may write outside the sandbox's roots")
    parent = Path(tempfile.mkdtemp(prefix="sprout-escalation-", dir="/var/tmp"))
    try:
        yield parent / "made"
    finally:
        shutil.rmtree(parent, ignore_errors=True)


class ScriptedPerson:
    """Answers the questions in order and remembers what was asked."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.asked: list[tuple[str, str | None]] = []

    async def __call__(self, spec: ToolSpec, use: ToolUse, *, outside_sandbox: str | None = None) -> Decision:
        self.asked.append((str(use.input["command"]), outside_sandbox))
        kind = self.answers.pop(0)
        assert kind in ("once", "always", "deny")
        # A person's yes to the re-run question is the answer that says "outside the sandbox" (the faces' choices).
        return Decision(kind, outside_sandbox=outside_sandbox is not None)  # type: ignore[arg-type]


async def run(
    tmp_path: Path, person: ScriptedPerson, *commands: str, mode: PermissionMode = PermissionMode.ASK
) -> list[str]:
    """One turn calling dev__bash with each command in turn; the results' texts."""
    script = [reply(call("dev__bash", f"t{i}", command=command)) for i, command in enumerate(commands)]
    policy = Policy(mode, allow=["dev__bash"], ask=person, sandboxed=[("dev", "bash")])
    events: list[Event] = []
    with anyio.fail_after(bounded(60)):
        async with builtin_pool(tmp_path, events, ("dev",)) as pool:
            loop = build_loop([*script, reply("done")], host=pool, permit=policy, escalate=policy.escalate)
            await loop.turn()
    return [loop.results(-2 * (len(commands) - i))[f"t{i}"][1] for i in range(len(commands))]


@needs_bwrap
@pytest.mark.e2e
async def test_a_write_the_sandbox_stopped_runs_again_outside_it_once_the_person_says_yes(
    tmp_path: Path, outside: Path
) -> None:
    person = ScriptedPerson("once", "deny")
    second = outside.with_name(outside.name + "-2")
    try:
        texts = await run(tmp_path, person, f"touch {outside} && echo made", f"touch {second}")
        assert not second.exists()
    finally:
        second.unlink(missing_ok=True)
    assert outside.exists() and "made" in texts[0]
    assert texts[0].startswith("[the OS sandbox stopped the first run (sandbox: write outside the writable roots")
    assert "the user approved running it again outside the sandbox" in texts[0]
    # Declined: the model gets the sandboxed result, which says what stopped it.
    assert "sandbox: write outside the writable roots denied" in texts[1] and "approved" not in texts[1]
    assert [why is not None and why.startswith("sandbox: write outside") for _, why in person.asked] == [True, True]


@needs_bwrap
@pytest.mark.e2e
async def test_always_re_runs_that_exact_command_without_asking_and_asks_about_any_other(
    tmp_path: Path, outside: Path
) -> None:
    second = outside.with_name(outside.name + "-2")
    person = ScriptedPerson("always", "deny")
    again = f"rm -f {outside} && touch {outside}"
    try:
        texts = await run(tmp_path, person, again, again, f"touch {second}")
        assert outside.exists() and not second.exists()
    finally:
        second.unlink(missing_ok=True)
    assert [command for command, _ in person.asked] == [again, f"touch {second}"]
    assert ["approved running it again" in text for text in texts] == [True, True, False]


@needs_bwrap
@pytest.mark.e2e
async def test_auto_mode_never_escalates_and_a_command_that_succeeds_is_never_asked_about(
    tmp_path: Path, outside: Path
) -> None:
    person = ScriptedPerson()
    texts = await run(tmp_path, person, f"touch {outside}", mode=PermissionMode.AUTO)
    assert not outside.exists() and "sandbox: write outside" in texts[0]
    assert await run(tmp_path, person, "echo fine") == ["fine\n[exit code: 0]"]
    assert person.asked == []


async def test_only_a_person_in_ask_mode_and_only_our_sandboxed_tool_can_escalate() -> None:
    use = ToolUse("t1", "dev__bash", {"command": "touch /etc/x"})
    other = ToolSpec("other__bash", "other", "bash", "", {})  # a server that marks its results the same way
    person = ScriptedPerson("once", "once")
    assert not await Policy(PermissionMode.ASK, ask=None, sandboxed=[("dev", "bash")]).escalate(BASH, use, "sandbox: …")
    assert not await Policy(PermissionMode.AUTO, ask=person, sandboxed=[("dev", "bash")]).escalate(
        BASH, use, "sandbox: …"
    )
    assert not await Policy(PermissionMode.ASK, ask=person, sandboxed=[("dev", "bash")]).escalate(
        other, use, "sandbox: …"
    )
    assert not await Policy(PermissionMode.ASK, ask=person).escalate(BASH, use, "sandbox: …")  # no working sandbox
    assert person.asked == []
    assert await Policy(PermissionMode.ASK, ask=person, sandboxed=[("dev", "bash")]).escalate(BASH, use, "sandbox: …")


async def test_a_plain_yes_or_one_that_changes_the_call_is_no_answer_to_the_re_run_question() -> None:
    use = ToolUse("t1", "dev__bash", {"command": "touch /etc/x"})
    answers = iter(
        [
            Decision("once"),  # an allow that does not say "outside the sandbox"
            Decision("always"),  # nor this: and nothing is remembered
            Decision("once", updated_input={"command": "touch /etc/y"}, outside_sandbox=True),  # another call
            Decision("once", outside_sandbox=True),
        ]
    )

    async def answer(spec: ToolSpec, use: ToolUse, *, outside_sandbox: str | None = None) -> Decision:
        assert outside_sandbox == "sandbox: …"
        return next(answers)

    policy = Policy(PermissionMode.ASK, ask=answer, sandboxed=[("dev", "bash")])
    assert [await policy.escalate(BASH, use, "sandbox: …") for _ in range(4)] == [False, False, False, True]
    assert policy.always_outside_sandbox == set()


@pytest.mark.e2e
@needs_bwrap
@pytest.mark.slow
def test_a_persons_yes_in_the_terminal_to_the_re_run_question_runs_it_outside_the_sandbox(
    tmp_path: Path, outside: Path
) -> None:
    script = [
        fa.reply(fa.tool_use("dev__bash", {"command": f"touch {outside} && echo made"}, "t1")),
        fa.reply("all finished here"),
    ]
    with fa.FakeAnthropic(script) as fake:
        args = agent_command(["--permission-mode", "ask", "--allow-tools", "dev__bash"])
        term = Terminal(args, agent_env(tmp_path, fake, {"SPROUT_AGENT_BUILTIN_SERVERS": "dev"}), tmp_path)
        try:
            term.expect("›")
            term.send("go\r")
            term.wait_until(
                lambda: "(Esc: no) ›" in term.screen().rpartition("OUTSIDE the sandbox?")[2], "the question"
            )
            term.send("y")
            term.expect("all finished here")
            term.send("/exit\r")
        finally:
            code = term.close()
    assert code == 0, term.screen()[-2000:]
    assert outside.exists() and "approved running it again" in result_text(tool_results(fake.requests[1].body)[0])


@needs_bwrap
@pytest.mark.e2e
async def test_the_model_cannot_ask_the_dev_server_to_run_outside_the_sandbox(tmp_path: Path, outside: Path) -> None:
    from mcp import Client

    from sprout_agent.tools import dev

    async with Client(dev.create_server_in(str(tmp_path), {})) as client:
        error, text = await call_tool(
            client, "bash", command=f"touch {outside}", **{"sprout-agent/outside-sandbox": True, "_meta": {}}
        )
        assert error and "unknown argument(s) for bash" in text
        with anyio.fail_after(bounded(60)):
            result = await client.call_tool("bash", {"command": f"touch {outside}"})
        assert (result.meta or {}).get("sprout-agent/sandbox-denied", "").startswith("sandbox: write outside")
    assert not outside.exists() and os.path.exists(tmp_path)


async def acp_re_run(
    tmp_path: Path, command: str, picked: str, monkeypatch: pytest.MonkeyPatch
) -> tuple[Json, fa.FakeAnthropic]:
    """A `dev__bash` call the sandbox stops, in an ACP session in ask mode whose editor picks `picked` when asked
    to run it outside: the permission question and the fake API (its requests)."""
    script = [fa.reply(fa.tool_use("dev__bash", {"command": command}, "toolu_1")), fa.reply("ok")]
    with fa.FakeAnthropic(script) as fake:
        session_env(monkeypatch, fake)
        monkeypatch.setenv("SPROUT_AGENT_BUILTIN_SERVERS", "dev")
        options = AcpSetup(Options(permission_mode=PermissionMode.ASK, allow_tools=("dev__bash",)))
        async with pipe_agent(options) as client:
            await client.request(1, "initialize", {"protocolVersion": 1})
            session_id = await new_session(client, tmp_path)
            await client.send(prompt_line(2, session_id, "make it"))
            question = await client.question("session/request_permission")
            await client.send(json.dumps({"jsonrpc": "2.0", "id": question["id"], "result": {"outcome": {
                "outcome": "selected", "optionId": picked}}}))  # fmt: skip
            assert (await client.answer(2, timeout=60))["result"]["stopReason"] == "end_turn"
    return question, fake


@needs_bwrap
@pytest.mark.e2e
async def test_an_acp_editor_is_asked_to_run_it_outside_the_sandbox_and_the_model_sees_the_second_run(
    tmp_path: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    command = f"touch {outside} && echo made"
    question, fake = await acp_re_run(tmp_path, command, "outside_sandbox_once", monkeypatch)
    params = question["params"]
    assert params["toolCall"]["title"] == f"Outside the sandbox: {command}"  # the command itself
    (reason,) = params["toolCall"]["content"]
    assert reason["content"]["text"].startswith("Failed in the sandbox; its output reads as: sandbox: write outside")
    assert [o["optionId"] for o in params["options"]] == [
        "outside_sandbox_once",
        "outside_sandbox_always",
        "keep_sandboxed",
    ]
    assert outside.exists()
    (result,) = tool_results(fake.requests[1].body)
    assert "made" in result_text(result) and "approved running it again" in result_text(result)


@needs_bwrap
@pytest.mark.e2e
async def test_an_acp_editor_answering_the_re_run_question_with_the_ordinary_allow_id_keeps_it_in_the_sandbox(
    tmp_path: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    question, _ = await acp_re_run(tmp_path, f"touch {outside}", "allow_once", monkeypatch)
    assert question["params"]["toolCall"]["title"].startswith("Outside the sandbox: ")
    assert not outside.exists()


@needs_bwrap
@pytest.mark.e2e
async def test_the_question_about_a_git_write_the_sandbox_stopped_names_the_flag_that_allows_it(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()  # the workspace's git directory: read-only to sandboxed commands
    person = ScriptedPerson("deny")
    (text,) = await run(tmp_path, person, "touch .git/index.lock")
    ((_, why),) = person.asked
    assert why is not None and "the git directory is read-only" in why and "--sandbox-allow-write .git" in why
    assert "--sandbox-allow-write .git" in text and not (tmp_path / ".git" / "index.lock").exists()
    shown = Console(width=400, file=io.StringIO(), record=True)
    shown.print(question(BASH, {"command": "touch .git/index.lock"}, str(tmp_path), why))
    assert "--sandbox-allow-write .git" in shown.export_text()  # as the person reads it, not cut


# ---------------------------------------------------------------- an SDK's can_use_tool: the re-run is its own request


def sdk_rerun(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    commands: dict[str, str],
    rerun: Callable[[Json], Json],
    first: Callable[[Json], Json] = lambda r: {"behavior": "allow", "updatedInput": r["input"]},
) -> tuple[list[Json], FakeSdk, list[str]]:
    """An SDK session (ask mode, the real sandbox) whose can_use_tool answers each call's question `first(request)`
    (by default a plain allow as the Python SDK sends it: the input echoed as updatedInput) and each re-run request
    `rerun(request)`; (the requests, the fake SDK, the tool results' texts by call)."""
    requests: list[Json] = []

    def play(sdk: FakeSdk) -> None:
        sdk.user("go")
        while (line := sdk.expect(lambda r: r.get("type") in ("control_request", "result")))["type"] != "result":
            request = line["request"]
            requests.append(request)
            sdk.answer(line, rerun(request) if "decision_reason" in request else first(request))

    calls = [fa.tool_use("dev__bash", {"command": command}, id) for id, command in commands.items()]
    options = Options(prompt=None, permission_prompt_tool="stdio")
    with fa.FakeAnthropic([fa.reply(*calls), fa.reply("done")]) as fake:
        env = {"SPROUT_AGENT_BUILTIN_SERVERS": "dev"}
        code, sdk, err = run_with_sdk(tmp_path, monkeypatch, play, fake=fake, env=env, options=options)
    assert code == 0, err
    return requests, sdk, [result_text(r) for r in tool_results(fake.requests[1].body)]


@needs_bwrap
@pytest.mark.e2e
def test_a_plain_allow_to_the_sandbox_re_run_request_keeps_the_command_in_the_sandbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, outside: Path
) -> None:
    second = outside.with_name(outside.name + "-2")
    commands = {"t1": f"touch {outside}", "t2": f"touch {second}"}
    try:  # t1 answered as the Python SDK sends a plain allow (the input echoed), t2 as the TypeScript SDK does
        plain = {
            "t1": lambda r: {"behavior": "allow", "updatedInput": r["input"]},
            "t2": lambda r: {"behavior": "allow"},
        }
        requests, sdk, texts = sdk_rerun(tmp_path, monkeypatch, commands, lambda r: plain[r["tool_use_id"]](r))
        assert not outside.exists() and not second.exists()
    finally:
        second.unlink(missing_ok=True)
    reruns = [r for r in requests if "decision_reason" in r]
    assert sorted(r["tool_use_id"] for r in reruns) == ["t1", "t2"] and len(requests) == 4
    for request in reruns:
        assert request["input"] == {"command": commands[request["tool_use_id"]], "dangerouslyDisableSandbox": False}
        assert "sandbox: write outside" in request["decision_reason"] and request["tool_name"] == "Bash"
    assert all("sandbox: write outside" in text and "approved" not in text for text in texts)
    notices = [line["text"] for line in sdk.seen if line.get("subtype") == "notice"]
    assert any("kept call t1 in the sandbox" in text and "dangerouslyDisableSandbox: true" in text for text in notices)


@needs_bwrap
@pytest.mark.e2e
def test_an_allow_that_sets_dangerously_disable_sandbox_runs_the_command_outside_it_and_only_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, outside: Path
) -> None:
    other = outside.with_name(outside.name + "-other")
    commands = {"t1": f"touch {outside} && echo made", "t2": f"touch {outside}-2"}
    explicit = {  # t1: the input as sent, the flag set; t2: the flag set, and the command changed too
        "t1": lambda r: {**r["input"], "dangerouslyDisableSandbox": True},
        "t2": lambda r: {"command": f"touch {other}", "dangerouslyDisableSandbox": True},
    }
    try:
        requests, _, texts = sdk_rerun(
            tmp_path,
            monkeypatch,
            commands,
            lambda r: {"behavior": "allow", "updatedInput": explicit[r["tool_use_id"]](r)},
        )
        assert outside.exists() and not other.exists() and not Path(f"{outside}-2").exists()
    finally:
        other.unlink(missing_ok=True)
        Path(f"{outside}-2").unlink(missing_ok=True)
    assert len(requests) == 4
    assert "made" in texts[0] and "the user approved running it again outside the sandbox" in texts[0]
    assert "sandbox: write outside" in texts[1] and "approved" not in texts[1]


@needs_bwrap
@pytest.mark.e2e
def test_a_first_answer_that_sets_dangerously_disable_sandbox_runs_nothing_outside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, outside: Path
) -> None:
    """Claude Code runs a Bash call unsandboxed when its input says so; here the flag means something only in the
    answer to the re-run request: in the first answer it is a rewrite, a new call dev__bash refuses."""
    flagged = {"behavior": "allow", "updatedInput": {"command": f"touch {outside}", "dangerouslyDisableSandbox": True}}
    requests, _, (text,) = sdk_rerun(
        tmp_path, monkeypatch, {"t1": f"touch {outside}"}, lambda r: {"behavior": "deny"}, lambda r: flagged
    )
    assert not outside.exists() and len(requests) == 1
    assert "unknown argument(s) for bash" in text
