"""diffs.preview: the diff an edit or write would make, from the file on disk, for the `ask` prompt; and
diffs.sides, a unified diff read back into old and new text (ACP). The preview is checked against the diff
the dev server then really reports, so the two cannot drift apart."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sprout_agent.trust.diffs import MAX_PREVIEW_BYTES, preview, sides

OLD = "one\ntwo\nthree\n"


def test_an_edit_preview_is_the_unified_diff_of_the_replacement(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text(OLD)
    diff = preview("dev__edit", {"file_path": "a.txt", "old_string": "two", "new_string": "2"}, str(tmp_path))
    assert diff == "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n"
    assert preview("edit", {"file_path": "a.txt", "old_string": "two", "new_string": "2"}, str(tmp_path)) == diff


def test_an_edit_preview_keeps_a_crlf_files_line_ends_as_the_tool_does(tmp_path: Path) -> None:
    (tmp_path / "w.txt").write_bytes(b"one\r\ntwo\r\n")
    diff = preview("dev__edit", {"file_path": "w.txt", "old_string": "one\ntwo", "new_string": "1\n2"}, str(tmp_path))
    assert diff is not None and "-one\n-two\n+1\n+2\n" in diff


@pytest.mark.parametrize(
    "arguments",
    [
        {"file_path": "a.txt", "old_string": "absent", "new_string": "x"},  # the tool would refuse: no match
        {"file_path": "a.txt", "old_string": "o", "new_string": "0"},  # ambiguous without replace_all
        {"file_path": "a.txt", "old_string": "two", "new_string": "two"},
        {"file_path": "missing.txt", "old_string": "a", "new_string": "b"},
        {"file_path": "a.txt"},
    ],
)
def test_an_edit_the_tool_would_refuse_has_no_preview(tmp_path: Path, arguments: dict[str, object]) -> None:
    (tmp_path / "a.txt").write_text(OLD)
    assert preview("dev__edit", arguments, str(tmp_path)) is None


def test_replace_all_previews_every_occurrence(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text(OLD)
    arguments = {"file_path": "a.txt", "old_string": "o", "new_string": "0", "replace_all": True}
    diff = preview("dev__edit", arguments, str(tmp_path))
    assert diff is not None and "+0ne\n+tw0\n" in diff


def test_a_write_preview_diffs_against_the_old_content_or_dev_null_for_a_new_file(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text(OLD)
    over = preview("dev__write", {"file_path": "a.txt", "content": "one\n"}, str(tmp_path))
    assert over == "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1 @@\n one\n-two\n-three\n"
    new = preview("dev__write", {"file_path": "sub/new.txt", "content": "hi"}, str(tmp_path))
    assert new == "--- /dev/null\n+++ b/sub/new.txt\n@@ -0,0 +1 @@\n+hi\n"
    assert preview("dev__write", {"file_path": "a.txt", "content": OLD}, str(tmp_path)) == ""  # no change


def test_a_preview_is_clipped_with_a_note_of_what_it_left_out(tmp_path: Path) -> None:
    content = "".join(f"line {i}\n" for i in range(1000))
    diff = preview("dev__write", {"file_path": "big.txt", "content": content}, str(tmp_path))
    assert diff is not None
    lines = diff.splitlines()
    assert len(lines) == 401 and lines[-1] == "… 603 more lines of the diff not shown"


def test_no_preview_for_what_cannot_be_read_as_text_or_is_not_the_dev_servers(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")  # never waited on
    (tmp_path / "bin").write_bytes(b"\0\1\2")
    (tmp_path / "huge").write_bytes(b"x" * (MAX_PREVIEW_BYTES + 1))
    (tmp_path / "locked").write_text(OLD)
    (tmp_path / "locked").chmod(0)
    cwd = str(tmp_path)
    for name in ("pipe", "bin", "huge"):
        assert preview("dev__write", {"file_path": name, "content": "x"}, cwd) is None, name
    if os.geteuid() != 0:  # root reads anything
        assert preview("dev__edit", {"file_path": "locked", "old_string": "one", "new_string": "1"}, cwd) is None
    assert preview("other__edit", {"file_path": "a", "old_string": "a", "new_string": "b"}, cwd) is None
    assert preview("dev__read", {"file_path": "locked"}, cwd) is None


def test_sides_reads_each_hunk_back_into_old_and_new_text() -> None:
    diff = "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n@@ -9 +9 @@\n-y\n+Y\n… 3 more lines of the diff not shown\n"
    assert sides(diff) == [("a\nb\n", "a\nB\n"), ("y\n", "Y\n")]
    assert sides("--- /dev/null\n+++ b/n\n@@ -0,0 +1 @@\n+new\n") == [(None, "new\n")]
    assert sides("") == []


@pytest.mark.anyio
async def test_the_preview_is_the_diff_the_dev_server_then_reports(tmp_path: Path) -> None:
    from mcp import Client

    from sprout_agent.tools import dev
    from sprout_agent.tools._server import DIFF_META
    from sprout_agent.trust.workspace import Workspace

    (tmp_path / "a.txt").write_text(OLD)
    edit = {"file_path": "a.txt", "old_string": "two", "new_string": "2"}
    write = {"file_path": "a.txt", "content": "fresh\n"}
    async with Client(dev.create_server(Workspace(str(tmp_path)))) as client:
        await client.call_tool("read", {"file_path": "a.txt"})
        for tool, arguments in (("edit", edit), ("write", write)):
            expected = preview(f"dev__{tool}", arguments, str(tmp_path))
            result = await client.call_tool(tool, arguments)
            assert not result.is_error and result.meta is not None
            assert result.meta[DIFF_META] == expected
            assert DIFF_META not in result.content[0].text  # type: ignore[union-attr]
