"""The warm interpreter as a boundary: a command the model runs, under bubblewrap or Landlock, can neither reach
its socket nor get a run from it; the peer check holds on the process that connected, not on whoever has its pid
now; and a warm run's process state is a cold one's, but for what inherited.DIFFERS lists. Real processes: the
CLI, the fake Anthropic server, the real zygote, real sandboxes."""

from __future__ import annotations

import contextlib
import json
import os
import pty
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sprout_agent.faces.warm import inherited, place
from sprout_agent.trust import landlock as _landlock
from sprout_agent.trust import sandbox as _sandbox
from tests.bounds import bounded
from tests.fake_anthropic import FakeAnthropic, reply, tool_use
from tests.harness import ROOT, agent_command, agent_env, end_warm_zygotes, result_text, tool_results, warm_zygotes
from tests.privileges import chooses_a_pid, reads_any_process, writes_its_own_proc_files

PY = sys.executable


@dataclass
class Warm:
    runtime: Path  # XDG_RUNTIME_DIR of the test's runs
    env: dict[str, str]

    def socket(self) -> Path | None:
        found = sorted((self.runtime / "sprout-agent").glob("*.sock"))
        return found[0] if found else None

    def started(self, home: Path) -> int:
        """A zygote serving this runtime directory (a first, cold run starts it): its pid."""
        if self.socket() is None:
            env = agent_env(home, None, {**self.env, "ANTHROPIC_API_KEY": ""})
            subprocess.run(agent_command(["-p", "hi"]), env=env, cwd=home, capture_output=True, timeout=bounded(60))
            settle(lambda: self.socket() is not None, "the zygote's socket")
        (zygote,) = warm_zygotes(self.runtime)
        return zygote


def settle(condition: Any, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + bounded(timeout)
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen"
        time.sleep(0.02)


@contextlib.contextmanager
def warm_in(runtime: Path) -> Iterator[Warm]:
    runtime.mkdir(mode=0o700, exist_ok=True)
    env = {"SPROUT_AGENT_WARM": "1", "XDG_RUNTIME_DIR": str(runtime), "SPROUT_AGENT_WARM_IDLE_SECONDS": "120"}
    try:
        yield Warm(runtime, env)
    finally:
        end_warm_zygotes(runtime)


@pytest.fixture
def warm(tmp_path: Path) -> Iterator[Warm]:
    with warm_in(tmp_path / "run") as made:
        yield made


def run_in(work: Path, home: Path, args: list[str], fake: FakeAnthropic, env: dict[str, str]) -> None:
    done = subprocess.run(
        agent_command(args), env=agent_env(home, fake, env), cwd=work, capture_output=True, text=True,
        timeout=bounded(90),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


# ---------------------------------------------------------------- a command asks the zygote for a run

# What a model's command would send: a request made as our own client makes it, for a run of its choosing (no
# sandbox, no permission asked, a server that is any program; here `touch MARKER`, so a run that happens shows).
ATTACK = r"""
import json, os, re, socket, sys
sock, marker = sys.argv[1], sys.argv[2]
sys.path.insert(0, sys.argv[3])
from pathlib import Path
from sprout_agent.faces.warm import inherited, place
from sprout_agent.faces.warm.wire import Lines, send_go, send_request
print("NoNewPrivs", re.search(r"NoNewPrivs:\s*(\d)", open("/proc/self/status").read()).group(1))
server = {"mcpServers": {"x": {"command": "touch", "args": [marker]}}}
sys.argv = ["sprout-agent", "--sandbox", "off", "--dangerously-skip-permissions", "--mcp-config", json.dumps(server),
            "-p", "hi"]
os.environ.update(ANTHROPIC_API_KEY="sk-ant-attacker", ANTHROPIC_BASE_URL="http://127.0.0.1:9")
conn = socket.socket(socket.AF_UNIX)
conn.settimeout(60)
try:
    with place.address(Path(sock)) as listening:
        conn.connect(listening)
except OSError as error:
    print("UNREACHABLE", error.errno)
    sys.exit(0)
try:
    send_request(conn, json.dumps(inherited.of_this_process()).encode())
    ready = Lines(conn).next()
except OSError:
    ready = None
if ready is None:
    print("REFUSED")
    sys.exit(0)
send_go(conn, [0, 1, 2])
print("RAN", Lines(conn).next())
"""


def code_in(work: Path) -> Path:
    """Our package, copied into the command's working directory, where every sandbox lets the command read it: the
    checkout may lie under /tmp (a CI's clone), which bubblewrap replaces with a private one."""
    code = work / "code"
    if not code.exists():
        shutil.copytree(ROOT / "sprout_agent", code / "sprout_agent", ignore=shutil.ignore_patterns("__pycache__"))
    return code


def attack(work: Path, warm: Warm, sandbox_env: dict[str, str], marker: Path) -> str:
    """The model's dev__bash command, under the sandbox `sandbox_env` chooses, runs ATTACK against the zygote;
    what it printed."""
    sock = warm.socket()
    assert sock is not None
    (work / "attack.py").write_text(ATTACK)
    command = f"{PY} attack.py {sock} {marker} {code_in(work)}"
    env = {**warm.env, **sandbox_env, "SPROUT_AGENT_BUILTIN_SERVERS": "dev"}
    with FakeAnthropic([reply(tool_use("dev__bash", {"command": command})), reply("done")]) as fake:
        run_in(work, work.parent, ["-p", "go"], fake, env)
        return result_text(tool_results(fake.requests[1].body)[-1])


def unconfined_attack(work: Path, warm: Warm, marker: Path) -> str:
    """The same request from a process under no sandbox: the control, which gets its run."""
    sock = warm.socket()
    env = agent_env(work.parent, None, warm.env)
    done = subprocess.run(
        [PY, "attack.py", str(sock), str(marker), str(code_in(work))], cwd=work, env=env, capture_output=True,
        text=True, timeout=bounded(120),
    )  # fmt: skip
    return done.stdout


@pytest.mark.e2e
@pytest.mark.skipif(_sandbox.probe() is not None, reason=f"no bubblewrap here: {_sandbox.probe()}")
@pytest.mark.slow
def test_a_command_under_bubblewrap_cannot_reach_the_warm_interpreter_wherever_the_runtime_directory_is(
    tmp_path: Path,
) -> None:
    work, marker = tmp_path / "work", tmp_path / "MARKER"
    work.mkdir()
    # A runtime directory outside /tmp and /run/user (both hidden by bubblewrap anyway): only the sandbox's
    # hiding of the warm directory keeps the socket out of the command's sight.
    runtime = Path(tempfile.mkdtemp(prefix="sprout-warm-", dir="/var/tmp"))
    try:
        with warm_in(runtime) as warm:
            zygote = warm.started(tmp_path)
            said = attack(work, warm, {"SPROUT_AGENT_SANDBOX_MECHANISM": "bubblewrap"}, marker)
            assert "NoNewPrivs 1" in said and "UNREACHABLE 2" in said, said  # ENOENT: an empty directory there
            assert not marker.exists()
            assert warm_zygotes(runtime) == [zygote]
            control = unconfined_attack(work, warm, marker)
            assert control.startswith("NoNewPrivs 0\nRAN") and marker.exists(), control
    finally:
        shutil.rmtree(runtime, ignore_errors=True)


@pytest.mark.e2e
@pytest.mark.skipif(_landlock.abi() < 1, reason="no Landlock in this kernel")
@pytest.mark.slow
def test_a_command_under_landlock_that_asks_the_warm_interpreter_for_a_run_gets_nothing(
    tmp_path: Path, warm: Warm
) -> None:
    work, marker = tmp_path / "work", tmp_path / "MARKER"
    work.mkdir()
    warm.started(tmp_path)
    # Landlock cannot keep a command from connecting to a socket by its path: the zygote refuses it (and the run
    # that hosts the command is itself warm, a child of the zygote the command attacks).
    said = attack(work, warm, {"SPROUT_AGENT_SANDBOX_MECHANISM": "landlock"}, marker)
    assert "NoNewPrivs 1" in said and "REFUSED" in said, said
    assert not marker.exists()
    control = unconfined_attack(work, warm, marker)
    assert control.startswith("NoNewPrivs 0\nRAN") and marker.exists(), control


# ---------------------------------------------------------------- the peer check and a reused pid


def _peerpidfd() -> bool:
    left, right = socket.socketpair()
    with left, right:
        try:
            os.close(left.getsockopt(socket.SOL_SOCKET, place.SO_PEERPIDFD))
        except OSError:
            return False
    return True


CONNECT_AND_LEAVE = """
import ctypes, os, socket, sys
ctypes.CDLL(None).prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS: confined, as a sandboxed command is
directory = os.open(os.path.dirname(sys.argv[1]), os.O_PATH)
conn = socket.socket(socket.AF_UNIX)
conn.connect(f"/proc/self/fd/{directory}/{os.path.basename(sys.argv[1])}")
print(os.getpid())
"""


def _pid_taken_by_an_unconfined_process(pid: int) -> subprocess.Popen[bytes] | None:
    """A new, unconfined process with the number `pid` (through ns_last_pid, as checkpoint/restore does), or
    None when another process took it first."""
    Path("/proc/sys/kernel/ns_last_pid").write_text(str(pid - 1))
    taker = subprocess.Popen(["sleep", "60"])
    if taker.pid == pid:
        return taker
    taker.kill()
    taker.wait()
    return None


@pytest.mark.skipif(not _peerpidfd(), reason="no SO_PEERPIDFD in this kernel (Linux 6.5+)")
@pytest.mark.skipif(
    not chooses_a_pid(), reason="choosing a pid (ns_last_pid) needs CAP_CHECKPOINT_RESTORE or CAP_SYS_ADMIN"
)
@pytest.mark.e2e
def test_a_confined_peer_whose_pid_an_unconfined_process_took_since_is_refused(tmp_path: Path) -> None:
    listener = socket.socket(socket.AF_UNIX)
    with place.address(tmp_path / "s") as bound:
        listener.bind(bound)
    listener.listen(8)
    listener.settimeout(bounded(10))
    for _attempt in range(5):  # another process may take the number first: try again with a new peer
        left = subprocess.run(
            [PY, "-c", CONNECT_AND_LEAVE, str(tmp_path / "s")], capture_output=True, text=True, check=True
        )
        conn, _ = listener.accept()  # the peer has exited and been reaped: its number is free
        taker = _pid_taken_by_an_unconfined_process(int(left.stdout))
        if taker is not None:
            break
        conn.close()
    else:
        pytest.skip("another process kept taking the pid")
    try:
        with conn:
            # By the pid alone, the peer is now an unconfined process of ours, like us in every way checked.
            proc = os.open(f"/proc/{taker.pid}", os.O_RDONLY | os.O_DIRECTORY)
            try:
                theirs = inherited.standing(proc)
            finally:
                os.close(proc)
            own = os.open("/proc/self", os.O_RDONLY | os.O_DIRECTORY)
            try:
                assert theirs == inherited.standing(own) and theirs is not None and not inherited.confined(theirs)
            finally:
                os.close(own)
            assert place.peer_is_like_us(conn) is False
    finally:
        taker.kill()
        taker.wait()


@pytest.mark.e2e
def test_a_live_unconfined_peer_of_ours_passes_and_a_confined_one_does_not(tmp_path: Path) -> None:
    left, right = socket.socketpair()
    with left, right:
        assert place.peer_is_like_us(left)
    listener = socket.socket(socket.AF_UNIX)
    with place.address(tmp_path / "s") as bound:
        listener.bind(bound)
    listener.listen(8)
    hold = CONNECT_AND_LEAVE.replace("print(os.getpid())", "print(os.getpid(), flush=True); sys.stdin.read()")
    peer = subprocess.Popen([PY, "-c", hold, str(tmp_path / "s")], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        conn, _ = listener.accept()
        with conn:
            assert place.peer_is_like_us(conn) is False  # alive, ours, but under no_new_privs
    finally:
        peer.communicate(timeout=bounded(10))


def test_a_warm_request_carries_exactly_what_inherited_lists() -> None:
    assert {*inherited.of_this_process(), "stdio"} == set(inherited.CARRIED)
    assert not set(inherited.CARRIED) & set(inherited.DIFFERS)


# ---------------------------------------------------------------- a warm run's process state is a cold one's

# Run by the model's dev__bash command with `exec`, so that its parent is the agent process itself (the run,
# warm or cold): it reads that process's state from /proc, and its own environment, which is what the run gives
# its commands. (Without CAP_SYS_PTRACE a run, non-dumpable, hides its cwd from /proc, and then the probe says so.)
PROBE = r"""
import json, os
agent = os.getppid()
def read(name):
    try:
        with open(f"/proc/{agent}/{name}") as f:
            return f.read()
    except OSError as error:
        return f"unreadable: {error.errno}"
status = dict(line.partition(":")[::2] for line in read("status").splitlines())
stat = read("stat").rsplit(")", 1)[1].split()
try:
    cwd = os.readlink(f"/proc/{agent}/cwd")
except OSError as error:
    cwd = f"unreadable: {error.errno}"
names = ("Uid", "Gid", "Groups", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp",
         "Seccomp_filters", "SigBlk", "SigIgn", "Umask", "Cpus_allowed_list")
found = {name: " ".join(status.get(name, "-").split()) for name in names}
found["pid namespace depth"] = len(status["NSpid"].split())
found |= {"limits": read("limits"), "cwd": cwd, "tty": stat[4], "nice": stat[16], "rt_priority": stat[37],
          "policy": stat[38], "oom_score_adj": read("oom_score_adj").strip(), "cgroup": read("cgroup"),
          "label": read("attr/current"), "loginuid": read("loginuid"), "env": dict(os.environ)}
print("PROBE" + json.dumps({"parent": int(status["PPid"]), "state": found}))
"""


# The OOM score a caller sets. A warm run takes it on by writing its own /proc/self/oom_score_adj, which the kernel
# hands to root once the process is non-dumpable (every process of ours is): without the privilege to open it, a
# caller whose score differs from the warm interpreter's goes cold. So there the caller keeps the test's own score.
OOM_SCORE = "500" if writes_its_own_proc_files() else Path("/proc/self/oom_score_adj").read_text().strip()


def _as_a_caller_would_be(tty: str, cpu: int) -> None:
    """The caller's own state, none of it the default: a session with a controlling terminal, a umask, limits,
    nice value, scheduling policy, CPU, OOM score (where a warm run can take it on), ignored and blocked signals."""
    os.setsid()
    os.close(os.open(tty, os.O_RDWR))  # a session leader's first terminal becomes its controlling one
    os.umask(0o027)
    resource.setrlimit(resource.RLIMIT_NOFILE, (512, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
    os.nice(3)
    os.sched_setaffinity(0, {cpu})
    Path("/proc/self/oom_score_adj").write_text(OOM_SCORE)
    for ignored in (signal.SIGALRM, signal.SIGTTOU, signal.SIGUSR1):
        signal.signal(ignored, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGPROF, signal.SIGURG})


def _probe(work: Path, home: Path, fake: FakeAnthropic, env: dict[str, str], flags: list[str]) -> dict[str, Any]:
    master, slave = pty.openpty()
    tty = os.ttyname(slave)
    cpu = min(os.sched_getaffinity(0))
    try:
        done = subprocess.run(
            agent_command([*flags, "--sandbox", "off", "-p", "probe"]),
            env=agent_env(home, fake, env), cwd=work, capture_output=True, text=True, timeout=bounded(90),
            preexec_fn=lambda: _as_a_caller_would_be(tty, cpu),
        )  # fmt: skip
    finally:
        os.close(master)
        os.close(slave)
    assert done.returncode == 0, done.stderr
    text = result_text(tool_results(fake.requests[-1].body)[-1])
    found = re.search(r"PROBE(\{.*\})", text)
    assert found is not None, text
    probed: dict[str, Any] = json.loads(found.group(1))
    return probed


def _bit(signum: int, mask: str) -> bool:
    return bool(int(mask, 16) >> (signum - 1) & 1)


@pytest.mark.e2e
@pytest.mark.slow
def test_a_warm_runs_process_state_is_a_cold_runs_but_for_what_inherited_lists_as_different(
    tmp_path: Path, warm: Warm
) -> None:
    zygote = warm.started(tmp_path)
    work = tmp_path / "work" / "sub"
    work.mkdir(parents=True)
    (work / "probe.py").write_text(PROBE)
    script = [reply(tool_use("dev__bash", {"command": f"exec {PY} probe.py"})), reply("done")]
    env = {**warm.env, "SPROUT_AGENT_BUILTIN_SERVERS": "dev", "SPROUT_PROBE_MARK": "the caller's"}
    with FakeAnthropic(script * 2) as fake:
        cold = _probe(work, tmp_path, fake, env, ["--no-warm"])
        hot = _probe(work, tmp_path, fake, env, [])
    assert hot["parent"] == zygote and cold["parent"] != zygote  # one went warm, the other not
    was, now = cold["state"], hot["state"]
    for state in (was, now):
        state["env"].pop("_SPROUT_DEV_CALL")  # each command's own mark (tools/_procs.py), whatever the run
    differing = {name for name in was if was[name] != now[name]}
    assert differing == {"tty"}, {name: (was[name], now[name]) for name in differing}
    assert differing <= set(inherited.DIFFERS)
    assert was["tty"] != "0" and now["tty"] == "0"  # the caller's terminal is the cold run's, not the warm one's
    # What the caller set reached both (so a warm run that dropped any of it would differ).
    assert now["Umask"] == "0027" and now["nice"] == "3" and now["policy"] == str(os.SCHED_BATCH)
    assert now["oom_score_adj"] == OOM_SCORE and now["Cpus_allowed_list"] == str(min(os.sched_getaffinity(0)))
    assert re.search(r"Max open files\s+512\s", now["limits"]) and re.search(
        r"Max core file size\s+0\s+0", now["limits"]
    )
    assert all(_bit(s, now["SigIgn"]) for s in (signal.SIGALRM, signal.SIGTTOU, signal.SIGUSR1))
    assert all(_bit(s, now["SigBlk"]) for s in (signal.SIGPROF, signal.SIGURG))
    # Only who may ptrace a non-dumpable run sees its cwd; both runs hide it alike from anyone else (EACCES).
    assert now["cwd"] == (str(work) if reads_any_process() else "unreadable: 13")
    assert now["env"]["SPROUT_PROBE_MARK"] == "the caller's"


def test_a_request_from_other_namespaces_or_another_root_is_not_taken_on() -> None:
    request = inherited.of_this_process()
    elsewhere = list(inherited.namespaces(None))
    elsewhere[inherited.NAMESPACES.index("net")] = "net:[1]"
    assert inherited.take_on({**request, "namespaces": elsewhere}) is False
    assert inherited.take_on({**request, "root": [0, 2]}) is False  # a chroot's "/" is another directory
