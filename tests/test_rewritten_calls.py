"""A rewrite is a new call: an input that a PreToolUse callback or the permission answer (an SDK's `can_use_tool`)
gives a call is decided again by every rule, through the one path every call takes (ToolRound, then the policy),
then runs through the same tool, write policy and sandbox; a refused one never runs and `permission_denials`
lists the input that was refused. In-process: the loop with a scripted model, and the headless face driven
through its real control protocol by tests/fake_sdk.py with the real dev server."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from sprout_agent.config.options import Options
from sprout_agent.core.claude_rules import translate
from sprout_agent.core.events import ToolFinished
from sprout_agent.core.hooks.program_callbacks import CallbackAnswer
from sprout_agent.core.messages import ToolUse
from sprout_agent.core.permission_mode import PermissionMode
from sprout_agent.core.permissions import Decision, Policy
from sprout_agent.core.protocols import ToolSpec
from tests.fake_anthropic import FakeAnthropic, reply, tool_use
from tests.fake_sdk import FakeSdk, Json, run_with_sdk
from tests.harness import result_text, tool_results
from tests.loop_doubles import Loop, MemoryHost, build_loop, call, echo, server, tool
from tests.loop_doubles import reply as model_reply

DEV = {"SPROUT_AGENT_BUILTIN_SERVERS": "dev", "SPROUT_AGENT_SANDBOX": "off"}
NO_RM = translate(["Bash(rm:*)"], deny=True).patterns  # --disallowedTools 'Bash(rm:*)'
RM: dict[str, object] = {"command": "rm -f victim.txt"}


class Person:
    """Answers every question "once" with `rewrite` as the input (None: as asked); keeps what it was asked."""

    def __init__(self, rewrite: dict[str, object] | None) -> None:
        self.rewrite = rewrite
        self.asked: list[dict[str, object]] = []

    async def __call__(self, spec: ToolSpec, use: ToolUse, *, outside_sandbox: str | None = None) -> Decision:
        self.asked.append(dict(use.input))
        return Decision("once", updated_input=self.rewrite)


class Callbacks:
    """A `HookCallbacks` whose PreToolUse answer is given; other events are not registered."""

    def __init__(self, answer: CallbackAnswer) -> None:
        self.answer = answer

    def wants(self, event: str, subject: str | None = None) -> bool:
        return event == "PreToolUse"

    async def run(
        self, event: str, fields: Mapping[str, object], subject: str | None = None, tool_use_id: str | None = None
    ) -> list[CallbackAnswer]:
        return [self.answer]


async def bash_turn(policy: Policy, hook: CallbackAnswer | None = None, command: str = "echo harmless") -> Loop:
    """One turn in which the model runs `command` through a dev__bash that echoes its command."""
    host = MemoryHost({"dev": server(bash=tool(echo("command"), properties={"command": {"type": "string"}}))})
    script = [model_reply(call("dev__bash", "t1", command=command)), model_reply("done")]
    loop = build_loop(script, host=host, permit=policy)
    if hook is not None:
        loop.hooks.callbacks = Callbacks(hook)
    await loop.turn()
    return loop


def finished(loop: Loop) -> ToolFinished:
    (event,) = loop.of(ToolFinished)
    return event


@pytest.mark.anyio
async def test_a_permission_answers_rewrite_to_a_denied_command_is_refused_and_never_runs() -> None:
    person = Person(RM)
    loop = await bash_turn(Policy(PermissionMode.ASK, deny=NO_RM, ask=person))
    assert loop.host.calls_of("bash") == []  # type: ignore[attr-defined]
    assert person.asked == [{"command": "echo harmless"}]
    is_error, text = loop.results(-2)["t1"]
    assert is_error and "denied by a dev__bash(…) rule" in text
    event = finished(loop)
    assert event.denied and event.denied_input == RM


@pytest.mark.anyio
async def test_a_hook_callbacks_rewrite_to_a_denied_command_is_refused_through_the_same_rules() -> None:
    for permission in ("allow", None):  # an allow skips the question, never the deny rules
        person = Person(None)
        hook = CallbackAnswer(permission=permission, updated_input=dict(RM))  # type: ignore[arg-type]
        loop = await bash_turn(Policy(PermissionMode.ASK, deny=NO_RM, ask=person), hook)
        assert loop.host.calls_of("bash") == [] and person.asked == []  # type: ignore[attr-defined]
        event = finished(loop)
        assert event.denied and event.denied_input == RM


@pytest.mark.anyio
async def test_a_rewrite_the_rules_would_ask_about_runs_on_the_answer_that_gave_it_and_nobody_is_asked_twice() -> None:
    changed: dict[str, object] = {"command": "echo changed"}
    person = Person(changed)
    loop = await bash_turn(Policy(PermissionMode.ASK, deny=NO_RM, ask=person))
    (ran,) = loop.host.calls_of("bash")  # type: ignore[attr-defined]
    assert ran.arguments == changed and person.asked == [{"command": "echo harmless"}]  # one question, no loop
    assert loop.results(-2)["t1"] == (False, "echo changed") and not finished(loop).denied


@pytest.mark.anyio
async def test_a_hook_rewrite_is_judged_as_the_call_it_now_is_an_allowed_one_runs_unasked_another_is_asked() -> None:
    policy = Policy(
        PermissionMode.ASK, allow=translate(["Bash(echo:*)"], deny=False).patterns, ask=(person := Person(None))
    )
    loop = await bash_turn(policy, CallbackAnswer(updated_input={"command": "echo fine"}), command="ls")
    assert person.asked == [] and loop.results(-2)["t1"] == (False, "echo fine")
    loop = await bash_turn(policy, CallbackAnswer(updated_input={"command": "ls"}), command="echo harmless")
    assert person.asked == [{"command": "ls"}] and loop.results(-2)["t1"] == (False, "ls")


# ---------------------------------------------------------------- through the SDK's control protocol


def sdk_session(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    calls: list[Json],
    answer: Json,
    hooks: Json | None = None,
) -> tuple[list[Json], FakeAnthropic, Json]:
    """A `--disallowedTools 'Bash(rm:*)'` session whose can_use_tool (and PreToolUse callback `h`, if `hooks`)
    answers `answer`; (the control requests seen, the fake API, the result line)."""
    seen: list[Json] = []

    def play(sdk: FakeSdk) -> None:
        if hooks is not None:
            assert sdk.control("init", "initialize", hooks=hooks)["subtype"] == "success"
        sdk.user("go")
        while (line := sdk.expect(lambda r: r.get("type") in ("control_request", "result")))["type"] != "result":
            seen.append(line["request"])
            sdk.answer(line, answer)

    (tmp_path / "work").mkdir(exist_ok=True)
    (tmp_path / "work" / "victim.txt").write_text("keep me")
    options = Options(prompt=None, permission_prompt_tool="stdio", deny_tools=NO_RM, claude_rules=True)
    with FakeAnthropic([reply(*calls), reply("done")]) as fake:
        code, sdk, err = run_with_sdk(tmp_path, monkeypatch, play, fake=fake, env=DEV, options=options)
    assert code == 0, err
    (result,) = [line for line in sdk.seen if line.get("type") == "result"]
    return seen, fake, result


@pytest.mark.e2e
def test_a_can_use_tool_rewrite_to_a_disallowed_command_is_refused_and_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    echo_call = tool_use("dev__bash", {"command": "echo harmless"}, id="t1")
    seen, fake, result = sdk_session(tmp_path, monkeypatch, [echo_call], {"behavior": "allow", "updatedInput": RM})
    assert [(r["subtype"], r["input"]) for r in seen] == [("can_use_tool", {"command": "echo harmless"})]
    assert (tmp_path / "work" / "victim.txt").read_text() == "keep me"
    (refused,) = tool_results(fake.requests[1].body)
    assert refused["is_error"] and "denied by a dev__bash(…) rule" in result_text(refused)
    assert result["permission_denials"] == [{"tool_name": "Bash", "tool_use_id": "t1", "tool_input": RM}]


@pytest.mark.e2e
def test_a_hook_callback_rewrite_to_a_disallowed_command_is_refused_and_recorded_as_rewritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hooks = {"PreToolUse": [{"matcher": None, "hookCallbackIds": ["h"]}]}
    rewrite = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow", "updatedInput": RM}}
    echo_call = tool_use("dev__bash", {"command": "echo harmless"}, id="t1")
    seen, _, result = sdk_session(tmp_path, monkeypatch, [echo_call], rewrite, hooks)
    assert [r["subtype"] for r in seen] == ["hook_callback"]
    assert (tmp_path / "work" / "victim.txt").read_text() == "keep me"
    assert result["permission_denials"] == [{"tool_name": "Bash", "tool_use_id": "t1", "tool_input": RM}]


@pytest.mark.e2e
def test_a_can_use_tool_rewrite_is_held_to_the_write_policy_of_the_tool_that_runs_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "work" / ".git").mkdir(parents=True)
    hook_file = {"file_path": ".git/hooks/post-checkout", "content": "#!/bin/sh\ntouch pwned\n"}
    write = tool_use("dev__write", {"file_path": "notes.txt", "content": "x"}, id="t1")
    seen, fake, _ = sdk_session(tmp_path, monkeypatch, [write], {"behavior": "allow", "updatedInput": hook_file})
    assert len(seen) == 1 and not (tmp_path / "work" / ".git" / "hooks" / "post-checkout").exists()
    assert not (tmp_path / "work" / "notes.txt").exists()
    (refused,) = tool_results(fake.requests[1].body)
    assert refused["is_error"] and ".git" in result_text(refused)
