"""The terminal's drawing in-process: diffs, checklists, Markdown blocks, finished tool calls and the answer
printed once (events fed to the interactive view, rendered by rich into a string)."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest
from rich.console import Console, RenderableType

from sprout_agent.core import events as ev
from sprout_agent.core.messages import Text, ToolUse
from sprout_agent.core.permission_mode import PermissionMode
from sprout_agent.core.permissions import Decision, Policy
from sprout_agent.core.protocols import ToolSpec
from sprout_agent.faces.terminal import ask, tool_view
from sprout_agent.faces.terminal.calls import Call
from sprout_agent.faces.terminal.checklist import checklist
from sprout_agent.faces.terminal.diff_view import diff_lines, view
from sprout_agent.faces.terminal.live_view import LiveView
from sprout_agent.faces.terminal.md_blocks import CHUNK_LINES, BlockSplitter

DIFF = """--- a/calc.py
+++ b/calc.py
@@ -3,3 +3,3 @@
 def add(a, b):
-    return a - b
+    return a + b
 # end
@@ -20,2 +20,3 @@
 x = 1
+y = 2
 z = 3
"""


def drawn(renderable: RenderableType, width: int = 80) -> str:
    console = Console(file=io.StringIO(), width=width, color_system=None)
    console.print(renderable)
    return written(console)


def written(console: Console) -> str:
    """What the console printed, without the blanks rich pads each line with to the full width."""
    out = console.file
    assert isinstance(out, io.StringIO)
    return "\n".join(line.rstrip() for line in out.getvalue().split("\n"))


# --- diffs ----------------------------------------------------------------------------------------------
def test_diff_lines_carry_the_line_numbers_of_their_hunk_and_a_gap_between_hunks() -> None:
    lines = [(line.kind, line.number, line.text) for line in diff_lines(DIFF)]
    assert lines == [
        ("ctx", 3, "def add(a, b):"),
        ("del", 4, "    return a - b"),
        ("add", 4, "    return a + b"),
        ("ctx", 5, "# end"),
        ("gap", None, "⋮"),
        ("ctx", 20, "x = 1"),
        ("add", 21, "y = 2"),
        ("ctx", 22, "z = 3"),
    ]


def test_a_tall_diff_is_clipped_and_says_how_many_lines_were_left_out() -> None:
    tall = "@@ -1,0 +1,50 @@\n" + "".join(f"+line {i}\n" for i in range(50))
    shown = view(tall, height=10)
    assert (len(shown.lines), shown.hidden, shown.added) == (10, 40, 50)
    screen = drawn(tool_view.diff(tall, height=10))
    assert "… 40 more lines" in screen and "+ line 9" in screen and "line 10" not in screen


def test_a_finished_edit_shows_its_numbered_diff_under_a_check_mark() -> None:
    call = Call("dev__edit", "dev", "edit", {"file_path": "calc.py"})
    finished = ev.ToolFinished("c1", "dev__edit", False, 0.01, "ok", (Text("ok"),), diff=DIFF)
    screen = drawn(tool_view.finished(call, finished, verbose=False))
    assert screen.splitlines()[0].startswith("✓ dev__edit file_path=calc.py")
    assert "4 -     return a - b" in screen and "4 +     return a + b" in screen


# --- the todo list -----------------------------------------------------------------------------------
def test_todo_write_is_drawn_as_a_checklist_with_a_mark_per_status() -> None:
    todos = [
        {"content": "read the test", "status": "completed"},
        {"content": "fix   the\nbug", "status": "in_progress"},
        {"content": "run the suite", "status": "pending"},
    ]
    call = Call("todo__todo_write", "todo", "todo_write", {"todos": todos})
    finished = ev.ToolFinished("t", "todo__todo_write", False, 0.0, "Todo list updated", ())
    screen = drawn(tool_view.finished(call, finished, verbose=False))
    assert "☑ read the test" in screen and "◐ fix the bug" in screen and "☐ run the suite" in screen


def test_arguments_that_are_not_a_todo_list_give_no_checklist() -> None:
    assert checklist({"todos": [{"content": "x", "status": "someday"}]}) is None
    assert checklist({"todos": "everything"}) is None


# --- finished calls --------------------------------------------------------------------------------------
def test_a_refused_call_is_marked_failed_and_its_whole_reason_wraps_at_word_boundaries() -> None:
    reason = "refused: " + " ".join(f"word{i}" for i in range(60))
    finished = ev.ToolFinished("r", "git__push", True, 0.0, reason[:40], (Text(reason),))
    screen = drawn(tool_view.finished(None, finished, verbose=False), width=50)
    assert screen.startswith("✗ git__push")
    assert all(word in screen.split() for word in reason.split())  # no word cut in two, none dropped


def test_a_failed_commands_preview_keeps_its_own_last_lines_and_verbose_keeps_all() -> None:
    note = "[sandbox: write outside the writable roots denied: /etc/x (writable: the working directory)]"
    output = "\n".join(f"out {i}" for i in range(30)) + f"\n{note}\n[exit code: 1]"
    call = Call("dev__bash", "dev", "bash", {"command": "pytest"})
    finished = ev.ToolFinished("b", "dev__bash", True, 1.0, "out 0", (Text(output),))
    short = drawn(tool_view.finished(call, finished, verbose=False), width=120)
    assert short.splitlines()[0].startswith("✗ dev__bash") and short.splitlines()[0].endswith("· exit 1")
    assert "… 26 earlier lines" in short and "out 29" in short and "out 3\n" not in short
    assert "[exit code" not in short and "sandbox:" not in short  # the model's notes, not the person's
    verbose = drawn(tool_view.finished(call, finished, verbose=True), width=120)
    assert "out 3\n" in verbose and "[exit code: 1]" in verbose


def test_the_time_waiting_for_a_person_is_not_the_tools_time() -> None:
    call = Call("dev__bash", "dev", "bash", {}, running_since=time.monotonic())
    finished = ev.ToolFinished("b", "dev__bash", False, 42.0, "", ())  # the loop counts from ToolStarted
    assert "42.00s" not in drawn(tool_view.finished(call, finished, verbose=False))


# --- Markdown blocks ---------------------------------------------------------------------------------
ANSWER = """# Title
Intro paragraph
on two lines.

- item one

  its second paragraph
- item two

```python
a = 1

b = 2
```
Last words."""


def test_a_block_is_released_once_the_text_after_it_shows_it_is_complete() -> None:
    splitter = BlockSplitter()
    assert splitter.feed("# Title\nIntro paragraph\non two") == ["# Title"]
    assert splitter.tail() == "Intro paragraph\non two"
    assert splitter.feed(" lines.\n\n") == []  # a blank line alone does not end it: the next line might be indented
    assert splitter.feed("- item") == []  # nor does a line not yet complete
    assert splitter.feed("\n") == ["Intro paragraph\non two lines."]


def test_blocks_are_the_same_whatever_the_deltas_and_keep_code_and_list_items_whole() -> None:
    whole = BlockSplitter()
    expected = [*whole.feed(ANSWER), *whole.finish()]
    assert expected == [
        "# Title",
        "Intro paragraph\non two lines.",
        "- item one\n\n  its second paragraph\n- item two",
        "```python\na = 1\n\nb = 2\n```",
        "Last words.",
    ]
    by_char = BlockSplitter()
    assert [block for ch in ANSWER for block in by_char.feed(ch)] + by_char.finish() == expected


def test_a_long_code_block_is_cut_into_closed_chunks() -> None:
    splitter = BlockSplitter()
    code = "```py\n" + "".join(f"x{i}\n" for i in range(CHUNK_LINES * 2)) + "```\n"
    blocks = [*splitter.feed(code), *splitter.finish()]
    assert len(blocks) == 3 and all(b.startswith("```py\n") and b.endswith("```") for b in blocks)
    assert "".join(b.removeprefix("```py\n").removesuffix("```") for b in blocks).split() == [
        f"x{i}" for i in range(CHUNK_LINES * 2)
    ]


def test_a_streamed_answer_is_printed_once_rendered_and_an_unstreamed_one_too() -> None:
    console = Console(file=io.StringIO(), width=80, color_system=None)
    live = LiveView(console, verbose=False)
    answer = "\n\n".join(f"Paragraph **{i}**." for i in range(60))
    live.model_waiting()
    for start in range(0, len(answer), 7):
        live.text_delta(answer[start : start + 7])
    live.model_replied()
    live.assistant_text(answer)
    live.model_waiting()
    live.assistant_text("Not *streamed*.")
    live.close()
    screen = written(console)
    assert all(screen.count(f"Paragraph {i}.\n") == 1 for i in range(60)) and "**" not in screen
    assert screen.count("Not streamed.") == 1


# --- ask ------------------------------------------------------------------------------------------------
def test_the_ask_question_previews_a_dev_edit_as_a_diff_and_wraps_a_long_description(tmp_path: Path) -> None:
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    description = "Replace text in a file " * 30 + ". What the model reads next."
    spec = ToolSpec("dev__edit", "dev", "edit", description, {})
    arguments: dict[str, object] = {"file_path": "calc.py", "old_string": "a - b", "new_string": "a + b"}
    screen = drawn(ask.question(spec, arguments, str(tmp_path)), width=60)
    assert "Run dev__edit?" in screen and "2 -     return a - b" in screen and "2 +     return a + b" in screen
    shown = ask.describe(description)
    assert shown.endswith(" …") and set(shown[:-2].split()) <= set(description.split())  # no word cut in two
    assert "What the model reads" not in screen  # one sentence of purpose for the person, not the model's text


def test_the_ask_question_shows_a_command_as_it_would_run_and_one_line_of_purpose() -> None:
    description = "Run a shell command in the working directory.\nThe sandbox note and exit codes are for the model."
    spec = ToolSpec("dev__bash", "dev", "bash", description, {})
    screen = drawn(ask.question(spec, {"command": "git status --short", "timeout": 30}, "/tmp"), width=80)
    lines = [line.rstrip() for line in screen.splitlines() if line.strip()]
    assert lines[:3] == ["Run dev__bash?", "Run a shell command in the working directory.", "$ git status --short"]
    assert '"timeout": 30' in screen and "for the model" not in screen and '"command"' not in screen


@pytest.mark.anyio
async def test_ask_mode_runs_read_only_tools_without_asking() -> None:
    asked: list[str] = []

    async def asker(spec: ToolSpec, use: ToolUse, *, outside_sandbox: str | None = None) -> Decision:
        asked.append(spec.name)
        return Decision("deny")

    policy = Policy(PermissionMode.ASK, ask=asker)
    read = ToolSpec("dev__read", "dev", "read", "", {}, read_only=True)
    unknown = ToolSpec("other__thing", "other", "thing", "", {}, read_only=None)
    assert await policy(read, ToolUse("1", "dev__read", {})) is None
    assert await policy(unknown, ToolUse("2", "other__thing", {})) == "denied by the user"
    assert asked == ["other__thing"]  # not annotated read-only: still asked
