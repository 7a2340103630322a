"""An example test of a hook with a cassette (docs/cassettes.md, "In your tests"): the conversation in
guard_session.jsonl, in which the model tries to write the key to `.env` and then writes NOTES.md, replayed against
today's examples/pre_tool_guard.py. Passes while the guard keeps `.env` out of reach, with no key and no network.

Run it with `pytest examples/cassettes/check_guard_replay.py` (our tests do: tests/test_cassette_example.py). Named
so that no test runner collects it by default.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sprout_agent.testing import Replaying, replayer

HERE = Path(__file__).resolve().parent
GUARD = {"guard": {"command": sys.executable, "args": [str(HERE.parent / "pre_tool_guard.py")]}}
HOOKS_ON = {"MCP_HOOK_SERVERS": "guard", "SPROUT_AGENT_TOOL_HOOKS": "1", "SPROUT_AGENT_BUILTIN_SERVERS": "dev"}


@pytest.fixture
def sprout_replay(tmp_path: Path) -> Replaying:  # in your conftest.py, for every test that replays a cassette
    return replayer(tmp_path)


def test_the_guard_keeps_the_key_out_of_env_and_the_session_still_finishes(sprout_replay: Replaying) -> None:
    run = sprout_replay(HERE / "guard_session.jsonl", servers=GUARD, env=HOOKS_ON)
    assert run.exit_code == 0, run.stderr
    assert not (run.workdir / ".env").exists()
    assert (run.workdir / "NOTES.md").read_text() == "Export API_KEY; never write it to .env.\n"
    (objection,) = run.of("hook_objected")
    assert objection["server"] == "guard" and ".env is a protected path" in objection["text"]
    assert [call["name"] for call in run.tool_calls()] == ["Write", "Write"]  # as the SDKs name them
    assert run.result["result"] == "Done: NOTES.md says where the key goes."
