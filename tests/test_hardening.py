"""Every process of ours that may hold a credential hardens itself first (trust/secrecy.harden): every entry point
goes through it before anything else, it scrubs the block and sets non-dumpable, and a command the model runs
finds neither the key nor a server's credential in any /proc/*/environ or /proc/*/cmdline it can read, cold or
warm, with the sandbox off, under Landlock and under bubblewrap."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sprout_agent.trust import landlock as _landlock
from sprout_agent.trust import sandbox as _sandbox
from tests.bounds import bounded
from tests.fake_anthropic import FakeAnthropic, reply, tool_use
from tests.harness import FAKE_MCP, ROOT, agent_command, agent_env, end_warm_zygotes, result_text, tool_results
from tests.package_source import package_modules
from tests.privileges import reads_any_process

PACKAGE = ROOT / "sprout_agent"
HARDEN = "harden"
# Entries that do not go through `harden`, each with the reason; a new one must be added here, with its reason.
EXEMPT = {
    # The Landlock launcher (`python -I -S -c <its source>`): it cannot import our package, holds only a command's
    # filtered environment, and execs that command at once (an exec drops non-dumpable anyway).
    "sprout_agent.trust.landlock",
}


# ---------------------------------------------------------------- every entry point (in-process)


def _entry_points() -> dict[str, tuple[str, str | None]]:
    """Every way a process of ours starts: the console scripts (module, function), each `python -m` module
    (module, None: its `if __name__ == "__main__"` block or its __main__.py), and each `-c` program we start
    (`from sprout_agent.… import f; f()`, as the warm interpreter is)."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    found: dict[str, tuple[str, str | None]] = {
        f"console script {name}": (target.split(":")[0], target.split(":")[1]) for name, target in scripts.items()
    }
    for path, tree in package_modules():
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        if path.name == "__main__.py" or any(_is_main_block(node) for node in tree.body):
            found[f"python -m {module.removesuffix('.__main__')}"] = (module, None)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and _is_c_program(node.value):
                imported = ast.parse(node.value).body[0]
                assert isinstance(imported, ast.ImportFrom) and imported.module
                found[f"python -c in {module}"] = (imported.module, imported.names[0].name)
            if (remote := _ray_remote(node)) is not None:  # a function a Ray worker (Ray's process) runs
                found[f"ray task in {module}"] = (_imported_from(tree, remote) or module, remote)
    return found


def _ray_remote(node: ast.AST) -> str | None:
    """`ray.remote(...)(f)`: the name of `f`."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Call) and node.args):
        return None
    inner, target = node.func.func, node.args[0]
    is_remote = isinstance(inner, ast.Attribute) and inner.attr == "remote"
    return target.id if is_remote and isinstance(target, ast.Name) else None


def _imported_from(tree: ast.Module, name: str) -> str | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(alias.name == name for alias in node.names):
            return node.module
    return None


def _is_main_block(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and "__main__" in ast.unparse(node.test) and "__name__" in ast.unparse(node.test)


def _is_c_program(text: str) -> bool:
    if not text.startswith("from sprout_agent"):
        return False
    try:
        body = ast.parse(text).body
    except (SyntaxError, ValueError):
        return False
    return bool(body) and isinstance(body[0], ast.ImportFrom) and (body[0].module or "").startswith("sprout_agent")


def _tree(module: str) -> ast.Module:
    path = ROOT / Path(*module.split("."))
    return ast.parse((path / "__init__.py" if path.is_dir() else path.with_suffix(".py")).read_text())


def _first_statement(tree: ast.Module, function: str | None) -> ast.stmt | None:
    """What runs first: in `function`, or in the module's main block (else its body), leaving out the docstring
    and imports (importing does nothing: ARCHITECTURE.md)."""
    if function is None:
        blocks = [node for node in tree.body if isinstance(node, ast.If) and _is_main_block(node)]
        body = blocks[0].body if blocks else tree.body
    else:
        (found,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == function]
        body = found.body
    for statement in body:
        docstring = isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
        if not docstring and not isinstance(statement, ast.Import | ast.ImportFrom | ast.FunctionDef):
            return statement
    return None


def _hardens_first(module: str, function: str | None, depth: int = 0) -> bool:
    """The first thing `function` (or the module's main block) does is call `harden`, itself or through the first
    call of one of our functions that does (`python -m sprout_agent` calls `launch.main`, which does)."""
    tree = _tree(module)
    statement = _first_statement(tree, function)
    if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)) or depth > 3:
        return False
    called = ast.unparse(statement.value.func)
    if called.split(".")[-1] == HARDEN:
        return True
    if any(isinstance(n, ast.FunctionDef) and n.name == called for n in tree.body):
        return _hardens_first(module, called, depth + 1)
    for node in ast.walk(tree):  # where the called name comes from: one of our modules
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sprout_agent"):
            for alias in node.names:
                if (alias.asname or alias.name) == called:
                    return _hardens_first(node.module or "", alias.name, depth + 1)
    return False


def test_every_console_script_and_python_m_entry_goes_through_harden_first() -> None:
    entries = _entry_points()
    assert "console script sprout-agent" in entries and "python -m sprout_agent" in entries
    assert "python -c in sprout_agent.faces.cli.warm_run" in entries  # the warm interpreter
    assert entries["ray task in sprout_agent.batch.ray_executor"] == ("sprout_agent.batch.task_run", "run_task")
    skipping = [
        name
        for name, (module, function) in entries.items()
        if module not in EXEMPT and not _hardens_first(module, function)
    ]
    assert skipping == [], f"these entry points do not call trust.secrecy.harden() first: {skipping}"


def test_a_warm_run_hardens_itself_before_it_reads_its_request() -> None:
    # A zygote's fork is no entry point of its own: it inherits the zygote's mark, and hardens again (idempotent).
    assert _hardens_first("sprout_agent.faces.warm.child", "become_the_run")


# ---------------------------------------------------------------- what harden does (one process each)

PROBE = """
import ctypes, json, os, sys
from sprout_agent.trust.secrecy import environment_block, harden
first, second = harden(), harden()
print(json.dumps({
    "first": first, "second": second, "block": environment_block().decode(errors="replace"),
    "kept": os.environ.get("GITHUB_TOKEN"), "dumpable": ctypes.CDLL(None).prctl(3, 0, 0, 0, 0),
}))
"""


@pytest.mark.e2e
def test_harden_scrubs_the_block_keeps_os_environ_and_sets_non_dumpable_once_and_for_all() -> None:
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(ROOT), "GITHUB_TOKEN": "ghp_probe_value_42",
           "DATABASE_URL": "postgres://app:hunter2@db/x", "HARMLESS": "kept-value"}  # fmt: skip
    ran = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=bounded(30))
    assert ran.returncode == 0, ran.stderr
    seen = json.loads(ran.stdout)
    assert sorted(seen["first"]) == ["DATABASE_URL", "GITHUB_TOKEN"] and seen["second"] == []
    assert "ghp_probe_value_42" not in seen["block"] and "hunter2" not in seen["block"]
    assert "HARMLESS=kept-value" in seen["block"] and "GITHUB_TOKEN=" in seen["block"]
    assert seen["kept"] == "ghp_probe_value_42"  # the process keeps its copy
    assert seen["dumpable"] == 0


# ---------------------------------------------------------------- what a model's command finds (processes)

needs_bwrap = pytest.mark.skipif(_sandbox.probe() is not None, reason=f"no bubblewrap here: {_sandbox.probe()}")
needs_landlock = pytest.mark.skipif(_landlock.abi() < 1, reason="no Landlock in this kernel")
# Root without CAP_SYS_PTRACE (setpriv drops it from the bounding set of the run and all it starts): a process of
# the same user as any other, to which a non-dumpable process's environ is closed.
SETPRIV = shutil.which("setpriv")
needs_plain_user = pytest.mark.skipif(os.geteuid() != 0 or SETPRIV is None, reason="needs root and setpriv")

# What the model runs: every /proc entry it can see, what it could read and which needle it found. The needles
# travel hex-encoded, so the scanner's own command line does not hold them.
SCAN = """
import json, os, sys
needles = {name: bytes.fromhex(value) for name, value in json.loads(bytes.fromhex(sys.argv[1])).items()}
mark = bytes.fromhex(sys.argv[2])
for pid in sorted(int(p) for p in os.listdir("/proc") if p.isdigit()):
    try:
        cmdline = open(f"/proc/{pid}/cmdline", "rb").read()
    except OSError:
        continue
    try:
        environ, readable = open(f"/proc/{pid}/environ", "rb").read(), True
    except OSError:
        environ, readable = b"", False
    try:
        open(f"/proc/{pid}/mem", "rb").close()
        memory = True
    except OSError:
        memory = False
    try:
        comm = open(f"/proc/{pid}/comm").read().strip()
        ppid = int(open(f"/proc/{pid}/stat", "rb").read().rsplit(b")", 1)[1].split()[1])
    except (OSError, ValueError):
        comm, ppid = "", 0
    row = {"pid": pid, "cmd": cmdline.replace(b"\\0", b" ").decode(errors="replace")[:300], "environ": readable,
           "mem": memory, "comm": comm, "ppid": ppid,
           "in_cmdline": [n for n, v in needles.items() if v in cmdline],
           "in_environ": [n for n, v in needles.items() if v in environ]}
    # Ours by name too: the command lines of a run and of a warm interpreter are their titles (faces/warm/title.py)
    if mark in cmdline or row["in_cmdline"] or row["in_environ"] or comm in ("sprout-agent", "sprout-warm"):
        print(json.dumps(row))
"""


@dataclass
class Scan:
    rows: list[dict[str, Any]]
    parent: str  # the command line of the process that started the MCP server (the run's), and its parent's name

    def found(self, needle: str) -> list[dict[str, Any]]:
        return [r for r in self.rows if needle in r["in_environ"] or needle in r["in_cmdline"]]


def _scan(tmp_path: Path, sandbox: list[str], env: dict[str, str], *, warm: bool, prefix: list[str]) -> Scan:
    key, token = f"sk-ant-harden-{uuid.uuid4().hex}", f"tok-harden-{uuid.uuid4().hex}"
    mark = str(tmp_path)  # on the command line of every process of the run: the agent's, the server's, the zygote's
    needles = json.dumps({"key": key.encode().hex(), "token": token.encode().hex()}).encode().hex()
    command = f"{sys.executable} -c '{SCAN}' {needles} {mark.encode().hex()}"
    parent = tmp_path / "server-parent"
    # The server, through a shell that notes who started it (the run: warm, the zygote's child), holds a credential
    # from the user's environment, as `${VAR}` in the config's `env`.
    noting = [
        "-c",
        'tr "\\0" " " < /proc/$PPID/cmdline > "$0"; cat /proc/$(cut -d" " -f4 /proc/$PPID/stat)/comm >> "$0"; '
        'exec "$@"',
        str(parent), sys.executable, FAKE_MCP, mark,
    ]  # fmt: skip
    server = {"command": "bash", "args": noting, "env": {"PROBE_API_TOKEN": "${PROBE_TOKEN}", "FAKE_MCP_TOOLS": "echo"}}
    servers = {"mcpServers": {"probe": server}}
    (tmp_path / "servers.json").write_text(json.dumps(servers))
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700, exist_ok=True)
    extra = {
        **env,
        "SPROUT_AGENT_BUILTIN_SERVERS": "dev",
        "PROBE_TOKEN": token,
        "SPROUT_AGENT_WARM": "1" if warm else "0",
        "XDG_RUNTIME_DIR": str(runtime),
    }
    args = ["--config", str(tmp_path / "servers.json"), *sandbox, "--output-format", "json"]
    try:
        if warm:  # a first run starts the warm interpreter (cold, no key: exit 2); the scanned run is warm
            started = _agent(tmp_path, [*args, "-p", "hi"], {**extra, "ANTHROPIC_API_KEY": ""}, None, prefix)
            assert started.returncode == 2, started.stderr
            _until(lambda: any((runtime / "sprout-agent").glob("*.sock")), "the warm interpreter's socket")
        script = [reply(tool_use("dev__bash", {"command": command})), reply("scanned")]
        with FakeAnthropic(script) as fake:
            ran = _agent(tmp_path, [*args, "-p", "scan"], {**extra, "ANTHROPIC_API_KEY": key}, fake, prefix)
            assert ran.returncode == 0, ran.stderr
            output = result_text(tool_results(fake.requests[1].body)[0])
    finally:
        end_warm_zygotes(runtime)
    rows = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    return Scan(rows, parent.read_text())


def _agent(
    tmp_path: Path, args: list[str], env: dict[str, str], fake: FakeAnthropic | None, prefix: list[str]
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*prefix, *agent_command(args)],
        env=agent_env(tmp_path, fake, env),
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=bounded(90),
    )


def _until(condition: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + bounded(timeout)
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not come"
        time.sleep(0.05)


MECHANISMS = {
    "off": (["--sandbox", "off"], {}),
    "landlock": (["--sandbox", "required"], {"SPROUT_AGENT_SANDBOX_MECHANISM": "landlock"}),
    "bubblewrap": (["--sandbox", "required"], {"SPROUT_AGENT_SANDBOX_MECHANISM": "bubblewrap"}),
}


def _ours(scan: Scan, tmp_path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The run's agent processes (the relay, the zygote and the run when warm) and its server, as the scan saw them."""
    seen = [r for r in scan.rows if str(tmp_path) in r["cmd"]]
    servers = [r for r in seen if "fake_mcp_server" in r["cmd"]]
    # The relay's command line is the one it was started with; the run's is its title, `… in <tmp_path>`; the
    # warm interpreter's names no directory: it is the one whose child the run is.
    agents = [r for r in seen if ("sprout_agent" in r["cmd"] or r["comm"] == "sprout-agent") and r not in servers]
    zygotes = [r for r in scan.rows if r["comm"] == "sprout-warm" and any(a["ppid"] == r["pid"] for a in agents)]
    return agents + zygotes, servers


@pytest.mark.e2e
@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
@pytest.mark.parametrize(
    "mechanism",
    ["off", pytest.param("landlock", marks=needs_landlock), pytest.param("bubblewrap", marks=needs_bwrap)],
)
@pytest.mark.slow
def test_the_warm_interpreter_leaves_the_key_readable(tmp_path: Path, mechanism: str, warm: bool) -> None:
    """The attack of issue 39: the relay a warm run leaves behind kept the key in its environ. With CAP_SYS_PTRACE
    (root: it opens every environ, non-dumpable or not) what holds is the scrub; as any other user, non-dumpable
    closes the environ and memory of every process of ours to the command."""
    sandbox, env = MECHANISMS[mechanism]
    scan = _scan(tmp_path, sandbox, env, warm=warm, prefix=[])
    assert scan.parent.endswith("sprout-warm\n") is warm, scan.parent  # the run was where the test meant it to be
    assert scan.found("key") == []
    holders = scan.found("token")
    assert all("fake_mcp_server" in r["cmd"] and r["in_cmdline"] == [] for r in holders), holders
    agents, servers = _ours(scan, tmp_path)
    if mechanism == "bubblewrap":  # its own pid namespace: no process of ours in sight
        assert agents == [] and servers == [] and holders == []
        return
    assert len(agents) == (3 if warm else 1), agents  # all in sight: Landlock does not hide processes either
    assert len(servers) == 1
    # The server's own environment (dumpable) is open to a command of its user, but not from under Landlock, which
    # closes every process outside the command's domain to it, unless CAP_SYS_PTRACE overrides both.
    if reads_any_process() or mechanism == "off":
        assert holders == servers and servers[0]["environ"]  # read, and the token seen
    else:
        assert holders == [] and not servers[0]["environ"] and not servers[0]["mem"], servers
    if reads_any_process():
        assert all(r["environ"] for r in agents), agents  # read, and scrubbed
    else:
        assert not any(r["environ"] or r["mem"] for r in agents), agents


@needs_plain_user
@pytest.mark.e2e
@pytest.mark.slow
def test_a_process_of_the_same_user_cannot_open_the_memory_of_the_relay_the_zygote_or_the_run(tmp_path: Path) -> None:
    """Root without CAP_SYS_PTRACE, as any other user is: where the key still is (os.environ, the request), the
    memory of our non-dumpable processes, is closed, while the server's (dumpable: an exec) is open, which shows the
    scan could have opened it."""
    assert SETPRIV is not None
    scan = _scan(tmp_path, ["--sandbox", "off"], {}, warm=True, prefix=[SETPRIV, "--bounding-set=-sys_ptrace", "--"])
    assert scan.parent.endswith("sprout-warm\n"), scan.parent
    agents, (server,) = _ours(scan, tmp_path)
    assert len(agents) == 3 and not any(r["mem"] for r in agents), agents
    assert server["mem"] and scan.found("key") == []


# ---------------------------------------------------------------- the warm peers, both non-dumpable (processes)

ASK = """
import json, socket, sys
from pathlib import Path
from sprout_agent.faces.warm import inherited, place
from sprout_agent.faces.warm.wire import Lines, send_request
conn = socket.socket(socket.AF_UNIX)
conn.settimeout(10)
with place.address(Path(sys.argv[1])) as listening:
    conn.connect(listening)
try:  # a refused peer's connection may be closed before the request is written: a broken pipe is a refusal too
    send_request(conn, json.dumps(inherited.of_this_process() | {"argv": ["sprout-agent", "-p", "hi"]}).encode())
    ready = Lines(conn).next()
except (BrokenPipeError, ConnectionResetError):
    ready = None
print("ready" if ready is not None and ready.get("ready") is True else "refused")
"""

needs_unshare = pytest.mark.skipif(shutil.which("unshare") is None, reason="no unshare here")


@needs_unshare
@pytest.mark.e2e
@pytest.mark.slow
def test_a_caller_in_namespaces_of_its_own_gets_no_warm_run_though_neither_side_is_dumpable(tmp_path: Path) -> None:
    """Every process of ours is non-dumpable now, so neither side of the socket sees the other's /proc/<pid>/ns
    (closed to all but root): a hardened caller from our namespaces still gets its `ready`, and one in namespaces
    of its own (unshare) still gets nothing."""
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    env = agent_env(
        tmp_path, None, {"SPROUT_AGENT_WARM": "1", "XDG_RUNTIME_DIR": str(runtime), "ANTHROPIC_API_KEY": ""}
    )
    try:
        started = subprocess.run(agent_command(["-p", "hi"]), env=env, cwd=tmp_path, capture_output=True, timeout=90)
        assert started.returncode == 2
        _until(lambda: any((runtime / "sprout-agent").glob("*.sock")), "the warm interpreter's socket")
        (sock,) = (runtime / "sprout-agent").glob("*.sock")
        ask = [sys.executable, "-c", ASK, str(sock)]
        asked = {
            where: subprocess.run(
                [*prefix, *ask], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=bounded(30)
            )
            for where, prefix in (("ours", []), ("its own", ["unshare", "--user", "--map-root-user", "--mount"]))
        }
    finally:
        end_warm_zygotes(runtime)
    assert {where: ran.stdout.strip() for where, ran in asked.items()} == {"ours": "ready", "its own": "refused"}, {
        where: ran.stderr for where, ran in asked.items()
    }
