"""scripts/check_git_runner.py, the check that only trust/git_runner.py starts git: each way a module could start
git is found, what merely mentions git is not, and the agent's own tree passes."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts.check_git_runner import check

STARTS_GIT = {
    "a_list_starting_with_git": 'import subprocess\nsubprocess.run(["git", "status"])\n',
    "a_tuple_of_settings_spread_later": 'GIT = ("git", "-c", "x=y")\n',
    "an_absolute_git": 'import subprocess\nsubprocess.Popen(["/usr/bin/git", "ls-files"])\n',
    "a_lookup_on_path": 'import shutil\nfound = shutil.which("git")\n',
    "a_trusted_lookup": 'from sprout_agent.trust.sandbox import trusted_which\ngit = trusted_which("git", ())\n',
    "a_workspace_helper": 'def f(ws):\n    return ws.program("git")\n',
    "a_shell_string": 'import os\nos.system("cd /x && git status")\n',
    "a_shell_string_through_a_name": 'import subprocess\nCMD = "git log"\nsubprocess.run(CMD, shell=True)\n',
    "an_f_string": 'import subprocess\ndef f(d):\n    subprocess.run(f"git -C {d} status", shell=True)\n',
    "an_exec": 'from os import execvp as ex\nex("git", ["git"])\n',
    "anyio": 'import anyio\nasync def f():\n    await anyio.run_process(["sh", "-c", "git status"])\n',
    "asyncio": 'import asyncio\nasync def f():\n    await asyncio.create_subprocess_exec("git", "status")\n',
}
MENTIONS_GIT = (
    'GIT = ".git"\nmessage = f"git {1} took over 2 s"\nPROGRAMS = {"git": len}\n'
    'import subprocess\nsubprocess.run(["rg", "--glob", "!.git/"])\n'
)


@pytest.mark.parametrize("source", STARTS_GIT.values(), ids=STARTS_GIT.keys())
def test_a_module_that_starts_git_outside_the_runner_fails_the_check(tmp_path: Path, source: str) -> None:
    (tmp_path / "bad.py").write_text(source)
    found = check([tmp_path])
    assert len(found) >= 1 and all(line.startswith(f"{tmp_path / 'bad.py'}:") for line in found), found


def test_a_module_that_only_mentions_git_passes(tmp_path: Path) -> None:
    """(The agent's own tree passes: scripts/check runs this check on it.)"""
    (tmp_path / "fine.py").write_text(MENTIONS_GIT)
    assert check([tmp_path]) == []
