"""The `subagents` group of scripts/bench: what a subagent costs and saves (docs/subagents.md), through the real CLI
and the fake API.

- The time a child adds before its first request: from the parent's reply with the `Agent` call (sent by the fake)
  to the child's first request (arrived), against a plain tool round (dev__glob) of the same session shape.
- The tokens a delegated search saves the parent: the parent's last request with the search done by its own
  grep, and with the search delegated to an Explore child (whose grep output stays in the child's context).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from tests.fake_anthropic import FakeAnthropic, Recorded, reply, tool_use
from tests.harness import agent_command, agent_env

TASK = {"description": "find TODOs", "prompt": "List the files with a TODO and count them.", "subagent_type": "Explore"}
ENV = {"SPROUT_AGENT_BUILTIN_SERVERS": "dev,agent", "SPROUT_AGENT_CHECKPOINTS": "off"}


def make_tree(root: Path, files: int = 300) -> None:
    """A code base with a TODO in every file: a search whose raw output is large."""
    for number in range(files):
        path = root / f"pkg{number // 50}" / f"module_{number}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"def f{number}():\n    # TODO: handle the error case of f{number} properly\n    pass\n")


def child_start(spawn: Any, check: Any, runs: int) -> tuple[list[float], list[float]]:
    """(seconds from the Agent call to the child's first request, seconds of a plain dev__glob round), per run."""
    starts: list[float] = []
    plain: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        repo.mkdir()
        make_tree(repo, 20)
        for _ in range(runs):
            script = [reply(tool_use("agent__task", TASK)), reply("20 files"), reply("done")]
            with FakeAnthropic(script, auto_usage=True) as fake:
                run = check(spawn(agent_command(["-p", "go"]), agent_env(Path(tmp), fake, ENV), repo, fake), 3)
            starts.append(run.rounds()[0])
            script = [reply(tool_use("dev__glob", {"pattern": "*.py"})), reply("done")]
            with FakeAnthropic(script, auto_usage=True) as fake:
                run = check(spawn(agent_command(["-p", "go"]), agent_env(Path(tmp), fake, ENV), repo, fake), 2)
            plain.append(run.rounds()[0])
    return starts, plain


def tokens_saved(spawn: Any, check: Any) -> tuple[int, int]:
    """(the parent's last request in tokens, searching itself; the same with the search delegated)."""
    grep = tool_use("dev__grep", {"pattern": "TODO", "output_mode": "content"})
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        repo.mkdir()
        make_tree(repo)
        itself = [reply(grep), reply("300 files have a TODO.")]
        with FakeAnthropic(itself, auto_usage=True) as fake:
            run = check(spawn(agent_command(["-p", "go"]), agent_env(Path(tmp), fake, ENV), repo, fake), 2)
        alone = _tokens(run.requests[-1])
        delegated = [reply(tool_use("agent__task", TASK)), reply(grep), reply("300 files, pkg0-pkg5"), reply("300")]
        with FakeAnthropic(delegated, auto_usage=True) as fake:
            run = check(spawn(agent_command(["-p", "go"]), agent_env(Path(tmp), fake, ENV), repo, fake), 4)
        with_child = _tokens(run.requests[-1])
    return alone, with_child


def _tokens(request: Recorded) -> int:
    """The request's size in tokens, at the usual 4 characters a token (its messages, system and tools)."""
    return len(json.dumps(request.body)) // 4
