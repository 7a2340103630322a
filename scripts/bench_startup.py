"""The `startup` group of scripts/bench: what starting costs, in CPU and wall, sprout-agent beside Claude Code.

Every figure is a real process against the fake Anthropic API (tests/fake_anthropic.py) in a scratch home: the
light paths (`--version`, `-p` without a key, `mcp list`), one `-p` prompt answered by one reply, and start → the
first request. CPU is user+sys from wait4 (the process and the children it waited for); "CPU by the 1st request"
is read from /proc/PID/stat when the fake has the request. Then the import cost of what `-p` loads, by library.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.claude_code import CLAUDE_QUIET
from tests.fake_anthropic import FakeAnthropic, Step, reply
from tests.harness import agent_command, agent_env

PROMPT = "Say hello."
# Claude Code's own settings that keep a run on this machine: no updates, no telemetry, no other traffic.
# A model whose request Claude Code 2.1 still sends in the classic shape (user and assistant messages only): for
# its newest models it adds a `role: "system"` message (the beta mid-conversation system messages), which the
# fake refuses, so its default `-p` ends in exit 1 against the fake.
CLAUDE_CLASSIC_MODEL = "claude-sonnet-4-6"
# Whose modules count where in the import table; any other top-level name is "other".
IMPORT_GROUPS: dict[str, tuple[str, ...]] = {
    "anthropic": ("anthropic",),
    "mcp": ("mcp", "mcp_types"),
    "pydantic": ("pydantic", "pydantic_core", "annotated_types", "typing_inspection"),
    "httpx2": ("httpx2", "httpcore2", "h11"),
    "ours": ("sprout_agent",),
}
_TICK = os.sysconf("SC_CLK_TCK")


@dataclass
class Started:
    code: int
    wall: float
    cpu: float
    first_wall: float | None  # start → the first /v1/messages request; None: it sent none
    first_cpu: float | None
    requests: int
    tail: str  # the last line on stdout or stderr


def _cpu_now(pid: int) -> float | None:
    """utime+stime of `pid` and of the children it has waited for, from /proc (None once it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()  # after the command name, which may hold spaces
    return sum(int(v) for v in fields[11:15]) / _TICK


def _messages(fake: FakeAnthropic) -> int:
    return sum(1 for r in fake.requests if r.path.split("?")[0] == "/v1/messages")


def run(argv: list[str], env: dict[str, str], cwd: Path, fake: FakeAnthropic | None = None) -> Started:
    """Runs argv to exit (bounded), timing it; with `fake`, also when its first request arrived and the CPU by then."""
    before = _messages(fake) if fake is not None else 0
    first: dict[str, float | None] = {}
    done = threading.Event()
    with tempfile.TemporaryFile() as out:
        start = time.monotonic()
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out, env=env, cwd=cwd)

        def watch() -> None:  # polls every ms: /proc must be read while the process still runs
            while fake is not None and not done.is_set():
                if _messages(fake) > before:
                    first["cpu"] = _cpu_now(proc.pid)
                    return
                time.sleep(0.001)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        watchdog = threading.Timer(120, proc.kill)
        watchdog.start()
        _, status, usage = os.wait4(proc.pid, 0)
        end = time.monotonic()
        done.set()
        watchdog.cancel()
        watcher.join()
        out.seek(0)
        lines = [line for line in out.read().decode(errors="replace").splitlines() if line.strip()]
    requests = [r for r in fake.requests if r.path.split("?")[0] == "/v1/messages"][before:] if fake else []
    return Started(
        os.waitstatus_to_exitcode(status),
        end - start,
        usage.ru_utime + usage.ru_stime,
        requests[0].arrived - start if requests else None,
        first.get("cpu"),
        len(requests),
        lines[-1][:120] if lines else "",
    )


@contextmanager
def scratch_home() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        home = Path(tmp) / "home"
        (home / "work").mkdir(parents=True)
        yield home


# name → argv, environment, whether ANTHROPIC_BASE_URL is the fake's, working directory
Paths = dict[str, tuple[list[str], dict[str, str], bool, Path]]


def sprout_paths(home: Path) -> Paths:
    """What to run for each figure. Built-in servers are on, as a user has them. Only `-p` with a key is pointed
    at the fake: a base URL alone would let `-p` go on without a key, and the others never ask an API."""
    env = agent_env(home, None)
    env.pop("SPROUT_AGENT_BUILTIN_SERVERS")
    no_key = {k: v for k, v in env.items() if k != "ANTHROPIC_API_KEY"}
    work = home / "work"
    return {
        "--version": (agent_command(["--version"]), env, False, work),
        "-p hi, no key": (agent_command(["-p", "hi"]), no_key, False, work),
        "mcp list": (agent_command(["mcp", "list"]), env, False, work),
        f"-p {PROMPT!r}": (agent_command(["-p", PROMPT]), env, True, work),
        f"-p {PROMPT!r}, warm": (agent_command(["-p", PROMPT]), warm_env(home, env), True, work),
        # An environment installed without bytecode (uv's default) where none can be written: every start compiles
        f"-p {PROMPT!r}, no bytecode": (agent_command(["-p", PROMPT]), no_bytecode(home, env), True, work),
        # The built-in servers' own start (`builtin_start`): none at all, and all started before the first request
        # (--require-servers) instead of at their first call (the default, which a run calling no tool never pays).
        BUILTINS_OFF: (agent_command(["-p", PROMPT]), env | {"SPROUT_AGENT_BUILTIN_SERVERS": "none"}, True, work),
        BUILTINS_FIRST: (agent_command(["-p", PROMPT, "--require-servers"]), env, True, work),
    }


BUILTINS_OFF = f"-p {PROMPT!r}, built-in servers off"
BUILTINS_FIRST = f"-p {PROMPT!r}, built-in servers started first"


def builtin_start(results: dict[str, list[Started]], prefix: str = "") -> dict[str, list[float]]:
    """The built-in servers' start on its own: each round's run that starts them first minus its run without them
    (the same round: interleaved, the machine's load hits both alike), CPU and start → the first request."""
    first, off = results[prefix + BUILTINS_FIRST], results[prefix + BUILTINS_OFF]
    return {
        "CPU": [a.cpu - b.cpu for a, b in zip(first, off, strict=True)],
        "start → 1st request": [(a.first_wall or 0) - (b.first_wall or 0) for a, b in zip(first, off, strict=True)],
    }


def no_bytecode(home: Path, env: dict[str, str]) -> dict[str, str]:
    """Bytecode looked for in an empty directory and never written there: what a start costs that compiles."""
    return env | {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": str(home / "no-bytecode")}


def warm_env(home: Path, env: dict[str, str]) -> dict[str, str]:
    """Runs that go to the warm interpreter (faces/warm), in a runtime directory of this home's."""
    runtime = home / "run"
    runtime.mkdir(mode=0o700, exist_ok=True)
    return env | {"SPROUT_AGENT_WARM": "1", "XDG_RUNTIME_DIR": str(runtime), "SPROUT_AGENT_WARM_IDLE_SECONDS": "60"}


def zygote_of(env: dict[str, str]) -> int | None:
    """The zygote serving `env`'s runtime directory, once its socket is up (waits for it, bounded): the pid its
    lock names (faces/warm/live.py; its command line is its title, which names no directory)."""
    from sprout_agent.faces.warm import live

    base = Path(env["XDG_RUNTIME_DIR"]) / "sprout-agent"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if any(base.glob("*.sock")):
            with contextlib.suppress(OSError):
                for one in live.interpreters(base):
                    return one.pid
        time.sleep(0.05)
    return None


def reaped_cpu(pid: int) -> float:
    """The CPU of the children `pid` has waited for (cutime+cstime): a warm run's, once the zygote reaped it."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return sum(int(v) for v in fields[13:15]) / _TICK


def stop_zygotes(paths: Paths) -> None:
    for _argv, env, _faked, _cwd in paths.values():
        if env.get("SPROUT_AGENT_WARM") == "1" and (zygote := zygote_of(env)) is not None:
            os.kill(zygote, 15)


def claude_paths(binary: str, home: Path) -> Paths:
    """Every path pointed at the fake: nothing leaves the machine (`claude mcp list` with the default URL waits
    ~18 s here, where api.anthropic.com cannot be reached)."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), **CLAUDE_QUIET}
    keyed = env | {"ANTHROPIC_API_KEY": "sk-ant-bench-0123456789"}
    work = home / "work"
    classic = f"-p {PROMPT!r} --model {CLAUDE_CLASSIC_MODEL}"
    return {
        "--version": ([binary, "--version"], keyed, True, work),
        "-p hi, no key": ([binary, "-p", "hi"], env, True, work),
        "mcp list": ([binary, "mcp", "list"], keyed, True, work),
        f"-p {PROMPT!r}": ([binary, "-p", PROMPT], keyed, True, work),
        classic: ([binary, "-p", PROMPT, "--model", CLAUDE_CLASSIC_MODEL], keyed, True, work),
    }


def measure(paths: Paths, runs: int) -> dict[str, list[Started]]:
    """Each path `runs` times after one warm-up round (the page cache, first-run files in the home), interleaved
    so that a change in the machine's load hits every path alike."""
    results: dict[str, list[Started]] = {name: [] for name in paths}
    script: list[Step] = [reply("Hello.")] * (12 * (runs + 1) * len(paths))  # Claude Code sends several requests
    with FakeAnthropic(script, auto_usage=True) as fake:
        for round_ in range(runs + 1):
            for name, (argv, env, faked, cwd) in paths.items():
                full = env | {"ANTHROPIC_BASE_URL": fake.base_url} if faked else env
                # A warm run's CPU is its caller's plus its own, which the zygote collects when it reaps it. The
                # warm-up round is the cold run that starts the zygote.
                zygote = zygote_of(env) if round_ and env.get("SPROUT_AGENT_WARM") == "1" else None
                before = reaped_cpu(zygote) if zygote is not None else 0.0
                started = run(argv, full, cwd, fake if faked else None)
                if zygote is not None:
                    started.cpu += reaped_cpu(zygote) - before
                    started.first_cpu = None  # the caller's alone would flatter it
                if round_:
                    results[name].append(started)
    stop_zygotes(paths)
    return results


# ---------------------------------------------------------------- what -p imports


def import_lines(stderr: str) -> list[tuple[int, int, str]]:
    """`-X importtime` lines as (depth, self µs, module)."""
    parsed: list[tuple[int, int, str]] = []
    for line in stderr.splitlines():
        if not line.startswith("import time:") or line.endswith("imported package"):
            continue
        self_us, _cumulative, column = line.removeprefix("import time:").split("|")
        parsed.append(((len(column) - len(column.lstrip()) - 1) // 2, int(self_us), column.strip()))
    return parsed


def p_import_set() -> list[str]:
    """The modules a `-p` run imports at the top of its import chains (threads included), in order: importing
    them in one thread replays what `-p` loads without two threads' imports inflating each other's times."""
    with tempfile.TemporaryDirectory() as tmp, FakeAnthropic([reply("Hello.")], auto_usage=True) as fake:
        env = agent_env(Path(tmp), fake)
        env.pop("SPROUT_AGENT_BUILTIN_SERVERS")
        argv = [sys.executable, "-X", "importtime", "-m", "sprout_agent", "-p", PROMPT]
        done = subprocess.run(argv, env=env, cwd=tmp, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"-p exited {done.returncode}: {done.stderr[-300:]}")
    return [name for depth, _, name in import_lines(done.stderr) if depth == 0 and not name.endswith("__main__")]


def group_of(module: str) -> str:
    top = module.split(".")[0]
    return next((group for group, tops in IMPORT_GROUPS.items() if top in tops), "other")


def import_ms(modules: list[str]) -> tuple[dict[str, float], Counter[str]]:
    """One `python -X importtime -c 'import …'` of `modules`: self time per group in ms, and "other" by package. The
    SDK's packages load lazily first, as in a run (model/lazy_sdk.py: the client installs it before importing it)."""
    lazy = "from sprout_agent.model import lazy_sdk\nlazy_sdk.install()\n"
    code = lazy + "\n".join(f"import {name}" for name in modules)
    with tempfile.TemporaryDirectory() as tmp:
        env = agent_env(Path(tmp), None)
        argv = [sys.executable, "-X", "importtime", "-c", code]
        done = subprocess.run(argv, env=env, cwd=tmp, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"importing -p's modules failed: {done.stderr[-300:]}")
    groups = dict.fromkeys([*IMPORT_GROUPS, "other"], 0.0)
    other: Counter[str] = Counter()
    for _, self_us, name in import_lines(done.stderr):
        group = group_of(name)
        groups[group] += self_us / 1000
        if group == "other":
            other[name.split(".")[0]] += self_us
    return groups, other
