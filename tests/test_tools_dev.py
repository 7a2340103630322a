"""The built-in dev server: read, write, edit, glob and grep on temporary directories, through MCP."""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import pytest

from tests.bounds import bounded
from tests.harness import call_tool

if TYPE_CHECKING:
    from mcp import Client

pytestmark = pytest.mark.anyio

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


@pytest.fixture
async def client(root: Path) -> AsyncIterator[Client]:
    from mcp import Client

    from sprout_agent.tools import dev
    from sprout_agent.trust.workspace import Workspace

    async with Client(dev.create_server(Workspace(str(root)))) as c:
        yield c


# --- read -----------------------------------------------------------------------------------------


async def test_read_numbers_lines_and_pages_with_offset_and_limit(client: Client, root: Path) -> None:
    (root / "f.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    assert await call_tool(client, "read", file_path="f.txt", offset=3, limit=2) == (
        False,
        "     3\tline 3\n     4\tline 4\n"
        "... [limit of 2 lines reached: showing lines 3-4 of 10; call read with offset=5 to continue]",
    )
    error, text = await call_tool(client, "read", file_path=str(root / "f.txt"))
    assert not error and text.endswith("    10\tline 10")
    assert await call_tool(client, "read", file_path="f.txt", offset=50) == (
        False,
        "(offset 50 is past the end of the file, which has 10 lines)",
    )


async def test_read_truncates_long_lines_and_caps_output(client: Client, root: Path) -> None:
    (root / "long.txt").write_text("x" * 3000 + "\n")
    _, text = await call_tool(client, "read", file_path="long.txt")
    assert text == "     1\t" + "x" * 2000 + "... [line truncated: 3000 chars]"
    (root / "big.txt").write_text(("y" * 1000 + "\n") * 1000)
    _, text = await call_tool(client, "read", file_path="big.txt")
    assert len(text) < 270 * 1024
    assert "output cap of 256 KiB reached" in text and "of 1000; call read with offset=" in text


async def test_read_failures_are_clear_tool_errors(client: Client, root: Path) -> None:
    (root / "blob.bin").write_bytes(b"\x7fELF\x00\x01\x02" * 10)
    (root / "empty.txt").write_text("")
    error, text = await call_tool(client, "read", file_path="blob.bin")
    assert error and "blob.bin is a binary file (70 bytes)" in text
    assert await call_tool(client, "read", file_path="missing.txt") == (True, "file not found: missing.txt")
    error, text = await call_tool(client, "read", file_path=".")
    assert error and "is a directory" in text
    assert await call_tool(client, "read", file_path="empty.txt") == (False, "(the file is empty)")
    error, text = await call_tool(client, "read", file_path="empty.txt", limit="ten")
    assert error and "'limit' of read must be of type integer" in text
    assert await call_tool(client, "nope") == (
        True,
        "unknown tool 'nope'; available: read, write, edit, glob, grep, bash",
    )


async def test_read_returns_images_as_image_content(client: Client, root: Path) -> None:
    from mcp.types import ImageContent

    (root / "dot.png").write_bytes(PNG)
    with anyio.fail_after(bounded(30)):
        result = await client.call_tool("read", {"file_path": "dot.png"})
    assert not result.is_error
    [image] = result.content
    assert isinstance(image, ImageContent)
    assert image.mime_type == "image/png" and base64.b64decode(image.data) == PNG


async def test_read_decodes_latin1(client: Client, root: Path) -> None:
    (root / "l1.txt").write_bytes("café\n".encode("latin-1"))
    assert await call_tool(client, "read", file_path="l1.txt") == (False, "     1\tcafé")


# --- write ----------------------------------------------------------------------------------------


async def test_write_creates_parents_and_refuses_unread_or_changed_files(client: Client, root: Path) -> None:
    assert await call_tool(client, "write", file_path="a/b/new.txt", content="one\n") == (
        False,
        "Created a/b/new.txt (1 lines, 4 bytes)",
    )
    assert await call_tool(client, "write", file_path="a/b/new.txt", content="two\n") == (
        False,
        "Overwrote a/b/new.txt (1 lines, 4 bytes)",
    )
    (root / "theirs.txt").write_text("theirs\n")
    error, text = await call_tool(client, "write", file_path="theirs.txt", content="mine\n")
    assert error and "has not been read in this session; read it first" in text
    await call_tool(client, "read", file_path="theirs.txt")
    (root / "theirs.txt").write_text("changed behind our back\n")
    assert await call_tool(client, "write", file_path="theirs.txt", content="mine\n") == (
        True,
        "theirs.txt: file changed on disk since it was last read; read it again first",
    )
    assert (root / "theirs.txt").read_text() == "changed behind our back\n"
    await call_tool(client, "read", file_path="theirs.txt")
    assert not (await call_tool(client, "write", file_path="theirs.txt", content="mine\n"))[0]
    assert (root / "theirs.txt").read_text() == "mine\n"


async def test_write_notices_a_same_size_change_by_mtime(client: Client, root: Path) -> None:
    target = root / "same.txt"
    target.write_text("aaaa")
    await call_tool(client, "read", file_path="same.txt")
    target.write_text("bbbb")
    st = target.stat()
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    error, text = await call_tool(client, "write", file_path="same.txt", content="cccc")
    assert error and "changed on disk" in text


async def test_writes_cannot_escape_through_dotdot_or_symlinks(client: Client, root: Path) -> None:
    outside = root.parent / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("keep\n")
    (root / "link_dir").symlink_to(outside)
    (root / "link_file").symlink_to(outside / "secret.txt")
    attempts = ["../outside/new.txt", "link_dir/new.txt", "link_file", str(outside / "abs.txt"), "a/../../x"]
    for path in attempts:
        error, text = await call_tool(client, "write", file_path=path, content="pwned\n")
        assert error and "outside the working directory" in text, (path, text)
    await call_tool(client, "read", file_path="link_file")  # reads may go anywhere
    error, text = await call_tool(client, "edit", file_path="link_file", old_string="keep", new_string="pwned")
    assert error and "outside the working directory" in text
    assert sorted(os.listdir(outside)) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == "keep\n"


async def test_allow_outside_permits_writes_elsewhere(root: Path) -> None:
    from mcp import Client

    from sprout_agent.tools import dev
    from sprout_agent.trust.workspace import Workspace

    target = root.parent / "elsewhere.txt"
    async with Client(dev.create_server(Workspace(str(root), allow_outside=True))) as c:
        assert not (await call_tool(c, "write", file_path="../elsewhere.txt", content="ok\n"))[0]
    assert target.read_text() == "ok\n"


# --- edit -----------------------------------------------------------------------------------------


async def test_edit_replaces_a_unique_string_and_returns_a_diff(client: Client, root: Path) -> None:
    (root / "m.py").write_text("def f():\n    return 1\n")
    await call_tool(client, "read", file_path="m.py")
    error, text = await call_tool(client, "edit", file_path="m.py", old_string="return 1", new_string="return 2")
    assert not error
    assert text == (
        "Edited m.py: 1 replacement(s)\n--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n"
        " def f():\n-    return 1\n+    return 2\n"
    )
    assert (root / "m.py").read_text() == "def f():\n    return 2\n"


async def test_edit_failures_say_why(client: Client, root: Path) -> None:
    (root / "d.txt").write_text("x = 1\nx = 1\n")
    error, text = await call_tool(client, "edit", file_path="d.txt", old_string="x", new_string="y")
    assert error and "has not been read in this session" in text
    await call_tool(client, "read", file_path="d.txt")
    error, text = await call_tool(client, "edit", file_path="d.txt", old_string="x = 1", new_string="y = 1")
    assert error and "occurs 2 times in d.txt" in text and "replace_all" in text
    error, text = await call_tool(client, "edit", file_path="d.txt", old_string="zzz", new_string="y")
    assert error and "old_string not found in d.txt" in text
    error, text = await call_tool(client, "edit", file_path="d.txt", old_string="x", new_string="x")
    assert error and "identical" in text
    error, text = await call_tool(client, "edit", file_path="nope.txt", old_string="a", new_string="b")
    assert (error, text) == (True, "file not found: nope.txt")
    error, text = await call_tool(
        client, "edit", file_path="d.txt", old_string="x = 1", new_string="y = 2", replace_all=True
    )
    assert not error and text.startswith("Edited d.txt: 2 replacement(s)")
    assert (root / "d.txt").read_text() == "y = 2\ny = 2\n"


async def test_edit_keeps_crlf_line_endings_and_latin1(client: Client, root: Path) -> None:
    (root / "win.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    await call_tool(client, "read", file_path="win.txt")
    error, _ = await call_tool(client, "edit", file_path="win.txt", old_string="one\ntwo", new_string="1\n2\n2.5")
    assert not error
    assert (root / "win.txt").read_bytes() == b"1\r\n2\r\n2.5\r\nthree\r\n"
    (root / "l1.txt").write_bytes("café = 1\n".encode("latin-1"))
    await call_tool(client, "read", file_path="l1.txt")
    assert not (await call_tool(client, "edit", file_path="l1.txt", old_string="1", new_string="crème"))[0]
    assert (root / "l1.txt").read_bytes() == "café = crème\n".encode("latin-1")


# --- glob -----------------------------------------------------------------------------------------


def _git_repo(root: Path) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=bounded(30))


def _touch(path: Path, mtime: int, text: str = "x\n") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.utime(path, (mtime, mtime))


@pytest.mark.e2e
async def test_glob_respects_gitignore_and_lists_newest_first(client: Client, root: Path) -> None:
    _git_repo(root)
    (root / ".gitignore").write_text("*.log\nbuild/\n")
    _touch(root / "old.py", 1_000_000)
    _touch(root / "src" / "new.py", 3_000_000)
    _touch(root / "src" / "mid.py", 2_000_000)
    _touch(root / "debug.log", 4_000_000)
    _touch(root / "build" / "gen.py", 4_000_000)
    _touch(root / "node_modules" / "dep.py", 4_000_000)
    assert await call_tool(client, "glob", pattern="**/*.py") == (False, "src/new.py\nsrc/mid.py\nold.py")
    assert await call_tool(client, "glob", pattern="*.py") == (False, "old.py")
    assert await call_tool(client, "glob", pattern="*.{py,log}", path="src") == (False, "src/new.py\nsrc/mid.py")
    assert await call_tool(client, "glob", pattern="**/*.rs") == (False, "No files match '**/*.rs' under .")


@pytest.mark.e2e
async def test_glob_outside_git_skips_tool_dirs_and_caps_results(client: Client, root: Path) -> None:
    for i in range(205):
        _touch(root / "many" / f"f{i:03}.txt", 1_000_000 + i)
    _touch(root / ".venv" / "lib.txt", 9_000_000)
    _touch(root / "__pycache__" / "c.txt", 9_000_000)
    error, text = await call_tool(client, "glob", pattern="**/*.txt")
    lines = text.splitlines()
    assert not error and len(lines) == 201
    assert lines[0] == "many/f204.txt" and lines[199] == "many/f005.txt"
    assert lines[200] == "... and 5 more (narrow the pattern or path)"
    error, text = await call_tool(client, "glob", pattern="*", path="missing")
    assert (error, text) == (True, "not a directory: missing")


# --- grep -----------------------------------------------------------------------------------------


def _grep_tree(root: Path) -> None:
    _git_repo(root)
    (root / ".gitignore").write_text("ignored/\n")
    files = {
        "a.txt": "x\nfoo\ny\n",
        "a-c/c.txt": "FOO upper\n",
        "a/b.txt": "foo\n",
        "sub/b.py": "z\nfoo\nq\nr\ns\nfoo\nt\nfoo\n",
        "sub/crlf.py": "foo\r\nbar\r\n",
        "ignored/x.txt": "foo\n",
        "node_modules/m.txt": "foo\n",
        ".hidden/h.txt": "foo\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(text.encode())
    (root / "bin.dat").write_bytes(b"foo\x00bar\n")


GREP_CASES: list[dict[str, object]] = [
    {"pattern": "foo"},
    {"pattern": "foo", "output_mode": "content"},
    {"pattern": "foo", "output_mode": "content", "context": 1},
    {"pattern": "foo", "output_mode": "count", "ignore_case": True},
    {"pattern": "fo+", "output_mode": "content", "glob": "*.py"},
    {"pattern": "foo", "output_mode": "content", "glob": "sub/*.py", "context": 2},
    {"pattern": "foo", "output_mode": "content", "path": "sub", "context": 1},
    {"pattern": "foo", "output_mode": "content", "path": "sub/b.py"},
    {"pattern": "^bar$", "output_mode": "content"},
    {"pattern": "nothing here"},
    {"pattern": "foo", "path": "bin.dat", "output_mode": "content"},
    {"pattern": "foo", "glob": "nowhere/*.txt"},
]


@pytest.mark.e2e
async def test_grep_fallback_output_format(client: Client, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sprout_agent.tools._grep import NO_RG_ENV

    _grep_tree(root)
    monkeypatch.setenv(NO_RG_ENV, "1")
    assert await call_tool(client, "grep", pattern="foo") == (
        False,
        ".hidden/h.txt\na/b.txt\na.txt\nsub/b.py\nsub/crlf.py",
    )
    assert await call_tool(client, "grep", pattern="foo", output_mode="content", path="sub", context=1) == (
        False,
        "sub/b.py-1-z\nsub/b.py:2:foo\nsub/b.py-3-q\n--\nsub/b.py-5-s\nsub/b.py:6:foo\nsub/b.py-7-t\n"
        "sub/b.py:8:foo\n--\nsub/crlf.py:1:foo\nsub/crlf.py-2-bar",
    )
    assert await call_tool(client, "grep", pattern="foo", output_mode="count", ignore_case=True, glob="*.txt") == (
        False,
        ".hidden/h.txt:1\na/b.txt:1\na-c/c.txt:1\na.txt:1",
    )
    assert await call_tool(client, "grep", pattern="nothing") == (False, "No matches for 'nothing' in .")
    error, text = await call_tool(client, "grep", pattern="(unclosed")
    assert error and text.startswith("grep failed:")


@pytest.mark.skipif(shutil.which("rg") is None, reason="ripgrep (rg) is not installed")
@pytest.mark.e2e
async def test_grep_ripgrep_and_fallback_give_identical_output(
    client: Client, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sprout_agent.tools._grep import NO_RG_ENV

    _grep_tree(root)
    for case in GREP_CASES:
        monkeypatch.delenv(NO_RG_ENV, raising=False)
        with_rg = await call_tool(client, "grep", **case)
        monkeypatch.setenv(NO_RG_ENV, "1")
        fallback = await call_tool(client, "grep", **case)
        assert with_rg == fallback, case
        assert not with_rg[0]
    monkeypatch.delenv(NO_RG_ENV, raising=False)
    error, text = await call_tool(client, "grep", pattern="(unclosed")
    assert error and text.startswith("grep failed:")


@pytest.mark.e2e
async def test_grep_caps_its_output(client: Client, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sprout_agent.tools._grep import NO_RG_ENV

    (root / "many.txt").write_text("hit\n" * 1000)
    for no_rg in ("0", "1"):
        monkeypatch.setenv(NO_RG_ENV, no_rg)
        _, text = await call_tool(client, "grep", pattern="hit", output_mode="content")
        lines = text.splitlines()
        assert len(lines) == 251 and lines[-1].startswith("... [output truncated at 250 lines")
