"""/rewind as a person sees it, on a pseudo-terminal read through pyte: the changes line after a turn whose edit
and command wrote files, Esc Esc on the empty prompt, the turns to pick from, the preview with a conflict, and
after it the files back, the user's edit kept, the prompt back in the input and the conversation forked."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sprout_agent.session import store
from tests.fake_anthropic import FakeAnthropic, reply, tool_use
from tests.harness import agent_command, agent_env, write_config
from tests.screen import PtyScreen

pytestmark = pytest.mark.e2e


def prompt_shows(term: PtyScreen, typed: str = "") -> bool:
    return term.cursor_line().rstrip() == f"› {typed}".rstrip()


@pytest.mark.slow
def test_rewind_puts_the_files_back_keeps_the_users_edit_and_forks_the_conversation_with_the_prompt_to_edit(
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "keep.txt").write_text("original\n")
    (work / "notes.txt").write_text("v1\n")
    writes = tool_use("dev__write", {"file_path": "new.py", "content": "print(1)\n"}, id="toolu_write")
    command = tool_use("dev__bash", {"command": "sed -i s/v1/v2/ notes.txt && rm keep.txt"}, id="toolu_bash")
    script = [reply("hi"), reply(writes, command), reply("done"), reply("again")]
    config = write_config(tmp_path, {})
    env = agent_env(tmp_path, None, {"SPROUT_AGENT_BUILTIN_SERVERS": "dev"})
    with FakeAnthropic(script) as fake:
        env["ANTHROPIC_BASE_URL"] = fake.base_url
        args = ["--config", str(config), "--permission-mode", "auto"]
        with PtyScreen(agent_command(args), env, work, rows=50, columns=110) as term:
            term.wait_for(lambda: prompt_shows(term), "the prompt")
            term.send("hello\r")
            term.expect("hi", anywhere=True)
            term.wait_for(lambda: prompt_shows(term), "the prompt after the first answer")
            term.send("make changes\r")
            term.expect("3 files changed: +2 −2", anywhere=True)  # new.py +1, notes.txt +1 −1, keep.txt −1
            term.wait_for(lambda: prompt_shows(term), "the prompt after the turn")
            (work / "notes.txt").write_text("mine\n")  # the user's edit after the agent's: a conflict
            sessions = list((tmp_path / "data").rglob("*.jsonl"))
            (old_transcript,) = sessions
            old_history = store.load(old_transcript).history

            term.send("\x1b\x1b")  # Esc Esc on the empty prompt: /rewind
            term.expect("Rewind to before which turn?", anywhere=True)
            term.expect("turn (Enter: the latest; Ctrl-C: cancel) › 2")
            assert "make changes" in term.display() and "↶" not in term.display()
            term.send("\r")
            term.expect("[b] files and conversation", anywhere=True)
            term.send("b")
            term.expect("Rewinding to before turn 2", anywhere=True)
            term.expect("leaving the files above as they are", anywhere=True)  # the preview is whole: its question
            screen = term.history()
            assert "2 files to put back" in screen and "- print(1)" in screen and "+ original" in screen
            assert re.search(r"notes\.txt: changed since the agent last wrote it", screen)
            assert (work / "new.py").exists()  # nothing happened before the answer
            term.send("y")
            term.expect("resume the one before", anywhere=True)
            term.wait_for(lambda: prompt_shows(term, "make changes"), "the rewound prompt back in the input")
            assert not (work / "new.py").exists() and (work / "keep.txt").read_text() == "original\n"
            assert (work / "notes.txt").read_text() == "mine\n"
            assert "left as you changed them: notes.txt" in term.history()
            new = re.search(r"back to before turn 2, in session ([0-9a-f-]{36})\n", term.history())
            assert new is not None and f"resume the one before: sprout-agent -r {old_transcript.stem}" in term.history()

            term.send(" again\r")
            term.expect("again", anywhere=True)
            term.wait_for(lambda: prompt_shows(term), "the prompt after the answer in the fork")
            term.send("\x04")
            assert term.close() == 0
    assert f"resume this session: sprout-agent -r {new.group(1)}" in term.history()
    sent = fake.requests[-1].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert sent[0]["content"][0]["text"] == "hello" and sent[-1]["content"][0]["text"] == "make changes again"
    assert store.load(old_transcript).history == old_history  # the old conversation is as it was
    forked = store.load(old_transcript.with_name(f"{new.group(1)}.jsonl")).history
    assert len(forked) == 4 and forked[-1].content[0].text == "again"  # type: ignore[union-attr]
