"""A session as a web page and a batch report, opened in a real headless Chromium (Debian's, driven by
Playwright): the page renders, a hostile transcript's script does not run, the table sorts, the charts draw.
Screenshots are kept under the test's tmp_path (and copied to $SPROUT_TEST_ARTIFACTS when it is set)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sprout_agent.core.messages import Message, Text, Thinking, ToolResult, ToolUse
from sprout_agent.faces.pages.batch_report import write_report
from sprout_agent.faces.pages.entries import from_store
from sprout_agent.faces.pages.session_page import session_html
from sprout_agent.session.store import SessionStore

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
HOSTILE = "<script>document.title='pwned';window.pwned=1</script><img src=x onerror=\"window.pwned=2\">"


def hostile_session(directory: Path) -> Path:
    store = SessionStore.new(directory, "0123456789abcdef0123456789abcdef", "/work/project", "claude-sonnet-5-5")
    store.appended(Message("user", (Text('fix @calc.py\n\n<file path="calc.py">\nx = 1\n</file>'),)))
    edit = ToolUse("t1", "dev__edit", {"file_path": "calc.py", "old_string": "a - b", "new_string": "a + b"})
    store.appended(Message("assistant", (Thinking("I should edit it", "sig"), Text("Editing **now**."), edit)))
    store.result(ToolResult("t1", (Text(f"edited calc.py {HOSTILE}"),)))
    store.appended(Message("user", (ToolResult("t1", (Text(f"edited calc.py {HOSTILE}"),)),)))
    hook = ToolUse("sprout_hook_ab_0", "tests___Stop", {})
    store.appended(Message("assistant", (hook,)))
    said = json.dumps({"hook": "_Stop", "server": "tests", "text": "tests are red"})
    store.appended(Message("user", (ToolResult("sprout_hook_ab_0", (Text(said),)),)))
    store.reset([Message("user", (Text("summary"),))], "compaction")
    store.appended(Message("assistant", (Text("Done. [click](javascript:window.pwned=3) " + HOSTILE),)))
    store.spent(0.0123)
    store.close()
    return directory / "0123456789abcdef0123456789abcdef.jsonl"


def test_a_session_page_escapes_everything_and_shows_each_kind_of_entry(tmp_path: Path) -> None:
    session = from_store(hostile_session(tmp_path))
    kinds = [entry.kind for entry in session.entries]
    assert kinds == ["prompt", "thinking", "answer", "tool", "hook", "compaction", "answer"]
    assert session.entries[0].text == "fix @calc.py" and session.cost_usd == 0.0123
    assert session.entries[3].diff.splitlines()[-2:] == ["-a - b", "+a + b"] and session.entries[3].seconds is not None
    page = session_html(session)
    assert "<script>" not in page and "&lt;script&gt;" in page and "onerror=" not in page.replace("onerror=&quot;", "")
    assert 'href="javascript' not in page and "script-src" not in page  # the session page allows no script at all


def test_a_subagents_steps_show_under_the_call_that_ran_it_and_a_transcript_naming_itself_makes_no_loop(
    tmp_path: Path,
) -> None:
    session_id = "feedfacefeedfacefeedfacefeedface"
    parent = SessionStore.new(tmp_path, session_id, "/work/project", "claude-sonnet-4-5")
    parent.appended(Message("assistant", (ToolUse("toolu_task", "agent__task", {"prompt": "find it"}),)))
    parent.appended(Message("user", (ToolResult("toolu_task", (Text("found in cli.py"),)),)))
    parent.appended(Message("assistant", (ToolUse("toolu_self", "agent__task", {"prompt": "again"}),)))
    parent.appended(Message("user", (ToolResult("toolu_self", (Text("done"),)),)))
    parent.close()
    children = tmp_path / f"{session_id}.agents"
    about = {"agent_type": "Explore", "parent_tool_use_id": "toolu_task"}
    child = SessionStore.new(children, "agent-1-aaaa", "/work/project", "claude-haiku-4-5", about)
    child.appended(Message("user", (Text("find it"),)))
    child.appended(Message("assistant", (ToolUse("toolu_grep", "dev__grep", {"pattern": "--json"}),)))
    child.appended(Message("user", (ToolResult("toolu_grep", (Text(f"cli.py:3 {HOSTILE}"),)),)))
    child.appended(Message("assistant", (Text("found in cli.py"),)))
    child.close()
    looped = {"agent_type": "x", "parent_tool_use_id": "toolu_self"}  # a hostile file: its own call is its parent
    loop = SessionStore.new(children, "agent-2-bbbb", "/work/project", "m", looped)
    loop.appended(Message("assistant", (ToolUse("toolu_self", "agent__task", {"prompt": "again"}),)))
    loop.close()
    session = from_store(tmp_path / f"{session_id}.jsonl")
    task, again = session.entries
    assert task.subagent is not None and task.subagent.agent_type == "Explore"
    assert [entry.kind for entry in task.subagent.entries] == ["prompt", "tool", "answer"]
    assert again.subagent is not None and again.subagent.entries[0].subagent is None  # taken once: no loop
    page = session_html(session)
    assert page.index("subagent Explore (agent-1-aaaa) · claude-haiku-4-5") < page.index("dev__grep")
    assert "<script>" not in page and page.count("subagent x (agent-2-bbbb)") == 1


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not os.path.exists(CHROMIUM):
        pytest.skip("no chromium here (.ci/run installs Debian's)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


def keep(page: Any, path: Path) -> None:
    page.screenshot(path=str(path), full_page=True)
    if artifacts := os.environ.get("SPROUT_TEST_ARTIFACTS"):
        Path(artifacts).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(artifacts) / path.name)


@pytest.mark.e2e
@pytest.mark.slow
def test_the_session_page_renders_in_chromium_and_the_transcripts_script_never_runs(
    tmp_path: Path, browser: Any
) -> None:
    target = tmp_path / "session.html"
    target.write_text(session_html(from_store(hostile_session(tmp_path))))
    page = browser.new_page()
    page.goto(target.as_uri())
    assert page.title().startswith("sprout-agent session") and page.evaluate("window.pwned") is None
    assert page.locator("div.prompt").first.inner_text() == "fix @calc.py"
    assert page.locator("div.answer strong").first.inner_text() == "now"  # Markdown rendered
    assert page.locator("details.tool summary").first.inner_text().startswith("✓ dev__edit")
    assert page.locator("a[href^='javascript']").count() == 0  # markdown-it refuses the link: shown as text
    assert page.evaluate("window.pwned") is None
    assert "compacted here" in page.inner_text("body") and "$0.0123" in page.inner_text("header")
    assert "hook _Stop — tests: tests are red" in page.inner_text("body")
    keep(page, tmp_path / "session-page.png")


def write_batch(directory: Path) -> None:
    (directory / "transcripts").mkdir(parents=True)
    records = []
    for n, (status, cost, ms) in enumerate([("ok", 0.02, 4000), ("failed", 0.005, 9000), ("ok", 0.01, 1000)]):
        lines = [
            {"type": "system", "subtype": "init", "session_id": f"s{n}", "cwd": "/w", "model": "m"},
            {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": HOSTILE}]}},
            {"type": "result", "total_cost_usd": cost},
        ]
        (directory / "transcripts" / f"t{n}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
        records.append(
            {"id": f"t{n}", "status": status, "stop_reason": "end_turn" if status == "ok" else "max_turns",
             "turns": n + 1, "usage": {"input_tokens": 100 * (n + 1), "output_tokens": 10}, "cost_usd": cost,
             "duration_ms": ms, "diff": "+a\n-b\n" if n == 0 else None, "transcript": f"transcripts/t{n}.jsonl"}
        )  # fmt: skip
    (directory / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records) + '{"id": "half')
    (directory / "batch.json").write_text(json.dumps({"task_ids": ["t0", "t1", "t2", "t3"]}))


@pytest.mark.e2e
@pytest.mark.slow
def test_the_batch_report_sorts_on_a_click_draws_its_charts_and_shows_a_running_batch(
    tmp_path: Path, browser: Any
) -> None:
    out = tmp_path / "out"
    write_batch(out)
    report = write_report(out)
    page = browser.new_page()
    page.goto(report.as_uri())
    first_column = "[...document.querySelectorAll('tbody tr')].map(r => r.cells[0].textContent)"
    assert page.evaluate(first_column) == ["t0", "t1", "t2"]
    page.click("th:has-text('cost')")
    assert page.evaluate(first_column) == ["t1", "t2", "t0"]  # cheapest first
    page.click("th:has-text('cost')")
    assert page.evaluate(first_column) == ["t0", "t2", "t1"]
    sizes = page.evaluate("[...document.querySelectorAll('svg rect')].map(r => r.getBBox().width)")
    assert len(page.locator("svg").all()) == 5 and sizes and all(size > 0 for size in sizes)
    assert "not finished: t3" in page.inner_text("body") and page.evaluate("window.pwned") is None
    keep(page, tmp_path / "batch-report.png")
    page.click("a:has-text('t1')")
    page.wait_for_url("**/report/*.html", timeout=10_000)  # the task's page, made beside the report
    assert page.title().startswith("sprout-agent session") and page.evaluate("window.pwned") is None
    assert "<script>" in page.inner_text("div.answer")  # the hostile text shown as text


def test_sessions_export_writes_the_page_or_its_json_twin_0600(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from sprout_agent.config.locations import Locations
    from sprout_agent.faces.cli.commands.sessions import export_command

    sessions = tmp_path / "sessions"
    sessions.mkdir()
    hostile_session(sessions)
    where = Locations(None, sessions, tmp_path, None)
    assert export_command("0123", as_json=False, out=tmp_path / "s.html", locations=where) == 0
    assert (tmp_path / "s.html").read_text().startswith("<!doctype html>")
    assert export_command("0123", as_json=True, out=tmp_path / "s.json", locations=where) == 0
    data = json.loads((tmp_path / "s.json").read_text())
    assert data["cost_usd"] == 0.0123 and [e["kind"] for e in data["entries"]][:2] == ["prompt", "thinking"]
    assert capsys.readouterr().out.split() == [str(tmp_path / "s.html"), str(tmp_path / "s.json")]
    assert {(tmp_path / name).stat().st_mode & 0o777 for name in ("s.html", "s.json")} == {0o600}  # the session's


@pytest.mark.e2e
def test_batch_report_from_the_cli_and_a_directory_that_is_no_batch(tmp_path: Path) -> None:
    from tests.harness import run_agent

    write_batch(tmp_path / "out")
    made = run_agent(tmp_path, ["batch", "report", "out"], fake=None)
    assert made.code == 0 and made.stdout.strip().endswith("report.html"), made.stderr
    nothing = run_agent(tmp_path, ["batch", "report", "."], fake=None)
    assert nothing.code == 2 and "holds no batch" in nothing.stderr


@pytest.mark.e2e
def test_a_batch_record_with_odd_fields_still_reports_and_the_page_is_utf8_whatever_the_locale(tmp_path: Path) -> None:
    import subprocess
    import sys

    (tmp_path / "results.jsonl").write_text('{"id": "a", "status": "ok", "turns": "many", "cost_usd": null}\n')
    write_batch(tmp_path / "out")  # its pages hold "–" and "✓", which neither ASCII nor Latin-1 can encode
    code = "import sys,pathlib;from sprout_agent.faces.pages.batch_report import write_report as w;"
    code += "[w(pathlib.Path(d)) for d in sys.argv[1:]]"
    latin = {**os.environ, "LC_ALL": "en_US.ISO-8859-1", "PYTHONUTF8": "0", "PYTHONIOENCODING": "utf-8"}
    made = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path), str(tmp_path / "out")], env=latin, capture_output=True, timeout=60
    )
    assert made.returncode == 0, made.stderr.decode()
    assert "1 tasks done" in (tmp_path / "report.html").read_text(encoding="utf-8")
