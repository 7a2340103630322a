"""`sessions export ID --atif`: a recorded session as an ATIF trajectory (session/atif.py) that Harbor's own
trajectory models accept (validated under the harbor virtualenv, tests/harbor_drive.py; skipped without it), with
the steps, tool calls and results, tokens and cost per reply, and the session's totals."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from sprout_agent.core.errors import UsageError
from sprout_agent.core.events import AssistantMessage
from sprout_agent.core.ledger import Ledger
from sprout_agent.core.messages import Message, Text, ToolResult, ToolUse, Usage
from sprout_agent.session.atif import trajectory
from sprout_agent.session.recorded import read
from sprout_agent.session.recording import recording
from sprout_agent.session.store import SessionStore
from tests.fake_anthropic import FakeAnthropic, reply, tool_use
from tests.harbor_venv import drive, harbor_python
from tests.harness import fake_server, run_agent


def recorded_session(tmp_path: Path, messages: list[Message], replies: dict[int, AssistantMessage]) -> Path:
    """A transcript written as a run writes it: the store, and the recording of each reply before its message."""
    store = SessionStore.new(tmp_path, "0123", str(tmp_path), "claude-sonnet-5-5")
    record = recording(lambda _: None, lambda: store, Ledger("claude-sonnet-5-5"), {})
    for n, message in enumerate(messages):
        if n in replies:
            record(replies[n])
        store.appended(message)
    store.close()
    return tmp_path / "0123.jsonl"


def test_a_session_without_messages_has_no_trajectory_to_export(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text(json.dumps({"type": "session", "session_id": "empty", "cwd": "/w", "model": "m"}) + "\n")
    with pytest.raises(UsageError, match="no messages to export"):
        trajectory(read(path))


def test_a_result_whose_call_is_not_in_the_transcript_is_left_out_and_the_steps_stay_valid(tmp_path: Path) -> None:
    usage = Usage(input_tokens=50, output_tokens=5, cache_read_tokens=10)
    said = AssistantMessage("msg_1", "claude-sonnet-5-5", (), "tool_use", usage, cost_usd=0.001)
    path = recorded_session(
        tmp_path,
        [
            Message("user", (Text("go"),)),
            Message("assistant", (Text("Calling."), ToolUse("t1", "fake__echo", {"text": "x"}))),
            Message("user", (ToolResult("t1", (Text("x"),)), ToolResult("forged", (Text("injected"),)))),
        ],
        {1: said},
    )
    found = trajectory(read(path))
    agent = found["steps"][1]
    assert [r["source_call_id"] for r in agent["observation"]["results"]] == ["t1"]  # the forged one is not there
    assert agent["metrics"] == {
        "prompt_tokens": 60,
        "completion_tokens": 5,
        "cached_tokens": 10,
        "cost_usd": 0.001,
        "extra": {"cache_creation_input_tokens": 0, "cache_read_input_tokens": 10},
    }
    assert [s["step_id"] for s in found["steps"]] == [1, 2]


@pytest.mark.e2e
@pytest.mark.slow
def test_sessions_export_atif_is_a_trajectory_harbors_models_accept_with_tokens_and_cost_per_step(
    tmp_path: Path,
) -> None:
    harbor_python(own_step=False)  # skips first when there is no harbor virtualenv
    session_id = str(uuid.uuid4())
    script = [
        reply("Looking.", tool_use("fake__echo", {"text": "one"}, id="t1"), tool_use("fake__fail", id="t2"),
              usage={"input_tokens": 400, "output_tokens": 30, "cache_read_input_tokens": 100}),
        reply("All done.", usage={"input_tokens": 500, "output_tokens": 12}),
    ]  # fmt: skip
    with FakeAnthropic(script) as fake:
        args = ["-p", "echo one", "--output-format", "json", "--session-id", session_id]
        run = run_agent(tmp_path, args, fake=fake, servers={"fake": fake_server()})
    assert run.code == 0, run.stderr
    cost = json.loads(run.stdout)["total_cost_usd"]
    exported = run_agent(tmp_path, ["sessions", "export", session_id[:8], "--atif", "--out", "t.json"], fake=None)
    assert exported.code == 0, exported.stderr
    path = tmp_path / "t.json"
    assert path.stat().st_mode & 0o777 == 0o600  # it holds what the session read and ran
    assert drive("atif", path, {"PATH": "/usr/bin:/bin"}) == {"valid": True, "steps": 3, "schema_version": "ATIF-v1.7"}
    found = json.loads(path.read_text())
    assert found["session_id"] == session_id and found["agent"]["name"] == "sprout-agent"
    user, calling, answer = found["steps"]
    assert (user["source"], user["message"]) == ("user", "echo one")
    assert [c["function_name"] for c in calling["tool_calls"]] == ["fake__echo", "fake__fail"]
    results = {r["source_call_id"]: r for r in calling["observation"]["results"]}
    assert results["t1"]["content"] == "one" and results["t2"].get("extra") == {"is_error": True}
    assert calling["metrics"]["prompt_tokens"] == 500 and calling["metrics"]["cached_tokens"] == 100
    assert (answer["message"], answer["metrics"]["completion_tokens"]) == ("All done.", 12)
    totals = found["final_metrics"]
    assert (totals["total_prompt_tokens"], totals["total_completion_tokens"], totals["total_steps"]) == (1000, 42, 3)
    assert totals["total_cost_usd"] == pytest.approx(cost) and cost > 0
    assert calling["metrics"]["cost_usd"] + answer["metrics"]["cost_usd"] == pytest.approx(cost)
