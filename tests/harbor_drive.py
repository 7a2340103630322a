"""Drives Harbor's own agent classes on this machine, without Docker: run by the Python of a virtualenv that has
the `harbor` package (Python >= 3.12; tests/harbor_venv.py finds it), never by the test suite's own interpreter.

    python tests/harbor_drive.py claude-code SPEC.json   Harbor's ClaudeCode: run(), then populate_context_post_run()
    python tests/harbor_drive.py sprout SPEC.json        our adapter (examples/harbor/sprout_harbor.py), the same way
    python tests/harbor_drive.py atif FILE.json          Harbor's Trajectory model validates an ATIF file

The task's container is a `LocalEnvironment`: each command Harbor would `docker exec` runs under bash here, in the
spec's work directory, with the spec's environment under the command's own (HOME is the "container's" home, where
`claude` or `sprout-agent` is installed). The agent's logs directory in the environment is the host's (no copy
back is needed). Prints one JSON object: what Harbor filled in, the commands it ran, the error it raised.
"""
# pyright: reportMissingImports=false, reportUnknownMemberType=false, reportUnknownVariableType=false
# pyright: reportUnknownArgumentType=false, reportAttributeAccessIssue=false

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path, PurePosixPath
from typing import Any

from harbor.agents.installed.base import BaseInstalledAgent
from harbor.environments.base import ExecResult
from harbor.models.agent.context import AgentContext
from harbor.models.trajectories import Trajectory


class LocalEnvironment:
    """What the installed-agent classes use of Harbor's BaseEnvironment, with local processes for a container."""

    default_user = None

    def __init__(self, workdir: str, env: dict[str, str], timeout: float, paths: dict[str, str]) -> None:
        self.workdir, self.env, self.timeout = workdir, env, timeout
        self.paths = paths  # the container's absolute paths (/installed-agent) → directories of the test's
        self.commands: list[dict[str, Any]] = []

    def here(self, text: str) -> str:
        for there, local in self.paths.items():
            text = text.replace(there, local)
        return text

    async def exec(
        self,
        command: str,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        timeout_sec: int | None = None,
        user: str | int | None = None,
    ) -> ExecResult:
        merged = {**self.env, **(env or {})}
        done = await asyncio.to_thread(
            subprocess.run,
            ["bash", "-c", self.here(command)],
            cwd=cwd or self.workdir,
            env=merged,
            capture_output=True,
            text=True,
            timeout=timeout_sec or self.timeout,
        )
        self.commands.append({"command": command, "env": sorted(env or {}), "user": user, "rc": done.returncode})
        return ExecResult(stdout=done.stdout, stderr=done.stderr, return_code=done.returncode)

    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        target = Path(self.here(target_path))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source_path, target)


async def drive(agent: BaseInstalledAgent, spec: dict[str, Any]) -> dict[str, Any]:
    environment = LocalEnvironment(spec["workdir"], spec["env"], spec.get("timeout", 300), spec.get("paths", {}))
    context = AgentContext()
    raised: dict[str, Any] | None = None
    seconds: dict[str, float] = {}
    started = time.monotonic()
    try:
        if spec.get("setup"):
            await agent.setup(environment)
            seconds["setup"] = time.monotonic() - started
        await agent.run(spec["instruction"], environment, context)
        if again := spec.get("resume_instruction"):  # Harbor's resume(): the agent's continue-session flag
            await agent.resume(again, environment, context)
    except Exception as error:  # what Harbor's trial records: the class of the error and its text
        raised = {"type": type(error).__name__, "text": str(error), "family": [c.__name__ for c in type(error).__mro__]}
    seconds["run"] = time.monotonic() - started - seconds.get("setup", 0.0)
    agent.populate_context_post_run(context)
    seconds["populate"] = time.monotonic() - started - seconds["run"] - seconds.get("setup", 0.0)
    trajectory_path = Path(spec["logs_dir"]) / "trajectory.json"
    return {
        "context": context.model_dump(mode="json"),
        "raised": raised,
        "commands": environment.commands,
        "trajectory": json.loads(trajectory_path.read_text()) if trajectory_path.exists() else None,
        "version": agent.version(),
        "seconds": seconds,
    }


def claude_code(spec: dict[str, Any]) -> dict[str, Any]:
    from harbor.agents.installed.claude_code import ClaudeCode

    agent = ClaudeCode(
        logs_dir=Path(spec["logs_dir"]),
        model_name=spec.get("model"),
        environment_logs_dir=PurePosixPath(spec["logs_dir"]),
        **spec.get("kwargs", {}),
    )
    found = asyncio.run(drive(agent, spec))
    found["cost_from_stream"] = agent._parse_total_cost_from_stream_json()
    return found


def sprout(spec: dict[str, Any]) -> dict[str, Any]:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples" / "harbor"))
    from harbor.models.task.config import MCPServerConfig
    from sprout_harbor import SproutAgent

    agent = SproutAgent(
        logs_dir=Path(spec["logs_dir"]),
        model_name=spec.get("model"),
        environment_logs_dir=PurePosixPath(spec["logs_dir"]),
        mcp_servers=[MCPServerConfig(**server) for server in spec.get("mcp_servers", [])],
        **spec.get("kwargs", {}),
    )
    return asyncio.run(drive(agent, spec))


def atif(path: str) -> dict[str, Any]:
    trajectory = Trajectory.model_validate_json(Path(path).read_text())
    return {"valid": True, "steps": len(trajectory.steps), "schema_version": trajectory.schema_version}


def main() -> None:
    what, argument = sys.argv[1], sys.argv[2]
    if what == "atif":
        print(json.dumps(atif(argument)))
        return
    spec = json.loads(Path(argument).read_text())
    print(json.dumps(claude_code(spec) if what == "claude-code" else sprout(spec), default=str))


if __name__ == "__main__":
    main()
