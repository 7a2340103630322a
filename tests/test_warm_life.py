"""The warm interpreter as a user sees it (issue 45, item 2): each process says what it is in ps, top and
/proc/PID/comm; a warm interpreter whose code changed leaves as soon as its runs end; the runtime directory holds
only the files of live interpreters; `sprout-agent doctor` lists them and stops them. Real processes, each test in
a runtime directory of its own, with its own copy of the package where the test edits the code."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sprout_agent.faces.warm import live
from sprout_agent.faces.warm.title import RUN_COMM, WARM_COMM
from sprout_agent.faces.warm.zygote import STALE_CHECK_SECONDS
from tests.bounds import bounded
from tests.fake_anthropic import FakeAnthropic, reply, tool_use
from tests.harness import ROOT, fake_server, pid_alive, read_log, run_agent, start_agent, wait_for, write_config
from tests.stream_schema import valid_lines
from tests.test_warm import Warm, settle

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

STREAM = ["--output-format", "stream-json", "--verbose"]
TITLE = re.compile(r"sprout-agent: run ([0-9a-f-]{36}) in (.+)")


@pytest.fixture
def warm(tmp_path: Path) -> Warm:
    """A private runtime directory and a copy of the package of the test's own (PYTHONPATH), so that editing
    its code changes no other test's fingerprint."""
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    package = tmp_path / "pkg"
    shutil.copytree(ROOT / "sprout_agent", package / "sprout_agent", ignore=shutil.ignore_patterns("__pycache__"))
    env = {
        "SPROUT_AGENT_WARM": "1",
        "XDG_RUNTIME_DIR": str(runtime),
        "SPROUT_AGENT_WARM_IDLE_SECONDS": "300",  # far above every wait below: leaving is never the idle time
        "PYTHONPATH": str(package),
    }
    return Warm(runtime, env)


@pytest.fixture(autouse=True)
def _end_zygotes(warm: Warm) -> Iterator[None]:
    yield
    for pid in warm.zygotes():
        live.stop(pid)


def proc(pid: int) -> tuple[str, str]:
    """(/proc/PID/comm, /proc/PID/cmdline as ps shows it)."""
    comm = Path(f"/proc/{pid}/comm").read_text().strip()
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    return comm, cmdline


def held_run(tmp_path: Path, fake: FakeAnthropic, env: dict[str, str]) -> tuple[subprocess.Popen[str], Path]:
    """A run whose one tool call is held open until the test creates the returned gate file."""
    gate, log = tmp_path / f"gate-{time.monotonic_ns()}", tmp_path / f"calls-{time.monotonic_ns()}.jsonl"
    config = write_config(tmp_path, {"fake": fake_server(log=str(log), slow_gate=str(gate))})
    process = start_agent(tmp_path, ["--config", str(config), *STREAM, "-p", "go"], fake=fake, env=env, text=True)
    wait_for(lambda: len(read_log(log)) == 1, "the held call reaching its server", process)
    return process, gate


def session_of(out: str) -> str:
    return str(valid_lines(out)[-1]["session_id"])


def test_a_cold_run_a_warm_run_and_the_warm_interpreter_each_say_what_they_are(tmp_path: Path, warm: Warm) -> None:
    zygote = warm.started(tmp_path)
    assert proc(zygote) == (WARM_COMM, "sprout-agent: warm interpreter 0.1.0")
    script = [reply(tool_use("fake__slow", {"seconds": 60})), reply("done")] * 2
    with FakeAnthropic(script) as fake:
        for extra in ({"SPROUT_AGENT_WARM": "0"}, {}):  # cold, then warm
            process, gate = held_run(tmp_path, fake, {**warm.env, **extra})
            try:
                run = process.pid if extra else warm.children(zygote)[0]
                comm, cmdline = proc(run)
                gate.touch()
                out, err = process.communicate(timeout=bounded(30))
            finally:
                process.kill()
            assert process.returncode == 0, err
            assert comm == RUN_COMM
            assert TITLE.fullmatch(cmdline), cmdline
            assert cmdline == f"sprout-agent: run {session_of(out)} in {tmp_path}"
    assert proc(zygote)[0] == WARM_COMM  # the children's titles are theirs alone


def test_a_warm_interpreter_whose_code_changed_leaves_when_its_run_ends_and_takes_its_files(
    tmp_path: Path, warm: Warm
) -> None:
    old = warm.started(tmp_path)
    (old_print,) = {name.split(".")[0] for name in os.listdir(warm.base)}
    script = [reply(tool_use("fake__slow", {"seconds": 60})), reply("new code"), reply("done")]  # in request order
    with FakeAnthropic(script) as fake:
        process, gate = held_run(tmp_path, fake, warm.env)
        try:
            (in_flight,) = warm.children(old)
            # An edit of the installed code: a module newer than any before (a revert would do the same).
            module = tmp_path / "pkg" / "sprout_agent" / "core" / "errors.py"
            later = time.time() + 5
            os.utime(module, (later, later))
            fresh = run_agent(tmp_path, ["-p", "hi"], fake=fake, env=warm.env)
            assert fresh.code == 0 and fresh.stdout == "new code\n", fresh.stderr  # cold: its code has no zygote
            settle(lambda: len(warm.zygotes()) == 2, "the new code's warm interpreter starting")
            assert pid_alive(old) and pid_alive(in_flight)  # the old one waits for its run
            gate.touch()
            _out, err = process.communicate(timeout=bounded(30))
        finally:
            process.kill()
    ended = time.monotonic()
    assert process.returncode == 0, err
    # Gone when its run ended: before the idle time (300 s), and before its first periodic check of the code could
    # have found the change (STALE_CHECK_SECONDS after the run's end woke it).
    settle(lambda: not pid_alive(old), "the old warm interpreter leaving as its run ended", timeout=30)
    assert time.monotonic() - ended < STALE_CHECK_SECONDS
    (new,) = warm.zygotes()
    # The new code's zygote binds its socket once it has loaded what it preloads: a cold run now ends before that.
    settle(lambda: len(warm.sockets()) == 1, "the new code's warm interpreter listening")
    names = os.listdir(warm.base)
    assert not [name for name in names if name.startswith(old_print)], names  # its lock, log and socket
    assert {name.rsplit(".", 1)[1] for name in names} == {"lock", "log", "sock"}
    assert new != old


def test_the_files_of_dead_interpreters_go_and_nothing_else(tmp_path: Path, warm: Warm) -> None:
    """A warm interpreter that was killed leaves its lock, log and socket: the next to start removes them, through
    no link, and nothing that is not named as ours."""
    zygote = warm.started(tmp_path)
    os.kill(zygote, signal.SIGKILL)
    settle(lambda: not pid_alive(zygote), "the killed warm interpreter gone")
    base = warm.base
    left = sorted(os.listdir(base))
    assert [name.rsplit(".", 1)[1] for name in left] == ["lock", "log", "sock"]
    outside = tmp_path / "precious"
    outside.write_text("keep")
    (base / f"w-{'a' * 20}.lock").symlink_to(outside)  # our name, but a link: not followed, not taken
    (base / f"w-{'b' * 20}.sock.123").write_text("")  # a socket a zygote bound and died before renaming
    (base / "notes.txt").write_text("not ours")
    long_ago = time.time() - 3600
    for name in os.listdir(base):
        os.utime(base / name, (long_ago, long_ago), follow_symlinks=False)  # no zygote is starting
    # The code changes (a fingerprint of its own), so the next run starts another zygote, which clears up.
    later = time.time() + 5
    os.utime(tmp_path / "pkg" / "sprout_agent" / "core" / "errors.py", (later, later))
    assert run_agent(tmp_path, ["-p", "hi"], fake=None, env={**warm.env, "ANTHROPIC_API_KEY": ""}).code == 2

    def new_sockets() -> list[Path]:
        return [sock for sock in warm.sockets() if sock.name not in left]

    settle(lambda: len(new_sockets()) == 1 and len(warm.zygotes()) == 1, "the new code's warm interpreter")
    (sock,) = new_sockets()
    ours = {sock.name.replace(".sock", suffix) for suffix in (".sock", ".lock", ".log")}
    expected = {*ours, f"w-{'a' * 20}.lock", "notes.txt"}  # the living's, and what is not a dead one's
    settle(lambda: set(os.listdir(base)) == expected, f"only {sorted(expected)} left (not {os.listdir(base)})")
    assert (base / f"w-{'a' * 20}.lock").is_symlink() and outside.read_text() == "keep"


def test_doctor_lists_the_warm_interpreters_with_age_and_memory_and_stops_them(tmp_path: Path, warm: Warm) -> None:
    zygote = warm.started(tmp_path)
    listed = run_agent(tmp_path, ["doctor", "--json", "--offline"], fake=None, env=warm.env)
    assert listed.code == 0, listed.stderr
    (one,) = json.loads(listed.stdout)["interpreters"]
    assert one["pid"] == zygote and one["current"] is True and one["runs"] == 0
    assert one["memory_bytes"] > 20 * 2**20 and one["age_s"] >= 0
    text = run_agent(tmp_path, ["doctor", "--offline"], fake=None, env=warm.env)
    assert f"pid {zygote}  up " in text.stdout and "this install's code" in text.stdout
    assert "SPROUT_AGENT_WARM=0 turns it off" in text.stdout
    stopped = run_agent(tmp_path, ["doctor", "--stop"], fake=None, env=warm.env)
    assert stopped.code == 0 and "stopping" in stopped.stdout
    settle(lambda: not pid_alive(zygote), "the stopped warm interpreter leaving")
    assert os.listdir(warm.base) == []  # it took its files with it
    after = run_agent(tmp_path, ["doctor", "--offline"], fake=None, env=warm.env)
    assert f"\nwarm interpreters in {warm.base}: none\n" in after.stdout  # after the provider's lines
