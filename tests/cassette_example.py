"""Records examples/cassettes/guard_session.jsonl against the fake API (tests/fake_anthropic.py), as a person would
record one against the real API with `--record`: `python -m tests.cassette_example` rewrites it (after a change of
the request's shape, e.g. a built-in tool's description, the example's strict replay asks for it)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.fake_anthropic import FakeAnthropic, reply, tool_use
from tests.harness import agent_command, agent_env, write_config

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "cassettes"
CASSETTE = EXAMPLE / "guard_session.jsonl"
PROMPT = "Set up the API key for this project."
SCRIPT = [
    reply("I'll put the key in .env.", tool_use("dev__write", {"file_path": ".env", "content": "API_KEY=changeme\n"})),
    reply(tool_use("dev__write", {"file_path": "NOTES.md", "content": "Export API_KEY; never write it to .env.\n"})),
    reply("Done: NOTES.md says where the key goes."),
]
GUARD_ENV = {"MCP_HOOK_SERVERS": "guard", "SPROUT_AGENT_TOOL_HOOKS": "1", "SPROUT_AGENT_BUILTIN_SERVERS": "dev"}


def guard_servers() -> dict[str, dict[str, object]]:
    return {"guard": {"command": sys.executable, "args": [str(ROOT / "examples" / "pre_tool_guard.py")]}}


def record(into: Path) -> Path:
    """Records the session into the directory `into`; returns the cassette."""
    scratch = Path(tempfile.mkdtemp(prefix="sprout-example-"))
    try:
        repo = scratch / "repo"
        repo.mkdir()
        config = write_config(scratch, guard_servers())
        args = ["-p", PROMPT, "--cwd", str(repo), "--config", str(config), "--record", str(into)]
        with FakeAnthropic(SCRIPT) as fake:
            done = subprocess.run(
                agent_command(args),
                env=agent_env(scratch, fake, GUARD_ENV),
                capture_output=True,
                text=True,
                timeout=120,
            )
        if done.returncode != 0:
            raise RuntimeError(done.stderr)
        (cassette,) = into.glob("*.jsonl")
        return cassette
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main() -> None:
    with tempfile.TemporaryDirectory() as into:
        shutil.copy(record(Path(into)), CASSETTE)
    print(f"wrote {CASSETTE}")


if __name__ == "__main__":
    main()
