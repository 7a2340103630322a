"""What the agent writes of a person's words or a server's output (the servers' log, the prompt history, the
transcripts) is 0600 in 0700 directories, read by a second local account where the home directory is open to
others (0755, a common default): trust/private_files.py."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from sprout_agent.faces.terminal.input import _history  # pyright: ignore[reportPrivateUsage]
from tests.fake_anthropic import FakeAnthropic, reply
from tests.harness import FAKE_MCP, run_agent
from tests.other_account import Account, other_account_or_skip


@pytest.fixture
def open_home() -> Iterator[Path]:
    """A home directory as many systems make it: anybody may enter it and list it (pytest's are 0700)."""
    home = Path(tempfile.mkdtemp(prefix="sprout-home-", dir="/tmp"))
    try:
        home.chmod(0o755)
        yield home
    finally:
        shutil.rmtree(home, ignore_errors=True)


def reads(account: Account, path: Path) -> bool:
    try:
        account.run(f"cat '{path}'", Path("/"))
    except subprocess.CalledProcessError:
        return False
    return True


@pytest.fixture
def other() -> Account:
    return other_account_or_skip()


@pytest.mark.e2e
def test_another_local_user_cannot_read_the_servers_log_a_verbose_run_wrote(open_home: Path, other: Account) -> None:
    """The servers' stderr (a server that prints its password when it connects) was 0644 in 0755 directories."""
    home = open_home
    printing = f"echo 'connecting with password hunter2-very-secret' >&2; exec {sys.executable} {FAKE_MCP}"
    with FakeAnthropic([reply("hello")]) as fake:
        run = run_agent(
            home, ["-p", "hi", "--verbose"], fake=fake, servers={"db": {"command": "sh", "args": ["-c", printing]}}
        )
    assert run.code == 0, run.stderr
    log = next(home.rglob("servers.log"))
    assert "hunter2-very-secret" in log.read_text()  # the log is there, with the server's words
    assert (log.stat().st_mode & 0o777, log.parent.stat().st_mode & 0o777) == (0o600, 0o700)
    assert not reads(other, log)


@pytest.mark.e2e
def test_another_local_user_cannot_read_the_prompt_history_and_an_older_open_one_is_tightened(
    open_home: Path, other: Account
) -> None:
    home = open_home
    history_file = home / "data" / "sprout-agent" / "prompt-history"
    history_file.parent.mkdir(parents=True, mode=0o755)
    history_file.parent.chmod(0o755)
    history_file.write_text("\n# earlier\n+an older prompt\n")
    history_file.chmod(0o644)  # as an older version left it
    _history(history_file).store_string("here is my key: sk-ant-api03-pasted-into-the-prompt")
    assert "pasted-into-the-prompt" in history_file.read_text()
    assert (history_file.stat().st_mode & 0o777, history_file.parent.stat().st_mode & 0o777) == (0o600, 0o700)
    assert not reads(other, history_file)
