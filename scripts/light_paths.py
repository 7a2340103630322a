"""The paths that need no SDK load none: `--version`, `--help`, usage and config errors, a missing key, `mcp list`,
`mcp approve`/`revoke`, `sessions`, `hooks`. Fails when one of them imports anthropic, mcp or acp, or, when it is
given no option value to parse, pydantic (typer's parser for a value). And a `-p` whose model calls no tool
(against the fake API, built-in servers on) loads anthropic only: no mcp, no server started, and none of our
modules that only another output, an SDK's stream-json input or a subcommand needs (`P_PATH_SKIPS`).

Run by scripts/check. Each path is a real `python -X importtime -m sprout_agent …` process in a scratch home (its
own XDG directories, no key unless the path needs one, the API on a closed port) and a scratch project, so the
user's config cannot change what it does; its stderr names every module it imported, and the importer chain of
an SDK found is printed. The CPU each path took (user+sys, from wait4) is printed for reading, never judged:
timings belong to scripts/bench (`--only startup`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SDKS = ("anthropic", "mcp", "acp")
# What typer parses an option's value with: a path that is given no option value needs none (faces/cli/lazy_coercion)
PARSER = "pydantic"
# Ours that a text `-p` reaches its first request without (issue 46: ~15-20 ms of CPU at start between them): the
# JSON sink, the SDK's session and what only it needs (rewind, the checkpoints' git store), a subcommand's module.
P_PATH_SKIPS = (
    "sprout_agent.faces.headless.jsonl",
    "sprout_agent.faces.headless.stream_lines",
    "sprout_agent.faces.sdk.sdk_session",
    "sprout_agent.faces.sdk.sdk_hooks",
    "sprout_agent.faces.sdk.sdk_rewind",
    "sprout_agent.session.rewinding",
    "sprout_agent.checkpoints.rewind",
    "sprout_agent.checkpoints.git_store",
    "sprout_agent.faces.slash_commands",
    "sprout_agent.faces.cli.commands.replay",
    "sprout_agent.faces.cli.commands.warm_doctor",
)
TIMEOUT = 60  # seconds per process: only a path gone wrong (say, one calling the API) comes near it


@dataclass(frozen=True)
class LightPath:
    args: tuple[str, ...]
    code: int  # the exit code the path ends with; another one means it is not the path we meant
    where: str = "project"  # the scratch directory it runs in
    env: dict[str, str] = field(default_factory=dict[str, str])
    name: str = ""
    bare: bool = True  # given no option value to parse: pydantic not imported either
    allows: tuple[str, ...] = ()  # the SDKs it needs (and may import)
    never: tuple[str, ...] = ()  # modules of ours it must not import (each with its submodules)
    api: bool = False  # sent to the fake API (tests/fake_anthropic.py), which answers "Hello." and calls no tool

    @property
    def label(self) -> str:
        return self.name or " ".join(self.args)


# With a key, the API on a port nobody listens on: a path gone wrong fails here, not at api.anthropic.com. (Not
# for the no-key path: a base URL alone lets a run go on without a key, for a proxy that holds it.)
KEY = {"ANTHROPIC_API_KEY": "sk-ant-light-paths-0123456789", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}
NO_BUILTINS = {"SPROUT_AGENT_BUILTIN_SERVERS": "none"}  # `hooks` starts the built-in servers, which are MCP servers

# Each inner tuple runs in order (approve, then revoke; `hooks` once the project server is held back again, or it
# would start it); the tuples run side by side.
PATHS: tuple[tuple[LightPath, ...], ...] = (
    (LightPath(("--version",), 0),),
    (LightPath(("--help",), 0),),
    (LightPath(("--no-such-flag",), 2, name="an unknown flag"),),
    (LightPath(("-p", "hi"), 2, name="-p hi, no ANTHROPIC_API_KEY"),),
    (
        LightPath(
            ("-p", "hi", "--mcp-config", "../malformed.json"),
            2,
            env=KEY,
            name="a malformed --mcp-config file",
            bare=False,
        ),
    ),
    (
        LightPath(
            ("-p", "hi", "--config", "../malformed.json"), 2, env=KEY, name="a malformed --config file", bare=False
        ),
    ),
    (
        LightPath(
            ("-p", "hi", "--json-schema", '{"type": "array"}'),
            2,
            env=KEY,
            name="a --json-schema it cannot use",
            bare=False,
        ),
    ),
    (LightPath(("mcp", "list"), 0, where="bad-project", name="mcp list, a bad .mcp.json"),),
    (
        LightPath(("mcp", "list"), 0),
        LightPath(("mcp", "approve", "t"), 0, bare=False),
        LightPath(("mcp", "revoke", "t"), 0, bare=False),
        LightPath(("hooks",), 0, env=NO_BUILTINS, name="hooks (lists them; the one server held back)"),
        LightPath(("hooks", "test"), 1, env=NO_BUILTINS, name="hooks test (nothing to start: exit 1, held back)"),
    ),
    (LightPath(("sessions",), 0),),
    (LightPath(("hooks", "--help"), 0),),
    (LightPath(("acp", "--thinking", "wrong"), 2, name="acp, a bad flag value", bare=False),),
    (
        LightPath(
            ("-p", "Say hello."),
            0,
            "plain",
            name="-p, no tool called",
            bare=False,
            allows=("anthropic",),
            api=True,
            never=P_PATH_SKIPS,
        ),
    ),
)


@dataclass
class Outcome:
    path: LightPath
    code: int
    cpu: float
    sdk_chain: list[str]  # the first SDK module imported, then who imported it, up to the top; empty: none
    stderr_tail: str


def scratch(root: Path) -> dict[str, str]:
    """A home with its XDG directories and one recorded session, a project with a server needing consent, a
    project whose .mcp.json is broken, a malformed config file; returns the environment every path shares."""
    home = root / "home"
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_STATE_HOME": str(home / "state"),
        "XDG_CACHE_HOME": str(home / "cache"),
        "PYTHONPATH": str(ROOT),
        "LANG": "C.UTF-8",
        # The paths as they run in this process: a warm interpreter would hide what a cold start imports (and the
        # check would leave one running).
        "SPROUT_AGENT_WARM": "0",
    }
    for name in ("project", "bad-project", "plain"):
        (root / name).mkdir(mode=0o700)
    (root / "project" / ".mcp.json").write_text(json.dumps({"mcpServers": {"t": {"command": "true"}}}))
    (root / "bad-project" / ".mcp.json").write_text('{"mcpServers": {"t": {"command": ')
    (root / "malformed.json").write_text("{nope")
    _record_session(home / "data" / "sprout-agent" / "sessions", root / "project")
    return env


def _record_session(directory: Path, cwd: Path) -> None:
    from sprout_agent.core.messages import Message, Text
    from sprout_agent.session.store import SessionStore

    store = SessionStore.new(directory, "00000000-0000-4000-8000-000000000001", str(cwd), "claude-light-paths")
    store.appended(Message("user", (Text("hi"),)))
    store.appended(Message("assistant", (Text("hello"),)))
    store.close()


def run(path: LightPath, root: Path, env: dict[str, str]) -> Outcome:
    argv = [sys.executable, "-X", "importtime", "-m", "sprout_agent", *path.args]
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, cwd=root / path.where, env=env
        )
        watchdog = threading.Timer(TIMEOUT, proc.kill)
        watchdog.start()
        _, status, usage = os.wait4(proc.pid, 0)
        watchdog.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        stderr = err.read().decode(errors="replace")
    imports = [line for line in stderr.splitlines() if line.startswith("import time:")]
    said = [line for line in stderr.splitlines() if not line.startswith("import time:") and line.strip()]
    cpu = usage.ru_utime + usage.ru_stime
    forbidden = (*(sdk for sdk in ((*SDKS, PARSER) if path.bare else SDKS) if sdk not in path.allows), *path.never)
    return Outcome(path, proc.returncode, cpu, sdk_chain(imports, forbidden), said[-1] if said else "")


def sdk_chain(lines: list[str], sdks: tuple[str, ...] = SDKS) -> list[str]:
    """From `-X importtime` lines: the first SDK module imported and its importers, outermost last.

    Each line is `import time: self | cumulative | <2 spaces per level>name`, printed when that import ends:
    a module's importer is the next line one level up. `sdks` are top-level names or dotted modules (each with its
    submodules)."""
    parsed: list[tuple[int, str]] = []
    for line in lines:
        column = line.rsplit("|", 1)[-1]
        name = column.strip()
        if name == "imported package":
            continue
        parsed.append(((len(column) - len(column.lstrip()) - 1) // 2, name))
    for index, (depth, name) in enumerate(parsed):
        if _within(name, sdks):
            chain = [name]
            for later_depth, later in parsed[index + 1 :]:
                if later_depth < depth:
                    chain.append(later)
                    depth = later_depth
            ours = [n for n in chain if not _within(n, sdks)]  # `mcp.types` <- `mcp` <- `mcp.types`: one
            sdk = [n for n in chain[: chain.index(ours[0])] if _within(n, sdks)] if ours else chain
            return [sdk[-1], *ours]
    return []


def _within(module: str, names: tuple[str, ...]) -> bool:
    return any(module == name or module.startswith(f"{name}.") for name in names)


def main() -> int:
    from tests.fake_anthropic import FakeAnthropic, reply

    answers = [reply("Hello.")] * sum(path.api for group in PATHS for path in group)
    with tempfile.TemporaryDirectory(prefix="light-paths-") as tmp, FakeAnthropic(answers, auto_usage=True) as fake:
        root = Path(tmp)
        env = scratch(root)
        faked = KEY | {"ANTHROPIC_BASE_URL": fake.base_url}

        def chain(paths: tuple[LightPath, ...]) -> list[Outcome]:
            return [run(path, root, env | (faked if path.api else {}) | path.env) for path in paths]

        with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            outcomes = [outcome for group in pool.map(chain, PATHS) for outcome in group]
    print(f"light paths (no {', '.join(SDKS)}; no {PARSER} where no option value is given); CPU is user+sys of the")
    print("process, for reading, not judged:")
    failed = 0
    for o in outcomes:
        problems: list[str] = []
        if o.sdk_chain:
            problems.append(f"imported {' <- '.join(o.sdk_chain)}")
        if o.code != o.path.code:
            problems.append(f"exit {o.code}, not {o.path.code}: {o.stderr_tail[-200:]}")
        failed += bool(problems)
        verdict = "FAIL" if problems else "ok"
        print(f"  {verdict:<4}  {o.cpu:5.2f} s CPU  exit {o.code}  {o.path.label}")
        for problem in problems:
            print(f"          {problem}")
    if failed:
        print(f"light_paths: {failed} path(s) failed", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
