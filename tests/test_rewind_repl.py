"""The rules behind /rewind in the REPL that need no terminal: the changes line after a turn (and `-p`'s progress),
the turns listed to pick from, Esc Esc on an empty prompt, and the session going on in the fork a conversation
rewind made (history, transcript, id, checkpoints under the fork's own ref, the old session left as it was).

In-process: the real runtime with the built-in dev server in-process, the real SDK against the fake API, real git.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import anyio
import pytest

from sprout_agent.checkpoints.timeline import Turn
from sprout_agent.config.locations import Locations
from sprout_agent.config.options import Options
from sprout_agent.core import events as ev
from sprout_agent.core.messages import Text, Usage
from sprout_agent.faces.slash_commands import names_for
from sprout_agent.session import store
from sprout_agent.session.prepared import prepare
from tests.bounds import bounded
from tests.fake_anthropic import FakeAnthropic, reply, tool_use
from tests.harness import API_KEY, agent_env


def finished(changes: ev.TurnChanges | None) -> ev.TurnFinished:
    return ev.TurnFinished("end_turn", "", 1, Usage(), changes=changes)


def test_the_changes_line_counts_files_and_lines_and_names_what_was_skipped_once(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from sprout_agent.faces.terminal.render import TerminalRenderer

    # Not interactive: `-p`'s progress on stderr; the REPL draws the same lines above its prompt.
    monkeypatch.setenv("COLUMNS", "200")  # one line each, unwrapped
    render = TerminalRenderer(interactive=False, verbose=False)
    one = ev.FileChange("a.py", "modified", 3, 1, ("toolu_1",), ("dev__edit",))
    two = ev.FileChange("b.bin", "added", 0, 0, ("toolu_2",), ("dev__bash",))
    big = ("huge.iso: over 10 MB",)
    render(finished(ev.TurnChanges(1, (one,))))
    render(finished(ev.TurnChanges(2, (one, two), big)))
    render(finished(ev.TurnChanges(3, (one,), big)))  # the same skipped path: not said again
    render(finished(ev.TurnChanges(4, (), ())))  # nothing changed: nothing said
    render(finished(None))  # no checkpoint (the turn only read)
    render(finished(ev.TurnChanges(5, (), ("vendor/: over 5000 new files",))))
    assert capsys.readouterr().err.splitlines() == [
        "1 file changed: +3 −1",
        "2 files changed: +3 −1 · not checkpointed, so not rewindable: huge.iso: over 10 MB",
        "1 file changed: +3 −1",
        "not checkpointed, so not rewindable: vendor/: over 5000 new files",
    ]


def test_the_turns_listed_say_when_what_and_how_much_and_mark_a_rewind_step() -> None:
    from sprout_agent.faces.terminal.rewind_view import turn_rows

    now = time.mktime((2026, 3, 2, 15, 0, 0, 0, 0, -1))
    change = ev.FileChange("a.py", "modified", 12, 4)
    turns = [
        Turn(1, now - 86400 * 3, "explain\nthe code", 10),  # only talked: no checkpoint
        Turn(2, now - 60, "fix the [bold]bug\x1b[2J", 20, before={"/r": "c1"}, after={"/r": "c2"}, files=(change,)),
        Turn(3, now, "rewind to turn 2", 30, "rewind", before={"/r": "c2"}, after={"/r": "c3"}, files=(change,)),
    ]
    rows = turn_rows(turns, now)
    assert rows[0] == ("1", "2026-02-27 15:00", "explain", "-", "")
    assert rows[1] == ("2", "14:59", "fix the [bold]bug\\x1b[2J", "1", "+12 −4")  # escaped; the table shows it as is
    assert rows[2][2] == "↶ rewind to turn 2"


def test_rewind_is_a_repl_command_only() -> None:
    assert "/rewind" in names_for("repl") and "/rewind" not in names_for("acp")


async def _typed(keys: str) -> str | None:
    from prompt_toolkit.application import create_app_session
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput

    from sprout_agent.faces.terminal.input import PromptReader

    with create_pipe_input() as pipe, create_app_session(input=pipe, output=DummyOutput()):
        reader = PromptReader(None)
        pipe.send_text(keys)
        with anyio.fail_after(bounded(10)):
            return await reader.read()


@pytest.mark.anyio
async def test_esc_esc_on_an_empty_prompt_is_rewind_and_esc_enter_still_a_new_line() -> None:
    assert await _typed("\x1b\x1b") == "/rewind"
    assert await _typed("ab\x1b\x1b\r\r") == "ab\n"  # not on a typed line: the second Esc and Enter, a new line
    assert await _typed("a\x1b\rb\r") == "a\nb"


@pytest.mark.anyio
@pytest.mark.e2e
async def test_the_session_goes_on_in_the_fork_with_its_own_checkpoints_and_the_old_one_is_left_as_it_was(
    tmp_path: Path,
) -> None:
    from sprout_agent.session.continuing import continue_in_fork, sent_prompt
    from sprout_agent.session.rewinding import RewindRequest, rewind_to
    from sprout_agent.session.runtime import open_runtime

    work = tmp_path / "work"
    work.mkdir()
    write = lambda name, text: tool_use("dev__write", {"file_path": name, "content": text})  # noqa: E731
    script = [reply(write("a.txt", "one\n")), reply("first"), reply(write("a.txt", "two\n")), reply("second")]
    script += [reply(write("b.txt", "three\n")), reply("third")]
    env = agent_env(tmp_path, None, {"SPROUT_AGENT_BUILTIN_SERVERS": "dev", "ANTHROPIC_API_KEY": API_KEY})
    locations = Locations(None, tmp_path / "sessions", tmp_path / "data", None)
    events: list[ev.Event] = []
    with FakeAnthropic(script) as fake:
        env["ANTHROPIC_BASE_URL"] = fake.base_url
        prepared = prepare(Options(prompt=None, cwd=work), locations, env)
        with anyio.fail_after(bounded(60)):
            async with open_runtime(prepared, events.append) as runtime:
                agent, tracker, old = runtime.agent, runtime.checkpoints, runtime.transcript
                assert tracker is not None and old is not None
                await agent.run_turn("write one")
                await agent.run_turn("now write two, please")
                before_second = list(tracker.histories[2])
                old_history = store.load(old.path).history
                outcome = await rewind_to(tracker, old.path, RewindRequest(2))
                shadow = next((tmp_path / "data" / "checkpoints").glob("*/shadow.git"))
                old_ref = _ref(shadow, runtime.session_id)
                spent_at_fork = agent.ledger.cost
                forked = continue_in_fork(runtime, outcome)
                assert forked.session_id == outcome.session_id == agent.session_id == tracker.session_id
                assert forked.transcript is not None and forked.transcript.path == outcome.forked
                assert agent.history == before_second and [t.number for t in tracker.turns] == [1]
                assert sent_prompt(old.path, outcome.turn.offset) == "now write two, please"
                assert (work / "a.txt").read_text() == "one\n"
                await agent.run_turn("write three")  # in the fork: numbered 2 there, checkpointed under its ref
                spent_in_fork = agent.ledger.cost - spent_at_fork
                assert (work / "b.txt").read_text() == "three\n"
                assert [t.number for t in tracker.turns] == [1, 2] and tracker.turns[-1].files
                assert _ref(shadow, runtime.session_id) == old_ref  # the old session's ref did not move
                assert _ref(shadow, forked.session_id)
                back = await rewind_to(tracker, forked.transcript.path, RewindRequest(2, conversation=False))
                assert back.restored == ["b.txt"] and not (work / "b.txt").exists()
                forked.transcript.close()
    assert store.load(old.path).history == old_history  # the old conversation, as it was
    # Each session's recorded spend is its own conversation's: the fork's is the first turn's and its own, never
    # the rewound second turn's (issue 45: `sessions export` showed it in the fork's cost).
    first_turn = next(r["total_usd"] for r in store.records(old.path) if r.get("type") == "cost")
    rewound_turn = store.load(old.path).cost_usd - first_turn
    assert rewound_turn > 0 and spent_in_fork > 0
    assert store.load(old.path).cost_usd == pytest.approx(spent_at_fork, abs=2e-6)  # not the fork's turn too
    assert store.load(forked.transcript.path).cost_usd == pytest.approx(first_turn + spent_in_fork, abs=2e-6)
    messages = store.load(forked.transcript.path).history
    assert [m.content[0].text for m in messages if isinstance(m.content[0], Text)][:2] == ["write one", "first"]
    sent = fake.requests[-2].body["messages"]  # the fork's first request: the conversation before the rewound turn
    assert [b["text"] for m in sent for b in m["content"] if b["type"] == "text"] == [
        "write one",
        "first",
        "write three",
    ]


def _ref(git_dir: Path, session_id: str) -> str:
    done = subprocess.run(
        ["git", f"--git-dir={git_dir}", "rev-parse", "--verify", "-q", f"refs/sprout-agent/{session_id}"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return done.stdout.strip()
