"""The warm interpreter (sprout_agent/faces/warm): a `-p` run handed to a zygote's child behaves as a cold one
(output, exit codes, signals, stdin), nothing of one run reaches the next, a confined peer is refused, and the
switches and the idle bound hold. Real processes throughout; each test has a runtime directory of its own, and
its zygote is ended at teardown."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from sprout_agent.faces.warm import place
from tests.bounds import bounded
from tests.fake_anthropic import FakeAnthropic, reply, tool_use
from tests.harness import (
    Run,
    agent_env,
    end_warm_zygotes,
    fake_server,
    pid_alive,
    read_log,
    run_agent,
    start_agent,
    wait_for,
    warm_zygotes,
    write_config,
)
from tests.privileges import reads_any_process
from tests.stream_schema import valid_lines

JSON = ["--output-format", "json"]


@dataclass
class Warm:
    runtime: Path  # XDG_RUNTIME_DIR for the test's runs
    env: dict[str, str]

    @property
    def base(self) -> Path:
        return self.runtime / "sprout-agent"

    def sockets(self) -> list[Path]:
        return sorted(self.base.glob("*.sock")) if self.base.exists() else []

    def zygotes(self) -> list[int]:
        """The zygotes serving this test's directory."""
        return warm_zygotes(self.runtime)

    def children(self, zygote: int) -> list[int]:
        try:
            return [int(p) for p in Path(f"/proc/{zygote}/task/{zygote}/children").read_text().split()]
        except OSError:
            return []

    def started(self, tmp_path: Path) -> int:
        """Makes sure a zygote serves (a first, cold run starts it) and returns its pid."""
        if not self.sockets():
            no_key = {**self.env, "ANTHROPIC_API_KEY": ""}
            assert run_agent(tmp_path, ["-p", "hi"], fake=None, env=no_key).code == 2  # cold: no key, exit 2
            settle(lambda: bool(self.sockets()), "the zygote's socket")
        (zygote,) = self.zygotes()
        return zygote


def settle(condition: Callable[[], bool], what: str, timeout: float = 30) -> None:
    """Polls (bounded) until `condition` holds."""
    deadline = time.monotonic() + bounded(timeout)
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen"
        time.sleep(0.02)


@pytest.fixture
def warm(tmp_path: Path) -> Iterator[Warm]:
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    env = {"SPROUT_AGENT_WARM": "1", "XDG_RUNTIME_DIR": str(runtime), "SPROUT_AGENT_WARM_IDLE_SECONDS": "120"}
    made = Warm(runtime, env)
    yield made
    end_warm_zygotes(runtime)  # it leaves once its children have ended; they have


def no_key(warm: Warm) -> dict[str, str]:
    return {**warm.env, "ANTHROPIC_API_KEY": ""}


# ---------------------------------------------------------------- which runs go warm (in-process)


@pytest.mark.parametrize(
    ("args", "stdin_is_terminal", "env", "expected"),
    [
        (["-p", "hi"], True, {}, True),
        (["--output-format", "stream-json", "--verbose"], False, {}, True),  # the SDKs: prompts on a pipe
        (["fix it"], True, {}, False),  # the interactive session
        ([], True, {}, False),
        (["mcp", "list"], False, {}, False),
        (["-p", "hi", "--no-warm"], True, {}, False),
        (["-p", "hi"], True, {"SPROUT_AGENT_WARM": "0"}, False),
        (["-p", "--help"], True, {}, False),
        (["--version"], False, {}, False),
    ],
)
def test_which_runs_go_to_the_warm_interpreter(
    args: list[str], stdin_is_terminal: bool, env: dict[str, str], expected: bool
) -> None:
    assert place.wanted(args, env, stdin_is_terminal) is expected


def test_the_subcommands_it_leaves_alone_are_the_apps() -> None:
    from typer.main import get_command

    from sprout_agent.faces.cli.app import app

    assert set(getattr(get_command(app), "commands", {})) == place.SUBCOMMANDS


def test_a_socket_directory_others_can_enter_or_a_link_is_not_used(tmp_path: Path) -> None:
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    (runtime / "sprout-agent").mkdir()
    os.chmod(runtime / "sprout-agent", 0o755)
    assert place.directory({"XDG_RUNTIME_DIR": str(runtime)}) is None
    os.rmdir(runtime / "sprout-agent")
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    (runtime / "sprout-agent").symlink_to(tmp_path / "elsewhere")
    assert place.directory({"XDG_RUNTIME_DIR": str(runtime)}) is None
    os.unlink(runtime / "sprout-agent")
    assert place.directory({"XDG_RUNTIME_DIR": str(runtime)}) == runtime / "sprout-agent"


# ---------------------------------------------------------------- runs through it (processes)


@pytest.mark.e2e
@pytest.mark.slow
def test_a_warm_run_answers_exits_and_reads_stdin_as_a_cold_one(tmp_path: Path, warm: Warm) -> None:
    warm.started(tmp_path)
    cold_missing = run_agent(tmp_path, [*JSON, "-p", "hi", "--no-warm"], fake=None, env=no_key(warm))
    warm_missing = run_agent(tmp_path, [*JSON, "-p", "hi"], fake=None, env=no_key(warm))

    def seen(run: Run) -> tuple[object, ...]:
        (result,) = valid_lines(run.stdout)
        return run.code, {k: v for k, v in result.items() if k != "uuid"}, run.stderr

    assert seen(warm_missing) == seen(cold_missing)
    assert warm_missing.code == 2
    config = {"fake": fake_server()}
    script = [reply("the answer"), reply(tool_use("fake__echo", {"text": "x"})), reply("never")]
    with FakeAnthropic(script) as fake:
        piped = run_agent(tmp_path, JSON, fake=fake, servers=config, env=warm.env, stdin="the question\n")
        capped = run_agent(tmp_path, [*JSON, "--max-turns", "1", "-p", "go"], fake=fake, servers=config, env=warm.env)
        first = fake.requests[0].body
    assert piped.code == 0, piped.stderr
    (result,) = valid_lines(piped.stdout)
    assert result["result"] == "the answer"
    assert first["messages"][0]["content"][0]["text"].startswith("the question")
    assert capped.code == 3
    assert valid_lines(capped.stdout)[0]["stop_reason"] == "max_turns"
    assert len(warm.zygotes()) == 1  # the same zygote served them all


@pytest.mark.e2e
@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
@pytest.mark.slow
def test_a_signal_to_the_caller_reaches_the_run(tmp_path: Path, warm: Warm, signum: int, code: int) -> None:
    zygote = warm.started(tmp_path)
    log = tmp_path / "calls.jsonl"
    config = write_config(tmp_path, {"fake": fake_server(log=str(log))})
    script = [reply(tool_use("fake__slow", {"seconds": 60}, id="t_slow"))]
    with FakeAnthropic(script) as fake:
        args = ["--config", str(config), "--output-format", "stream-json", "--verbose", "-p", "go"]
        process = start_agent(tmp_path, args, fake=fake, env=warm.env, text=True)
        try:
            wait_for(lambda: len(read_log(log)) == 1, "the slow call reaching its server", process)
            (run,) = warm.children(zygote)  # the run is the zygote's child, not the caller
            process.send_signal(signum)
            out, err = process.communicate(timeout=bounded(20))
        finally:
            process.kill()
    assert process.returncode == code, err
    result = valid_lines(out)[-1]
    assert result["exit_code"] == code and result["stop_reason"] == "interrupted"
    assert not pid_alive(run)


@pytest.mark.e2e
@pytest.mark.slow
def test_killing_the_caller_ends_the_run(tmp_path: Path, warm: Warm) -> None:
    zygote = warm.started(tmp_path)
    log = tmp_path / "calls.jsonl"
    config = write_config(tmp_path, {"fake": fake_server(log=str(log))})
    with FakeAnthropic([reply(tool_use("fake__slow", {"seconds": 60}))]) as fake:
        process = start_agent(tmp_path, ["--config", str(config), "-p", "go"], fake=fake, env=warm.env)
        try:
            wait_for(lambda: len(read_log(log)) == 1, "the slow call reaching its server", process)
            (run,) = warm.children(zygote)
            process.kill()
            process.wait(timeout=bounded(10))
            settle(lambda: not pid_alive(run), "the run ending with its caller")
        finally:
            process.kill()


@pytest.mark.e2e
@pytest.mark.slow
def test_nothing_of_one_run_reaches_the_next(tmp_path: Path, warm: Warm) -> None:
    zygote = warm.started(tmp_path)
    with FakeAnthropic([reply("one"), reply("two")]) as fake:
        first = run_agent(tmp_path, ["-p", "a"], fake=fake, env={**warm.env, "ANTHROPIC_API_KEY": "sk-ant-first"})
        second = run_agent(tmp_path, ["-p", "b"], fake=fake, env={**warm.env, "ANTHROPIC_API_KEY": "sk-ant-second"})
        keys = [
            r.headers.get("x-api-key") or r.headers.get("authorization", "").removeprefix("Bearer ")
            for r in fake.requests
        ]
    assert (first.code, second.code) == (0, 0)
    assert keys == ["sk-ant-first", "sk-ant-second"]
    if reads_any_process():
        block = Path(f"/proc/{zygote}/environ").read_bytes()
        assert b"sk-ant" not in block and b"ANTHROPIC" not in block  # it started with a minimal environment
    else:  # non-dumpable: its environ is closed to every other process of the user, this test's included
        with pytest.raises(PermissionError):
            Path(f"/proc/{zygote}/environ").read_bytes()


@pytest.mark.e2e
@pytest.mark.slow
def test_a_confined_peer_gets_nothing_and_a_confined_run_goes_cold(tmp_path: Path, warm: Warm) -> None:
    zygote = warm.started(tmp_path)
    (sock,) = warm.sockets()
    probe = f"""
import ctypes, socket, sys
ctypes.CDLL(None, use_errno=True).prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS, as Landlock needs
from pathlib import Path
from sprout_agent.faces.warm.place import address
from sprout_agent.faces.warm.wire import send_request, Lines
conn = socket.socket(socket.AF_UNIX)
conn.settimeout(10)
with address(Path({str(sock)!r})) as listening:
    conn.connect(listening)
try:
    send_request(conn, b'{{}}')
except OSError:
    pass
print(Lines(conn).next())
"""
    asked = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=bounded(20))
    assert asked.stdout.strip() == "None", asked.stderr  # closed without a word
    assert warm.children(zygote) == []
    confined = (
        "import ctypes, runpy, sys; ctypes.CDLL(None).prctl(38, 1, 0, 0, 0); "
        "sys.argv = ['sprout-agent', '-p', 'hi']; runpy.run_module('sprout_agent', run_name='__main__')"
    )
    with FakeAnthropic([reply("cold and fine")]) as fake:
        env = agent_env(tmp_path, fake, warm.env)
        ran = subprocess.run([sys.executable, "-c", confined], env=env, cwd=tmp_path, capture_output=True, text=True)
    assert ran.returncode == 0 and ran.stdout.strip() == "cold and fine", ran.stderr


@pytest.mark.e2e
@pytest.mark.slow
def test_switched_off_no_zygote_starts(tmp_path: Path, warm: Warm) -> None:
    for extra, flag in (({"SPROUT_AGENT_WARM": "0"}, []), ({}, ["--no-warm"])):
        with FakeAnthropic([reply("cold")]) as fake:
            ran = run_agent(tmp_path, [*flag, "-p", "hi"], fake=fake, env={**warm.env, **extra})
        assert ran.code == 0 and ran.stdout.strip() == "cold"
    assert warm.sockets() == [] and warm.zygotes() == []


@pytest.mark.e2e
@pytest.mark.slow
def test_an_idle_zygote_leaves_and_takes_its_socket(tmp_path: Path, warm: Warm) -> None:
    warm.env["SPROUT_AGENT_WARM_IDLE_SECONDS"] = "0.5"
    zygote = warm.started(tmp_path)
    settle(lambda: not pid_alive(zygote) and not warm.sockets(), "the idle zygote leaving with its socket")


@pytest.mark.e2e
@pytest.mark.slow
def test_a_batch_starts_the_zygote_its_tasks_use(tmp_path: Path, warm: Warm) -> None:
    (tmp_path / "tasks.jsonl").write_text("".join(json.dumps({"id": f"t{n}", "prompt": "go"}) + "\n" for n in range(3)))
    with FakeAnthropic([reply("done")] * 3) as fake:
        ran = run_agent(tmp_path, ["batch", "tasks.jsonl", "--out", "out", "--jobs", "2"], fake=fake, env=warm.env)
    assert ran.code == 0, ran.stderr
    records = [json.loads(line) for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    assert sorted(r["status"] for r in records) == ["ok"] * 3
    # One zygote: the one the batch started before its first task is the one every task found (a task that came
    # to a socket of another fingerprint would have started a second).
    assert len(warm.sockets()) == 1 and len(warm.zygotes()) == 1


@pytest.mark.e2e
@pytest.mark.slow
def test_a_run_under_no_new_privs_neither_uses_nor_starts_one(tmp_path: Path, warm: Warm) -> None:
    """Landlock needs no_new_privs and shows nowhere else: a zygote started by such a run would serve the
    commands it confines, so such a run stays cold (place.no_new_privs)."""
    confined = (
        "import ctypes, runpy, sys; ctypes.CDLL(None).prctl(38, 1, 0, 0, 0); "
        "sys.argv = ['sprout-agent', '-p', 'hi']; runpy.run_module('sprout_agent', run_name='__main__')"
    )
    with FakeAnthropic([reply("cold"), reply("cold again")]) as fake:
        env = agent_env(tmp_path, fake, warm.env)
        for _ in range(2):
            ran = subprocess.run(
                [sys.executable, "-c", confined], env=env, cwd=tmp_path, capture_output=True, text=True
            )
            assert ran.returncode == 0, ran.stderr
    assert warm.sockets() == [] and warm.zygotes() == []


@pytest.mark.e2e
@pytest.mark.slow
def test_a_stopped_zygote_costs_a_bounded_wait_and_holds_no_pipe(tmp_path: Path, warm: Warm) -> None:
    zygote = warm.started(tmp_path)
    os.kill(zygote, signal.SIGSTOP)
    try:
        with FakeAnthropic([reply("cold after all")]) as fake:
            ran = run_agent(tmp_path, ["-p", "hi"], fake=fake, env=warm.env, timeout=60)  # output read to its end
        assert ran.code == 0 and ran.stdout == "cold after all\n", ran.stderr
    finally:
        os.kill(zygote, signal.SIGCONT)
    assert warm.children(zygote) == []  # the child it forked late saw the caller gone and ran nothing


@pytest.mark.e2e
@pytest.mark.slow
def test_a_signal_the_caller_ignores_is_ignored_by_the_run(tmp_path: Path, warm: Warm) -> None:
    zygote = warm.started(tmp_path)
    log = tmp_path / "calls.jsonl"
    config = write_config(tmp_path, {"fake": fake_server(log=str(log))})
    script = [reply(tool_use("fake__slow", {"seconds": 1}, id="t_slow")), reply("survived")]
    with FakeAnthropic(script) as fake:
        args = ["--config", str(config), "-p", "go"]
        ignore_hup = lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN)  # noqa: E731 - as nohup starts it
        process = start_agent(tmp_path, args, fake=fake, env=warm.env, text=True, preexec_fn=ignore_hup)
        try:
            wait_for(lambda: len(read_log(log)) == 1, "the slow call reaching its server", process)
            assert len(warm.children(zygote)) == 1
            process.send_signal(signal.SIGHUP)
            out, err = process.communicate(timeout=bounded(20))
        finally:
            process.kill()
    assert process.returncode == 0, err
    assert out == "survived\n"
