"""Real repositories and directories for the checkpoint tests: a session driven through the headless face in the
test's process (the dev server in-process, the fake API scripting the tool calls), and the Tracker that a rewind
rebuilds from the session's transcript, as `sessions rewind` does in a process of its own."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import pytest

from sprout_agent.checkpoints.timeline import Turn, turns_from
from sprout_agent.checkpoints.tracker import Tracker, checkpoint_roots
from sprout_agent.config.options import Options
from sprout_agent.core.events import Event, Notice
from sprout_agent.session import store
from sprout_agent.session.branches import records_at
from sprout_agent.session.rewinding import RewindOutcome, RewindRequest, rewind_to
from tests.fake_anthropic import FakeAnthropic, Reply, Step, reply
from tests.harness import Run
from tests.headless_here import headless

DEV = {"SPROUT_AGENT_BUILTIN_SERVERS": "dev"}


def git(cwd: Path, *args: str) -> str:
    command = ["git", "-c", "user.name=t", "-c", "user.email=t@t.invalid", "-c", "init.defaultBranch=main", *args]
    return subprocess.run(command, cwd=cwd, check=True, capture_output=True, text=True).stdout


def make_repo(path: Path, files: dict[str, str | bytes]) -> Path:
    """A git repository at `path` with `files` committed on `main`."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q")
    write_files(path, files)
    git(path, "add", "-A")
    git(path, "commit", "-qm", "start")
    return path


def write_files(root: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content)


def git_state(repo: Path) -> dict[str, object]:
    """Everything of the user's git state a checkpoint or a rewind must leave as it was."""
    dot = repo / ".git"
    refs = git(repo, "for-each-ref", "--format=%(refname) %(objectname)")
    reflogs = {p.relative_to(dot / "logs").as_posix(): p.read_bytes() for p in (dot / "logs").rglob("*") if p.is_file()}
    return {
        "HEAD": (dot / "HEAD").read_bytes(),
        "index": (dot / "index").read_bytes(),
        "refs": [line for line in refs.splitlines() if not line.startswith("refs/sprout-agent/")],
        "stash": git(repo, "stash", "list"),
        "reflogs": {k: v for k, v in reflogs.items() if not k.startswith("refs/sprout-agent/")},
        "files in .git": sorted(p.name for p in dot.iterdir()),
    }


@dataclass
class Session:
    """One sprout-agent session in `cwd`, a turn at a time (each turn a headless run resuming the session)."""

    tmp: Path
    monkeypatch: pytest.MonkeyPatch
    cwd: Path
    env: dict[str, str] = field(default_factory=lambda: dict(DEV))
    id: str = field(default_factory=lambda: str(uuid.uuid4()))
    runs: int = 0
    notices: list[str] = field(default_factory=list[str])

    def turn(self, *steps: Step, prompt: str = "go") -> Run:
        """One user turn: the scripted model's replies (tool calls), then "done"."""
        given = {"resume_id": self.id} if self.runs else {"session_id": self.id}
        options = Options(prompt=prompt, cwd=self.cwd, **given)  # pyright: ignore[reportArgumentType]
        for number, block in enumerate(b for step in steps if isinstance(step, Reply) for b in step.blocks):
            if block.get("type") == "tool_use" and block.get("id") is None:
                block["id"] = f"call_{self.runs + 1}_{number}"  # unique in the session, as the API's are
        with FakeAnthropic([*steps, reply("done")]) as fake:
            run = headless(self.tmp, self.monkeypatch, options, fake=fake, env=self.env)
        assert run.code == 0, run.stderr
        self.runs += 1
        return run

    @property
    def data(self) -> Path:
        return self.tmp / "data" / "sprout-agent"

    @property
    def transcript(self) -> Path:
        return self.data / "sessions" / f"{self.id}.jsonl"

    def turns(self) -> list[Turn]:
        return turns_from(records_at(self.transcript))

    def rewind(self, turn: int, *, include: tuple[Path, ...] = (), dry_run: bool = False) -> RewindOutcome:
        """The files' rewind, as another process does it: a Tracker rebuilt from the transcript."""

        async def go() -> RewindOutcome:
            recorder = store.SessionStore.resuming(store.load(self.transcript))
            try:
                tracker = self.tracker(recorder.mark)
                request = RewindRequest(turn, conversation=False, include=[str(p) for p in include], dry_run=dry_run)
                return await rewind_to(tracker, self.transcript, request)
            finally:
                recorder.close()

        return anyio.run(go)

    def tracker(self, write_record: Callable[[dict[str, object]], int] | None = None) -> Tracker:
        def emit(event: Event) -> None:
            if isinstance(event, Notice):
                self.notices.append(event.text)

        roots = checkpoint_roots(str(self.cwd), [])
        return Tracker(
            roots, str(self.cwd), self.data / "checkpoints", self.id, emit=emit, write_record=write_record,
            turns=self.turns(), private=[self.data],
        )  # fmt: skip
