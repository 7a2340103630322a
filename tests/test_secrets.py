"""The agent's credentials stay out of its children's reach: the commands dev__bash runs are the agent's own
children, so they are what would read it, from their environment or from the agent's /proc entry."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fake_anthropic import FakeAnthropic, Step, reply, tool_use
from tests.harness import API_KEY, result_text, run_agent, tool_results
from tests.privileges import reads_any_process

pytestmark = pytest.mark.e2e


@pytest.mark.slow
def test_bash_cannot_read_the_key_from_its_env_or_the_agents_proc_environ(tmp_path: Path) -> None:
    command = "env; echo ---; tr '\\0' '\\n' < /proc/$PPID/environ; echo ---; tr '\\0' '\\n' < /proc/$$/environ"
    script: list[Step] = [reply(tool_use("dev__bash", {"command": command})), reply("done")]
    # Sandbox off: this is about the agent's own environ block, which the sandbox hides (test_sandbox.py).
    extra = {
        "SPROUT_AGENT_BUILTIN_SERVERS": "dev",
        "GITHUB_TOKEN": "ghp_secret_value_123",
        "SPROUT_AGENT_SANDBOX": "off",
        # Cold: the agent's own block is what is scrubbed here (a warm run's parent block is the warm
        # interpreter's, which never held a key: tests/test_warm.py).
        "SPROUT_AGENT_WARM": "0",
    }
    with FakeAnthropic(script) as fake:
        run = run_agent(tmp_path, ["-p", "look around"], fake=fake, env=extra)
    assert run.code == 0, run.stderr
    (result,) = tool_results(fake.requests[1].body)
    output = result_text(result)
    _, agents, _ = output.split("---\n")  # the command's environment, the agent's block, the command's block
    if reads_any_process():  # CAP_SYS_PTRACE (root) opens the non-dumpable agent's block: it holds no secret value
        assert "ANTHROPIC_BASE_URL=" in agents
    else:  # anyone else may not open it at all
        assert agents.strip().endswith("/environ: Permission denied") and "=" not in agents, agents
    assert API_KEY not in output and "ghp_secret_value_123" not in output
