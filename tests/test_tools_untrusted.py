"""The dev tools in a hostile working directory: flag-like and non-UTF-8 names, FIFOs, huge files, hard links."""

from __future__ import annotations

import os
import shutil
import stat
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

needs_rg = pytest.mark.skipif(shutil.which("rg") is None, reason="ripgrep (rg) is not installed")
# Would mark that it ran, then pass the file through (as a ripgrep --pre preprocessor does).
EVIL = '#!/bin/sh\ntouch "$SPROUT_TEST_MARK"\ncat "$1"\n'


@pytest.fixture
async def client(root: Path) -> AsyncIterator[Client]:
    from mcp import Client

    from sprout_agent.tools import dev
    from sprout_agent.trust.workspace import Workspace

    async with Client(dev.create_server(Workspace(str(root)))) as c:
        yield c


@pytest.fixture
def evil(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A program `sprout-evil` on PATH; the returned path exists once it has run."""
    from sprout_agent.tools._grep import NO_RG_ENV

    bin_dir = tmp_path / "evil-bin"
    bin_dir.mkdir()
    (bin_dir / "sprout-evil").write_text(EVIL)
    (bin_dir / "sprout-evil").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("SPROUT_TEST_MARK", str(tmp_path / "ran"))
    monkeypatch.delenv(NO_RG_ENV, raising=False)
    return tmp_path / "ran"


# --- grep: names and configs are never flags ------------------------------------------------------


@needs_rg
@pytest.mark.e2e
async def test_grep_path_named_like_a_flag_is_searched_not_parsed(client: Client, root: Path, evil: Path) -> None:
    (root / "--pre=sprout-evil").write_text("needle\n")
    (root / "--pre=sh").write_text("needle too\n")
    (root / "other.txt").write_text("needle\n")
    for name in ("--pre=sprout-evil", "--pre=sh"):
        assert await call_tool(client, "grep", pattern="needle", path=name) == (False, name)
        _, text = await call_tool(client, "grep", pattern="needle", path=name, output_mode="content")
        assert text == f"{name}:1:{(root / name).read_text().strip()}"
    assert not evil.exists()


@needs_rg
@pytest.mark.e2e
async def test_grep_ignores_a_ripgrep_config_that_adds_flags(
    client: Client, root: Path, evil: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (root / ".ripgreprc").write_text("--pre=sprout-evil\n")
    (root / "a.txt").write_text("needle\n")
    monkeypatch.setenv("RIPGREP_CONFIG_PATH", str(root / ".ripgreprc"))
    assert await call_tool(client, "grep", pattern="needle", output_mode="content") == (False, "a.txt:1:needle")
    assert not evil.exists()


@pytest.mark.e2e
async def test_grep_runs_ripgrep_without_the_agents_secrets(
    client: Client, root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sprout_agent.tools._grep import NO_RG_ENV

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "rg").write_text(f'#!/bin/sh\nenv > {tmp_path}/rg.env\nprintf "%s\\n" "$@" > {tmp_path}/rg.args\n')
    (bin_dir / "rg").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-must-not-leak")
    monkeypatch.setenv("GITHUB_PAT", "ghp_x")
    monkeypatch.delenv(NO_RG_ENV, raising=False)
    (root / "a.txt").write_text("needle\n")
    await call_tool(client, "grep", pattern="-e", path="a.txt")
    env = (tmp_path / "rg.env").read_text()
    assert "sk-ant-must-not-leak" not in env and "GITHUB_PAT" not in env and "PATH=" in env
    args = (tmp_path / "rg.args").read_text().splitlines()
    assert "--no-config" in args
    assert args[-4:] == ["--regexp", "-e", "--", "a.txt"]


# --- names that are not UTF-8 ---------------------------------------------------------------------


def _utf8(text: str) -> str:
    text.encode("utf-8")  # raises on a lone surrogate, as the agent's JSON encoder would
    return text


@pytest.mark.e2e
async def test_non_utf8_file_names_come_back_escaped_from_every_tool(
    client: Client, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sprout_agent.tools._grep import NO_RG_ENV

    base = os.fsencode(root)
    with open(base + b"/bad\xff.txt", "wb") as f:
        f.write(b"needle\n")
    os.mkdir(base + b"/dir\xfe")
    os.symlink(b"gone\xfd.txt", base + b"/dangling")
    os.symlink(b"dir\xfe", base + b"/to_dir")
    os.symlink(b"bad\xff.txt", base + b"/to_bad")
    assert await call_tool(client, "glob", pattern="*.txt") == (False, "bad\\xff.txt")
    for no_rg in ("0", "1"):
        monkeypatch.setenv(NO_RG_ENV, no_rg)
        assert await call_tool(client, "grep", pattern="needle", output_mode="content") == (
            False,
            "bad\\xff.txt:1:needle",
        )
    assert await call_tool(client, "read", file_path="dangling") == (True, "file not found: gone\\xfd.txt")
    error, text = await call_tool(client, "write", file_path="to_dir", content="x")
    assert error and _utf8(text).startswith("dir\\xfe is a directory")
    error, text = await call_tool(client, "edit", file_path="to_bad", old_string="needle", new_string="pin")
    assert error and "refusing to modify bad\\xff.txt" in _utf8(text)
    error, text = await call_tool(client, "bash", command="ls")
    assert not error and "bad\ufffd.txt" in _utf8(text)


# --- FIFOs, devices and huge files ----------------------------------------------------------------


async def test_read_of_a_fifo_is_refused_at_once_instead_of_blocking(client: Client, root: Path) -> None:
    os.mkfifo(root / "pipe")
    with anyio.fail_after(bounded(10)):
        assert await call_tool(client, "read", file_path="pipe") == (
            True,
            "pipe is a FIFO (named pipe), not a regular file",
        )
        assert await call_tool(client, "read", file_path="/dev/zero") == (
            True,
            "/dev/zero is a character device, not a regular file",
        )
        assert await call_tool(client, "write", file_path="pipe", content="x") == (
            True,
            "pipe is a FIFO (named pipe), not a regular file",
        )
    assert stat.S_ISFIFO(os.stat(root / "pipe").st_mode)


@pytest.mark.e2e
async def test_grep_fallback_skips_a_fifo_instead_of_blocking(
    client: Client, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sprout_agent.tools._grep import NO_RG_ENV

    os.mkfifo(root / "pipe")
    (root / "a.txt").write_text("needle\n")
    monkeypatch.setenv(NO_RG_ENV, "1")
    with anyio.fail_after(bounded(10)):
        assert await call_tool(client, "grep", pattern="needle") == (False, "a.txt")
        error, _ = await call_tool(client, "grep", pattern="needle", path="pipe")
        assert error


async def test_read_with_a_limit_stops_reading_a_2_gb_file_at_the_limit(client: Client, root: Path) -> None:
    big = root / "big.log"
    with open(big, "wb") as f:
        f.write(b"".join(b"line %d\n" % i for i in range(1, 2001)))
        f.truncate(2 * 1024**3)  # sparse: no disk used, and ~2 GB of NULs on one last "line"
    with anyio.fail_after(bounded(10)):
        error, text = await call_tool(client, "read", file_path="big.log", limit=10)
    assert not error
    assert text.splitlines()[-1] == (
        "... [limit of 10 lines reached: showing lines 1-10 of a 2147483648-byte file; "
        "call read with offset=11 to continue]"
    )


async def test_read_of_a_huge_single_line_reads_only_its_start(client: Client, root: Path) -> None:
    (root / "one.min.js").write_bytes(b"x" * (20 * 1024 * 1024))
    assert await call_tool(client, "read", file_path="one.min.js") == (
        False,
        "     1\t" + "x" * 2000 + "... [line truncated: 20971520 bytes]",
    )


# --- hard links -----------------------------------------------------------------------------------


async def test_write_and_edit_through_a_hard_link_leave_the_outside_file_alone(client: Client, root: Path) -> None:
    outside = root.parent / "outside.txt"
    outside.write_text("keep me\n")
    os.link(outside, root / "linked.txt")
    os.chmod(root / "linked.txt", 0o640)
    await call_tool(client, "read", file_path="linked.txt")
    error, _ = await call_tool(client, "edit", file_path="linked.txt", old_string="keep", new_string="edited")
    assert not error
    assert (root / "linked.txt").read_text() == "edited me\n"
    assert stat.S_IMODE(os.stat(root / "linked.txt").st_mode) == 0o640
    assert not (await call_tool(client, "write", file_path="linked.txt", content="written\n"))[0]
    assert (root / "linked.txt").read_text() == "written\n"
    assert outside.read_text() == "keep me\n"
    assert sorted(os.listdir(root)) == ["linked.txt"]  # no temporary file left behind
