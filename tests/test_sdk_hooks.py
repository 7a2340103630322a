"""The SDKs' hook callbacks, in-process through the real headless face (tests/fake_sdk.py plays the SDK on a real
pipe, tests/fake_anthropic.py the API): `initialize` registers them, `hook_callback` requests call them at our hook
points, and their answers (deny, allow, ask, updatedInput, additionalContext, block, continue: false) do what
Claude Code does with them. Every request the fake API gets is checked against the API's rules."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sprout_agent.config.options import Options
from sprout_agent.core.permission_mode import PermissionMode
from sprout_agent.core.tool_names import sdk_tool_name
from tests.fake_anthropic import FakeAnthropic, reply, tool_use
from tests.fake_sdk import FakeSdk, Json, mentions, run_with_sdk
from tests.harness import assert_history_valid, result_text, tool_results

DEV = {"SPROUT_AGENT_BUILTIN_SERVERS": "dev", "SPROUT_AGENT_SANDBOX": "off"}
ASKED = Options(prompt=None, permission_prompt_tool="stdio")  # the mode becomes ask: can_use_tool is asked
WRITE = sdk_tool_name("dev", "write")  # the name callbacks and matchers see (Claude Code's, where it has one)
Callback = Callable[[Json], Json | None]  # None: the SDK never answers


def hooks_of(**events: list[tuple[str | None, list[str]]] | list[Json]) -> Json:
    """`initialize.hooks` as the SDKs send it: {event: [{matcher, hookCallbackIds, …}]}."""
    return {
        event: [m if isinstance(m, dict) else {"matcher": m[0], "hookCallbackIds": m[1]} for m in matchers]
        for event, matchers in events.items()
    }


def pre_tool(**fields: Any) -> Json:
    return {"hookEventName": "PreToolUse", **fields}


def serve(sdk: FakeSdk, callbacks: dict[str, Callback], until: Callable[[Json], bool], seen: list[Json]) -> Json:
    """Answers hook_callback (by callback_id) and can_use_tool (`callbacks["can_use_tool"]`) requests as the SDK
    would, keeping each request in `seen`, until a line `until` accepts; returns that line."""
    while True:
        line = sdk.expect(lambda r: r.get("type") == "control_request" or until(r))
        if line.get("type") != "control_request":
            return line
        request = line["request"]
        seen.append(request)
        key = request["callback_id"] if request["subtype"] == "hook_callback" else request["subtype"]
        if (answer := callbacks[key](request)) is not None:
            sdk.answer(line, answer)


def session(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    hooks: Json,
    callbacks: dict[str, Callback],
    script: list[Any],
    prompts: tuple[str, ...] = ("go",),
    options: Options | None = None,
) -> tuple[int, list[Json], FakeAnthropic, FakeSdk, list[Json]]:
    """A session initialized with `hooks`, each prompt served to its result; (exit code, requests seen, the fake
    API, the fake SDK, the result lines)."""
    seen: list[Json] = []
    results: list[Json] = []

    def play(sdk: FakeSdk) -> None:
        init = sdk.control("init", "initialize", hooks=hooks)
        assert init["subtype"] == "success", init
        assert init["response"]["hooks_applied"] is True and init["response"]["hook_on_failure_supported"] is True
        for prompt in prompts:
            sdk.user(prompt)
            results.append(serve(sdk, callbacks, lambda r: r.get("type") == "result", seen))

    with FakeAnthropic(script) as fake:
        code, sdk, err = run_with_sdk(tmp_path, monkeypatch, play, fake=fake, env=DEV, options=options)
    assert code == 0, err
    for request in fake.requests:
        assert_history_valid(request.body)
    return code, seen, fake, sdk, results


def inputs(seen: list[Json], event: str) -> list[Json]:
    return [r["input"] for r in seen if r["subtype"] == "hook_callback" and r["input"]["hook_event_name"] == event]


def test_initialize_refuses_an_event_without_a_hook_point_a_bad_matcher_and_a_bad_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answers: list[Json] = []
    refused = [
        hooks_of(PermissionRequest=[(None, ["h"])]),  # a guard we would never call: refused, not dropped
        hooks_of(PreToolUse=[("Bash(", ["h"])]),
        hooks_of(PreToolUse=[{"matcher": None, "hookCallbackIds": ["h"], "timeout": -1}]),
        hooks_of(PreToolUse=[{"matcher": None, "hookCallbackIds": "h"}]),
    ]

    def script(sdk: FakeSdk) -> None:
        for index, hooks in enumerate(refused):
            answers.append(sdk.control(f"bad{index}", "initialize", hooks=hooks))
        answers.append(sdk.control("ok", "initialize", hooks=hooks_of(SubagentStart=[(None, ["h"])])))

    with FakeAnthropic([]) as fake:
        run_with_sdk(tmp_path, monkeypatch, script, fake=fake)
    assert [a["subtype"] for a in answers] == ["error"] * 4 + ["success"]
    assert "no 'PermissionRequest' hook point" in answers[0]["error"]
    assert "not a regular expression" in answers[1]["error"]
    assert "timeout" in answers[2]["error"] and "hookCallbackIds" in answers[3]["error"]


@pytest.mark.e2e
def test_pre_tool_use_deny_refuses_the_call_with_its_reason_and_only_matching_callbacks_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    deny = {"hookSpecificOutput": pre_tool(permissionDecision="deny", permissionDecisionReason="no writes")}
    hooks = hooks_of(PreToolUse=[(WRITE, ["deny"]), ("Nope|Other", ["never"]), ("^mcp__.*|Write$", ["any"])])
    callbacks: dict[str, Callback] = {"deny": lambda _: deny, "never": lambda _: {}, "any": lambda _: {}}
    script = [reply(tool_use("dev__write", {"file_path": "a.txt", "content": "x"}, id="t1")), reply("ok")]
    _, seen, fake, sdk, _ = session(tmp_path, monkeypatch, hooks, callbacks, script)
    assert sorted(r["callback_id"] for r in seen) == ["any", "deny"]
    (first, _) = inputs(seen, "PreToolUse")
    assert first["tool_name"] == WRITE and first["tool_input"] == {"file_path": "a.txt", "content": "x"}
    assert first["tool_use_id"] == "t1" and first["cwd"] == str((tmp_path / "work").resolve())
    assert {"session_id", "transcript_path", "permission_mode"} <= first.keys()
    assert seen[0]["tool_use_id"] == "t1"
    (result,) = tool_results(fake.requests[1].body)
    assert result["is_error"] and "denied by a PreToolUse hook: no writes" in result_text(result)
    assert not (tmp_path / "work" / "a.txt").exists()
    final = sdk.seen[-1]
    assert [d["tool_use_id"] for d in final["permission_denials"]] == ["t1"]


@pytest.mark.e2e
def test_pre_tool_use_allow_skips_the_question_and_its_updated_input_runs_and_is_what_the_history_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    changed = {"file_path": "b.txt", "content": "changed"}
    allow = {"hookSpecificOutput": pre_tool(permissionDecision="allow", updatedInput=changed)}
    script = [reply(tool_use("dev__write", {"file_path": "a.txt", "content": "x"}, id="t1")), reply("ok")]
    hooks = hooks_of(PreToolUse=[(None, ["allow"])])
    _, seen, fake, sdk, _ = session(tmp_path, monkeypatch, hooks, {"allow": lambda _: allow}, script, options=ASKED)
    assert [r["subtype"] for r in seen] == ["hook_callback"]  # allowed: can_use_tool was not asked
    assert (tmp_path / "work" / "b.txt").read_text() == "changed" and not (tmp_path / "work" / "a.txt").exists()
    (call,) = [b for m in fake.requests[1].body["messages"] for b in m["content"] if b["type"] == "tool_use"]
    assert call == {"type": "tool_use", "id": "t1", "name": "dev__write", "input": changed}
    assert any(r.get("subtype") == "tool_input_updated" and r["arguments"] == changed for r in sdk.seen)


@pytest.mark.e2e
def test_pre_tool_use_ask_asks_can_use_tool_even_in_bypass_mode_and_can_use_tool_may_change_the_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ask = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask"}}
    changed = {"file_path": "c.txt", "content": "from the callback"}
    callbacks: dict[str, Callback] = {
        "ask": lambda _: ask,
        "can_use_tool": lambda _: {"behavior": "allow", "updatedInput": changed},
    }
    options = Options(prompt=None, permission_prompt_tool="stdio", permission_mode=PermissionMode.BYPASS_PERMISSIONS)
    script = [reply(tool_use("dev__write", {"file_path": "a.txt", "content": "x"}, id="t1")), reply("ok")]
    hooks = hooks_of(PreToolUse=[(None, ["ask"])])
    _, seen, fake, _, _ = session(tmp_path, monkeypatch, hooks, callbacks, script, options=options)
    assert [r["subtype"] for r in seen] == ["hook_callback", "can_use_tool"]
    assert (tmp_path / "work" / "c.txt").read_text() == "from the callback"
    (call,) = [b for m in fake.requests[1].body["messages"] for b in m["content"] if b["type"] == "tool_use"]
    assert call["input"] == changed


@pytest.mark.e2e
def test_post_tool_use_sees_the_response_and_its_context_reaches_the_model_inside_the_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    context = {"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "lint: clean"}}
    hooks = hooks_of(PostToolUse=[(sdk_tool_name("dev", "bash"), ["post"])])
    script = [reply(tool_use("dev__bash", {"command": "echo hi"}, id="t1")), reply("ok")]
    _, seen, fake, _, _ = session(tmp_path, monkeypatch, hooks, {"post": lambda _: context}, script)
    (post,) = inputs(seen, "PostToolUse")
    assert post["tool_use_id"] == "t1" and "hi" in json.dumps(post["tool_response"])
    (result,) = tool_results(fake.requests[1].body)
    blocks = [json.loads(b["text"]) for b in result["content"] if b["text"].startswith("{")]
    assert blocks == [{"hook": "_PostToolUse", "server": "sdk", "text": "lint: clean"}]


@pytest.mark.e2e
def test_continue_false_ends_the_turn_after_the_batch_with_success_and_the_session_takes_the_next_prompt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stop = {"continue": False, "stopReason": "halted by policy", "systemMessage": "stopping"}
    hooks = hooks_of(PostToolUse=[(None, ["stop"])])
    script = [reply(tool_use("dev__bash", {"command": "echo hi"})), reply("second answer")]
    _, _, fake, sdk, results = session(
        tmp_path, monkeypatch, hooks, {"stop": lambda _: stop}, script, prompts=("first", "second")
    )
    assert [r["stop_reason"] for r in results] == ["hook_stopped", "end_turn"]
    assert [r["subtype"] for r in results] == ["success", "success"] and not results[0]["is_error"]
    assert len(fake.requests) == 2  # no model request after the stopped batch
    assert any(mentions("halted by policy")(r) for r in sdk.seen)


def test_user_prompt_submit_context_follows_the_prompt_and_a_block_keeps_the_prompt_out_of_the_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def on_prompt(request: Json) -> Json:
        if "secret" in request["input"]["prompt"]:
            return {"decision": "block", "reason": "no secrets"}
        return {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "color: pink"}}

    hooks = hooks_of(UserPromptSubmit=[(None, ["p"])], SessionStart=[("startup", ["s"])])
    start = {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "branch main"}}
    callbacks: dict[str, Callback] = {"p": on_prompt, "s": lambda _: start}
    _, seen, fake, _, results = session(
        tmp_path, monkeypatch, hooks, callbacks, [reply("pink")], prompts=("the secret", "my color?")
    )
    assert results[0]["stop_reason"] == "hook_stopped" and len(fake.requests) == 1
    messages = fake.requests[0].body["messages"]
    assert "secret" not in json.dumps(messages)
    texts = [json.loads(result_text(r)) for r in tool_results(fake.requests[0].body)]
    assert texts == [
        {"hook": "_SessionStart", "server": "sdk", "text": "branch main"},
        {"hook": "_UserPromptSubmit", "server": "sdk", "text": "color: pink"},
    ]
    assert [i["source"] for i in inputs(seen, "SessionStart")] == ["startup"]


@pytest.mark.e2e
def test_stop_block_makes_the_model_go_on_and_stop_hook_active_says_so_the_next_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def on_stop(request: Json) -> Json:
        return {} if request["input"]["stop_hook_active"] else {"decision": "block", "reason": "run the tests"}

    hooks = hooks_of(Stop=[(None, ["stop"])])
    script = [reply("done"), reply(tool_use("dev__bash", {"command": "true"})), reply("tested")]
    _, seen, fake, _, results = session(tmp_path, monkeypatch, hooks, {"stop": on_stop}, script)
    assert [i["stop_hook_active"] for i in inputs(seen, "Stop")] == [False, True]
    assert inputs(seen, "Stop")[0]["last_assistant_message"] == "done"
    assert results[0]["result"] == "tested" and len(fake.requests) == 3
    assert {"hook": "_Stop", "server": "sdk", "text": "run the tests"} in [
        json.loads(result_text(r)) for r in tool_results(fake.requests[1].body)
    ]


@pytest.mark.e2e
def test_a_failed_or_late_callback_is_no_objection_unless_its_matcher_says_on_failure_block(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def wrong(_: Json) -> Json:
        return {"hookSpecificOutput": pre_tool(permissionDecision="Deny")}  # Claude Code rejects it: a failure

    def lone_surrogate(_: Json) -> Json:
        return {"hookSpecificOutput": pre_tool(updatedInput={"command": "echo \ud800"})}  # the API would refuse it

    hooks = hooks_of(
        PreToolUse=[
            {"matcher": None, "hookCallbackIds": ["lenient", "surrogate"]},
            {"matcher": "Nothing|" + WRITE, "hookCallbackIds": ["strict"], "onFailure": "block"},
            {"matcher": sdk_tool_name("dev", "bash"), "hookCallbackIds": ["late"], "timeout": 0.5},
        ]
    )
    calls = [
        tool_use("dev__bash", {"command": "echo ran"}, id="t_bash"),
        tool_use("dev__write", {"file_path": "a.txt", "content": "x"}, id="t_write"),
    ]
    callbacks: dict[str, Callback] = {
        "lenient": wrong,
        "strict": wrong,
        "surrogate": lone_surrogate,
        "late": lambda _: None,
    }
    _, _, fake, sdk, _ = session(tmp_path, monkeypatch, hooks, callbacks, [reply(*calls), reply("ok")])
    bash, write = tool_results(fake.requests[1].body)
    assert "ran" in result_text(bash) and not bash.get("is_error")
    assert write["is_error"] and "hook callback failed" in result_text(write)
    assert not (tmp_path / "work" / "a.txt").exists()
    notices = [r for r in sdk.seen if r.get("subtype") == "notice"]
    for reason in ("permissionDecision must be allow, deny or ask", "valid Unicode", "within 0.5 s"):
        assert any(reason in r["text"] for r in notices), reason


def test_pre_tool_use_ask_in_plan_mode_never_lets_can_use_tool_allow_a_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attack B: a hook's "ask" asks more, never less. In plan (read-only) mode a write tool is refused outright;
    a PreToolUse callback answering "ask" must not turn that refusal into a question a sloppy can_use_tool allows."""
    ask = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask"}}
    callbacks: dict[str, Callback] = {"ask": lambda _: ask, "can_use_tool": lambda _: {"behavior": "allow"}}
    options = Options(prompt=None, permission_prompt_tool="stdio", permission_mode=PermissionMode.PLAN)
    script = [reply(tool_use("dev__write", {"file_path": "planted.txt", "content": "x"}, id="t1")), reply("ok")]
    _, seen, fake, sdk, _ = session(
        tmp_path, monkeypatch, hooks_of(PreToolUse=[(None, ["ask"])]), callbacks, script, options=options
    )
    assert [r["subtype"] for r in seen] == ["hook_callback"]  # refused by the mode: nobody is asked
    assert not (tmp_path / "work" / "planted.txt").exists()
    (result,) = tool_results(fake.requests[1].body)
    assert result["is_error"] and "read-only" in result_text(result)
    assert [d["tool_use_id"] for d in sdk.seen[-1]["permission_denials"]] == ["t1"]
