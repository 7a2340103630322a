"""For your own tests (docs/cassettes.md, "In your tests"): the agent driven by a recorded conversation, in a scratch
copy of a repository, with your hooks, MCP servers and tools running for real and no key, no network. `run_cassette`
works from any test runner; `replayer(tmp_path)` is what a pytest fixture returns (no pytest needed here)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Never handed to the run: a replay needs no key, and sends nothing anywhere; nor a recording or replay of the caller's.
_LEFT_OUT = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "SPROUT_AGENT_RECORD")


@dataclass(frozen=True)
class Replayed:
    """How the run ended and what it did: `events` are its stream-json lines (docs/stream-json.md), `workdir` the
    scratch repository as the session left it."""

    exit_code: int
    events: list[dict[str, Any]]
    stderr: str
    workdir: Path

    @property
    def result(self) -> dict[str, Any]:
        """The run's last `result` line (empty if it wrote none)."""
        empty: dict[str, Any] = {}
        return next((e for e in reversed(self.events) if e.get("type") == "result"), empty)

    def of(self, subtype: str) -> list[dict[str, Any]]:
        """The `system` lines of one subtype (`hook_objected`, `tool_finished`…)."""
        return [e for e in self.events if e.get("type") == "system" and e.get("subtype") == subtype]

    def tool_calls(self) -> list[dict[str, Any]]:
        """Each tool call the model made, as the stream shows it (`name`, `input`, `id`)."""
        messages = [e.get("message", {}) for e in self.events if e.get("type") == "assistant"]
        return [b for m in messages for b in m.get("content", []) if b.get("type") == "tool_use"]


Replaying = Callable[..., Replayed]  # the `sprout_replay` fixture's type, for your test's annotation


def run_cassette(
    cassette: str | Path,
    *,
    repo: str | Path | None = None,
    prompt: str | None = None,
    servers: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    strict: bool = True,
    args: Sequence[str] = (),
    workdir: str | Path | None = None,
    timeout: float = 600.0,
) -> Replayed:
    """Runs `sprout-agent -p` on `cassette` in a copy of `repo` (an empty directory without one) under `workdir` (a
    new temporary directory without one). `prompt`: the recorded one unless given; `servers`: `.mcp.json`'s
    `mcpServers` (the only servers: none of your user or project config); `env`: over this process's, less the key;
    `strict=False`: lenient replay. The agent's own files (sessions, config) stay under `workdir` too."""
    from sprout_agent.model.cassettes.format import load

    path = Path(cassette).resolve()
    recorded = load(path).header.get("prompt")
    chosen = prompt if prompt is not None else recorded
    if not isinstance(chosen, str) or not chosen:
        raise ValueError(f"{path}: no prompt recorded: pass prompt=")
    base = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix="sprout-cassette-"))
    work = base / "repo"
    if repo is not None:
        shutil.copytree(repo, work, symlinks=True)
    else:
        work.mkdir(parents=True)
    config = base / "mcp.json"
    config.write_text(json.dumps({"mcpServers": dict(servers or {})}))
    command = [sys.executable, "-m", "sprout_agent", "-p", "--output-format", "stream-json", "--verbose"]
    command += ["--replay", str(path), "--replay-mode", "strict" if strict else "lenient", "--cwd", str(work)]
    command += ["--config", str(config), *args, "--", chosen]
    done = subprocess.run(
        command, cwd=work, env=_environment(base, env), stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=timeout,
    )  # fmt: skip
    return Replayed(done.returncode, _lines(done.stdout), done.stderr, work)


def _environment(base: Path, env: Mapping[str, str] | None) -> dict[str, str]:
    own = {f"XDG_{kind}_HOME": str(base / "home" / kind.lower()) for kind in ("CONFIG", "DATA", "STATE", "CACHE")}
    inherited = {k: v for k, v in os.environ.items() if k not in _LEFT_OUT and not k.startswith("SPROUT_AGENT_REPLAY")}
    return {**inherited, **own, "SPROUT_AGENT_WARM": "0", **(env or {})}


def _lines(out: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for line in out.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            found.append(value)  # pyright: ignore[reportUnknownArgumentType]
    return found


def replayer(directory: str | Path) -> Replaying:
    """`run_cassette` with each run's scratch directory under `directory` (a test's tmp_path): what a `sprout_replay`
    fixture returns (docs/cassettes.md shows the three lines of one)."""
    count = iter(range(1, 1_000_000))

    def run(cassette: str | Path, **options: Any) -> Replayed:
        return run_cassette(cassette, workdir=Path(directory) / f"sprout-replay-{next(count)}", **options)

    return run
