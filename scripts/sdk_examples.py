"""Runs the Claude Agent SDK for Python's own examples and e2e tests against sprout-agent (docs/testing.md).

The SDK is pinned (claude-agent-sdk==SDK_VERSION) in a venv of its own, .ci/sdk-venv, made once; its bundled CLI
(claude_agent_sdk/_bundled/claude) is replaced by a two-line wrapper that execs this checkout's
.venv/bin/sprout-agent: that is the only change, the "CLI path". The examples come from the pinned sdist
(downloaded into .ci/ once), the e2e tests from third_party/claude-agent-sdk-python/e2e-tests (copied unchanged:
CI has no access to GitHub). Each item (scripts/sdk_examples_scenarios.py) gets a fake Anthropic API of its own
(tests/fake_anthropic.py) serving its scripted model, a fresh HOME and XDG directories, and runs with a bounded
time, two at a time; the agent runs through a warm interpreter in a private runtime directory, ended at the end.
Exit 1 when a result disagrees with tests/sdk_examples_expected.txt (a new failure, or a listed one that passes),
2 when the SDK cannot be installed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import venv
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sdk_examples_model import Model  # noqa: E402
from sdk_examples_scenarios import E2E, E2E_TESTS, EXAMPLES, Item  # noqa: E402

from tests.fake_anthropic import FakeAnthropic  # noqa: E402

SDK_VERSION = "0.2.189"
SDK_VENV = ROOT / ".ci" / "sdk-venv"
SDIST_DIR = ROOT / ".ci" / "sdk-sdist"
E2E_DIR = ROOT / "third_party" / "claude-agent-sdk-python" / "e2e-tests"
EXPECTED = ROOT / "tests" / "sdk_examples_expected.txt"
OUT = ROOT / ".ci" / "sdk-examples-out"  # each item's output, for a look after a failure
ITEM_TIMEOUT = 240  # seconds for one item: streaming_mode runs ten sessions, two of them waiting 2 s to interrupt
FAKE_KEY = "sk-ant-api03-fake-key-for-the-sdk-examples"
README = "# A project\n\nA readme for the examples that read one.\n"


def run(argv: list[str], timeout: float) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        sys.exit(f"scripts/sdk_examples: {' '.join(argv[:4])}… failed:\n{done.stderr.strip()[-2000:]}")


def sdk_python() -> Path:
    """The SDK venv's python, made once; the bundled CLI always re-pointed at this checkout's sprout-agent."""
    python = SDK_VENV / "bin" / "python"
    marker = SDK_VENV / f"claude-agent-sdk-{SDK_VERSION}"
    if not marker.exists():
        venv.create(SDK_VENV, with_pip=True, clear=True)
        run([str(python), "-m", "pip", "install", "-q", f"claude-agent-sdk=={SDK_VERSION}", "pytest", "anyio"], 600)
        marker.touch()
    site = subprocess.run(
        [str(python), "-c", "import claude_agent_sdk, os; print(os.path.dirname(claude_agent_sdk.__file__))"],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout.strip()  # fmt: skip
    cli = Path(site) / "_bundled" / "claude"
    cli.parent.mkdir(exist_ok=True)
    cli.unlink(missing_ok=True)  # the bundled Claude Code binary (or an older wrapper): never run, never written to
    cli.write_text(f'#!/bin/sh\nexec "{ROOT / ".venv" / "bin" / "sprout-agent"}" "$@"\n', encoding="utf-8")
    cli.chmod(0o755)
    return python


def examples_dir(python: Path) -> Path:
    """The pinned sdist's examples/, downloaded and unpacked once."""
    unpacked = SDIST_DIR / f"claude_agent_sdk-{SDK_VERSION}"
    if not (unpacked / "examples").is_dir():
        SDIST_DIR.mkdir(parents=True, exist_ok=True)
        pip = [str(python), "-m", "pip", "download", "-q", "--no-binary", ":all:", "--no-deps", "-d", str(SDIST_DIR)]
        run([*pip, f"claude-agent-sdk=={SDK_VERSION}"], 300)
        with tarfile.open(SDIST_DIR / f"claude_agent_sdk-{SDK_VERSION}.tar.gz") as sdist:
            sdist.extractall(SDIST_DIR, filter="data")
    return unpacked / "examples"


def items(examples: Path) -> list[Item]:
    found = [Item(i.id, (str(examples / i.args[0]), *i.args[1:]), i.rules, i.expect, i.rc) for i in EXAMPLES]
    for file, tests in E2E_TESTS.items():
        for test in tests:
            node = f"{E2E_DIR / file}::{test}"
            args = ("-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", os.devnull, "--rootdir", str(E2E_DIR), node)
            found.append(Item(f"e2e:{file}::{test}", args, E2E))
    return found


@dataclass(frozen=True)
class Result:
    item: Item
    passed: bool
    note: str  # why it failed
    seconds: float


def run_item(python: Path, item: Item, warm_dir: str) -> Result:
    started = time.monotonic()
    with (
        tempfile.TemporaryDirectory(prefix="sdk-example-") as scratch,
        FakeAnthropic([Model(item.rules)] * 500) as fake,
    ):
        home, work = Path(scratch, "home"), Path(scratch, "work")
        for directory in (home, work, home / ".config", home / ".local/share", home / ".local/state", home / ".cache"):
            directory.mkdir(parents=True, exist_ok=True)
        (work / "README.md").write_text(README, encoding="utf-8")
        env = {
            "PATH": f"{python.parent}:{os.environ['PATH']}", "LANG": "C.UTF-8",
            "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "XDG_DATA_HOME": str(home / ".local/share"),
            "XDG_STATE_HOME": str(home / ".local/state"), "XDG_CACHE_HOME": str(home / ".cache"),
            "XDG_RUNTIME_DIR": warm_dir, "SPROUT_AGENT_WARM": "1",
            "ANTHROPIC_BASE_URL": fake.base_url, "ANTHROPIC_API_KEY": FAKE_KEY, "PYTHONUNBUFFERED": "1",
        }  # fmt: skip
        proc = subprocess.Popen(
            [str(python), *item.args], cwd=work, env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        )  # fmt: skip
        try:
            output, errors = proc.communicate(timeout=ITEM_TIMEOUT)
            note = verdict(item, proc.returncode, output, errors)
        except subprocess.TimeoutExpired:
            output, errors, note = "", "", f"no exit within {ITEM_TIMEOUT} s"
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # its session: the example and the agents it started
            proc.wait(timeout=30)
        OUT.mkdir(parents=True, exist_ok=True)
        name = str(OUT / re.sub(r"[^\w.-]+", "_", item.id))
        Path(name + ".log").write_text(f"{output}\n--- stderr\n{errors}", encoding="utf-8")
        requests = (json.dumps({"path": r.path, "body": r.body}) for r in fake.requests)
        Path(name + ".requests.jsonl").write_text("\n".join(requests) + "\n", encoding="utf-8")
    return Result(item, not note, note, time.monotonic() - started)


def verdict(item: Item, rc: int, output: str, errors: str) -> str:
    """Why the item failed, in one line; empty when it passed."""
    if item.id.startswith("e2e:"):
        if rc == 0:
            return ""
        failure = re.findall(r"^E\s+(.+)$", output, re.MULTILINE) or output.strip().splitlines()[-1:] or ["no output"]
        return failure[0][:300]
    if rc != item.rc:
        last = errors.strip().splitlines()[-1:] or output.strip().splitlines()[-1:] or ["no output"]
        return f"exit {rc} (expected {item.rc}): {last[0][:200]}"
    missing = [pattern for pattern in item.expect if not re.search(pattern, output)]
    return f"output lacks /{missing[0]}/" if missing else ""


def expectations(path: Path) -> dict[str, str]:
    """id → "pass", or the reason it is expected to fail (`id  fail REASON`); `#` starts a comment."""
    found: dict[str, str] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        key, _, rest = line.partition(" ")
        rest = rest.strip()
        if rest != "pass" and not (rest.startswith("fail ") and rest[5:].strip()):
            sys.exit(f"scripts/sdk_examples: {path.name}:{number}: want `ID pass` or `ID fail REASON`")
        found[key] = "pass" if rest == "pass" else rest[5:].strip()
    return found


def end_warm_interpreters(warm_dir: str) -> None:
    """Ends the warm interpreters started in our private runtime directory (by the pids their locks name)."""
    from sprout_agent.faces.warm import live

    with contextlib.suppress(OSError):
        for one in live.interpreters(Path(warm_dir) / "sprout-agent"):
            live.stop(one.pid)


def main() -> int:
    parser = argparse.ArgumentParser(description="The Python SDK's examples and e2e tests against sprout-agent.")
    parser.add_argument("only", nargs="*", help="run only the items whose id contains one of these")
    args = parser.parse_args()
    expected = expectations(EXPECTED)
    python = sdk_python()
    chosen = [i for i in items(examples_dir(python)) if not args.only or any(o in i.id for o in args.only)]
    if unlisted := [i.id for i in chosen if i.id not in expected]:
        sys.exit(f"scripts/sdk_examples: {EXPECTED.name} does not list {', '.join(unlisted)}")
    started = time.monotonic()
    warm_dir = tempfile.mkdtemp(prefix="sdk-examples-warm-")
    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            results = list(pool.map(lambda item: run_item(python, item, warm_dir), chosen))
    finally:
        end_warm_interpreters(warm_dir)
        shutil.rmtree(warm_dir, ignore_errors=True)
    disagree = 0
    for r in results:
        want = expected[r.item.id]
        agrees = r.passed == (want == "pass")
        disagree += not agrees
        state = "pass" if r.passed else "FAIL"
        why = "" if r.passed else f": {r.note}"
        flag = "" if agrees else (" (UNEXPECTED)" if not r.passed else f" (listed as failing: {want}; remove it)")
        print(f"{state:4} {r.item.id} ({r.seconds:.0f} s){why}{flag}")
    for kind, label in (("example:", "examples"), ("e2e:", "e2e")):
        mine = [r for r in results if r.item.id.startswith(kind)]
        print(f"{label} {sum(r.passed for r in mine)}/{len(mine)}", end="  " if kind == "example:" else "")
    print(f"  ({time.monotonic() - started:.0f} s)")
    if disagree:
        print(f"scripts/sdk_examples: {disagree} result(s) disagree with {EXPECTED.relative_to(ROOT)}", file=sys.stderr)
    return 1 if disagree else 0


if __name__ == "__main__":
    sys.exit(main())
