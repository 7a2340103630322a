"""Sessions: the JSONL transcript, resume after a normal end and after SIGKILL, --continue, `sessions` (the file
format alone: test_store.py). Which session a resume picks and what it sends is checked in-process
(tests/headless_here.py); the CLI as a process keeps what only it shows: its flags, its exit path, SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sprout_agent.config.options import Options
from sprout_agent.core.messages import Message, Text
from sprout_agent.session import store
from tests.bounds import bounded
from tests.fake_anthropic import FakeAnthropic, Step, reply, tool_use
from tests.harness import (
    agent_env,
    assert_history_valid,
    fake_server,
    pid_alive,
    read_log,
    result_text,
    run_agent,
    start_agent,
    tool_results,
    wait_for,
    write_config,
)
from tests.headless_here import headless
from tests.stream_schema import stream, valid_lines

e2e = pytest.mark.e2e


def sessions_dir(home: Path) -> Path:
    return home / "data" / "sprout-agent" / "sessions"


def texts(body: dict[str, Any]) -> list[tuple[str, str]]:
    """(role, text) of every text block the request carried."""
    return [
        (message["role"], block["text"])
        for message in body["messages"]
        for block in message["content"]
        if block["type"] == "text"
    ]


def test_continue_picks_the_latest_session_of_this_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    with FakeAnthropic([reply("answer here"), reply("answer there"), reply("continued")]) as fake:
        first = headless(
            tmp_path, monkeypatch, Options("q here", cwd=here, output_format="json"), fake=fake, servers={}
        )
        headless(tmp_path, monkeypatch, Options("q there", cwd=there), fake=fake, servers={})
        again = headless(
            tmp_path,
            monkeypatch,
            Options("more", cwd=here, output_format="json", continue_latest=True),
            fake=fake,
            servers={},
        )
    assert again.code == 0, again.stderr
    assert texts(fake.requests[2].body) == [("user", "q here"), ("assistant", "answer here"), ("user", "more")]
    (before,) = valid_lines(first.stdout)
    (after,) = valid_lines(again.stdout)
    assert after["session_id"] == before["session_id"]
    assert len(list(sessions_dir(tmp_path).glob("*.jsonl"))) == 2  # the resumed session kept its file


def test_resume_by_id_prefix_from_another_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = tmp_path / "other"
    other.mkdir()
    with FakeAnthropic([reply("first answer"), reply("resumed answer")]) as fake:
        headless(tmp_path, monkeypatch, Options("first", cwd=tmp_path), fake=fake, servers={})
        (path,) = sessions_dir(tmp_path).glob("*.jsonl")
        options = Options("second", cwd=other, resume_id=path.stem[:8], output_format="stream-json")
        run = headless(tmp_path, monkeypatch, options, fake=fake, servers={})
    assert run.code == 0, run.stderr
    assert texts(fake.requests[1].body) == [("user", "first"), ("assistant", "first answer"), ("user", "second")]
    lines = stream(run.stdout)
    assert lines[0]["resumed"] is True and lines[0]["session_id"] == path.stem
    assert any(line.get("subtype") == "notice" and "resumed session" in line["text"] for line in lines)
    assert store.load(path).history[-1] == Message("assistant", (Text("resumed answer"),))


@e2e
def test_an_unknown_session_id_or_nothing_to_continue_is_exit_2(tmp_path: Path) -> None:
    unknown = run_agent(tmp_path, ["--resume", "nope", "-p", "x"], fake=None, servers={})
    assert unknown.code == 2 and "no session with id 'nope'" in unknown.stderr
    assert len(unknown.stderr.strip().splitlines()) == 1
    nothing = run_agent(tmp_path, ["--continue", "--output-format", "json", "-p", "x"], fake=None, servers={})
    assert nothing.code == 2
    (result,) = valid_lines(nothing.stdout)
    assert "no session to continue" in result["errors"][0]
    bare = run_agent(tmp_path, ["-p", "x", "-r"], fake=None, servers={})  # no id, and no terminal to pick in
    assert bare.code == 2 and "`sprout-agent sessions` lists them" in bare.stderr
    assert len(bare.stderr.strip().splitlines()) == 1
    piped = run_agent(tmp_path, ["-r"], fake=None, servers={})  # stdin a pipe: it said "stdin was empty" (issue 45)
    assert piped.code == 2 and piped.stderr.strip().splitlines() == [
        "sprout-agent: -r needs a session id here: `sprout-agent sessions` lists them (-c resumes the latest)"
    ]


@e2e
@pytest.mark.slow
def test_r_without_an_id_in_a_terminal_offers_this_directorys_sessions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.harness import agent_command, agent_env
    from tests.screen import PtyScreen

    with FakeAnthropic([reply("answer one"), reply("answer two"), reply("back in one")]) as fake:
        headless(tmp_path, monkeypatch, Options("the first question", cwd=tmp_path), fake=fake, servers={})
        headless(tmp_path, monkeypatch, Options("the second question", cwd=tmp_path), fake=fake, servers={})
        config = tmp_path / "empty.json"
        config.write_text('{"mcpServers": {}}')
        with PtyScreen(agent_command(["--config", str(config), "-r"]), agent_env(tmp_path, fake), tmp_path) as term:
            term.expect("resume which session?")
            listing = term.display()
            assert "1)" in listing and "the second question" in listing and "the first question" in listing
            term.send("2\r")
            term.expect("resumed session")
            term.expect("›")
            term.send("and now?\r")
            term.expect("back in one")
            term.wait_for(lambda: term.cursor_line().rstrip() == "›", "the prompt after the answer")  # then Ctrl-D
            term.send("\x04")
            term.close()
    assert texts(fake.requests[2].body)[0] == ("user", "the first question")


@e2e
def test_a_resume_after_compaction_loads_the_summary_not_the_past(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    small = {"SPROUT_AGENT_MAX_CONTEXT_TOKENS": "10000", "SPROUT_AGENT_MAX_OUTPUT_TOKENS": "1000"}
    script: list[Step] = [
        reply(tool_use("fake__echo", {"text": "x" * 400}), usage={"input_tokens": 7000, "output_tokens": 300}),
        reply("## Summary\nEchoed once."),
        reply("finished", usage={"input_tokens": 900}),
        reply("carried on"),
    ]
    servers = {"fake": fake_server()}
    with FakeAnthropic(script) as fake:
        first = headless(
            tmp_path, monkeypatch, Options("please echo", cwd=tmp_path), fake=fake, servers=servers, env=small
        )
        assert first.code == 0, first.stderr
        # The CLI's -c, as a process: the flag reaches the same resume
        run = run_agent(tmp_path, ["-c", "-p", "and now?"], fake=fake, servers=servers, env=small)
    assert run.code == 0, run.stderr
    body = fake.requests[3].body
    assert "Echoed once." in body["messages"][0]["content"][0]["text"]
    assert "x" * 400 not in json.dumps(body)
    assert texts(body)[-2:] == [("assistant", "finished"), ("user", "and now?")]
    assert_history_valid(body)


@pytest.fixture
def mcp_pids(tmp_path: Path) -> Iterator[list[int]]:
    """MCP servers outlive a SIGKILLed agent (their own process groups): end them after the test."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        if pid_alive(pid):
            os.killpg(pid, signal.SIGKILL)


@e2e
def test_a_session_killed_mid_tool_call_resumes_with_a_valid_history(tmp_path: Path, mcp_pids: list[int]) -> None:
    log = tmp_path / "calls.jsonl"
    config = write_config(tmp_path, {"fake": fake_server(log=str(log))})
    uses = [
        tool_use("fake__echo", {"text": "side effect"}, id="toolu_echo"),
        tool_use("fake__slow", {"seconds": 30}, id="toolu_slow"),
    ]
    script: list[Step] = [reply("Working on it.", *uses)]
    with FakeAnthropic(script) as fake:
        args = ["--config", str(config), "-p", "start the slow job"]
        process = start_agent(tmp_path, args, fake=fake, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_for(lambda: {c["tool"] for c in read_log(log)} == {"echo", "slow"}, "both calls started", process)
            mcp_pids.append(read_log(log)[0]["pid"])
            # The echo finished while the slow call runs: its result is in the transcript already.
            wait_for(
                lambda: '"tool_result"' in "".join(p.read_text() for p in sessions_dir(tmp_path).glob("*")),
                "the echo's result recorded",
                process,
            )
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=bounded(10))
        finally:
            process.kill()
    assert process.returncode == -signal.SIGKILL
    (path,) = sessions_dir(tmp_path).glob("*.jsonl")
    with FakeAnthropic([reply("picked up")]) as fake:
        run = run_agent(tmp_path, ["--resume", path.stem, "-p", "go on"], fake=fake, servers={"fake": fake_server()})
    assert run.code == 0, run.stderr
    assert run.stdout == "picked up\n"
    body = fake.requests[0].body
    assert_history_valid(body)
    finished, interrupted = tool_results(body)  # the finished call kept, in call order
    assert finished["tool_use_id"] == "toolu_echo" and result_text(finished) == "side effect"
    assert interrupted["tool_use_id"] == "toolu_slow" and interrupted["is_error"] is True
    assert result_text(interrupted) == store.INTERRUPTED
    assert texts(body) == [("user", "start the slow job"), ("assistant", "Working on it."), ("user", "go on")]
    # The repaired base was recorded once; a second resume reads the same valid history back.
    history = store.load(path).history
    assert not store.load(path).repaired and history[-1] == Message("assistant", (Text("picked up"),))


@e2e
@pytest.mark.slow
def test_sessions_lists_newest_first_with_prompt_and_turns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    stdin = "\n".join(json.dumps({"type": "user", "text": t}) for t in ("fix\nthe bug", "and the test"))
    with FakeAnthropic([reply("one"), reply("two"), reply("three")]) as fake:
        headless(
            tmp_path, monkeypatch, Options(None, cwd=a, input_format="stream-json"), fake=fake, servers={}, stdin=stdin
        )
        headless(tmp_path, monkeypatch, Options("latest prompt", cwd=b), fake=fake, servers={})
    broken = sessions_dir(tmp_path) / "broken.jsonl"  # a hand-edited file: one block is not an object
    prompt = {"role": "user", "content": [{"type": "text", "text": "x"}, "junk"]}
    broken.write_text(json.dumps({"type": "message", "message": prompt}) + "\n")
    listed = run_agent(tmp_path, ["sessions", "--json"], fake=None)
    assert listed.code == 0, listed.stderr
    assert listed.stderr.startswith(f"sprout-agent: warning: skipped {broken}: AttributeError")
    rows = json.loads(listed.stdout)
    assert [(r["cwd"], r["first_prompt"], r["turns"]) for r in rows] == [
        (str(b), "latest prompt", 1),
        (str(a), "fix the bug", 2),
    ]
    assert all(len(r["session_id"]) == 36 and r["last_activity"].endswith("+00:00") for r in rows)
    text = run_agent(tmp_path, ["sessions"], fake=None)
    assert text.code == 0
    first, second = text.stdout.splitlines()
    assert first.startswith(rows[0]["session_id"]) and "latest prompt" in first and "1 turns" in first
    assert second.startswith(rows[1]["session_id"]) and "2 turns" in second
    here = run_agent(tmp_path, ["sessions", "--here", "--json"], fake=None)
    assert json.loads(here.stdout) == []


@e2e
def test_sessions_never_loads_the_sdks(tmp_path: Path) -> None:
    completed = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "sprout_agent", "sessions"],
        capture_output=True,
        text=True,
        env=agent_env(tmp_path, None),
        cwd=tmp_path,
        timeout=bounded(60),
    )
    assert completed.returncode == 0
    imported = {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in completed.stderr.splitlines() if "|" in line}
    assert "sprout_agent" in imported
    assert not imported & {"anthropic", "mcp", "rich"}


@e2e
def test_an_unwritable_sessions_directory_is_one_line_and_exit_1_before_any_request(tmp_path: Path) -> None:
    blocker = tmp_path / "not_a_directory"
    blocker.write_text("")  # the sessions directory would be under a regular file: even root cannot make it
    with FakeAnthropic([reply("never asked")]) as fake:
        run = run_agent(tmp_path, ["-p", "hi"], fake=fake, servers={}, env={"XDG_DATA_HOME": str(blocker)})
    transcript = blocker / "sprout-agent" / "sessions"
    assert run.code == 1, run.stderr
    assert "Traceback" not in run.stderr
    assert run.stderr.splitlines()[-1].startswith(f"sprout-agent: cannot write the session transcript {transcript}/")
    assert run.stderr.splitlines()[-1].endswith(": Not a directory")
    assert fake.requests == [] and run.stdout == ""
