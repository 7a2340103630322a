"""Runs the official MCP conformance suite's client scenarios against sprout-agent (tests/conformance_client.py).

Installs nothing: `.ci/run` puts Node 22 and `@modelcontextprotocol/conformance` in .ci/node22 (or point
CONFORMANCE_NODE and CONFORMANCE_SUITE at them). Every client scenario runs, two at a time, each bounded; the
table shows scenario → passed/failed with the suite's checks (passed/total, from its result files). Exit 1 when
a scenario fails that tests/conformance_expected.txt does not list, or when a listed one passes (so the list
stays true); 2 when the suite cannot be run.

So that a loaded runner does not fail it: each scenario's limits are the idle machine's scaled by the load
when it starts (tests/bounds.py, the rule every bound in the tests follows); the agents run through the warm
interpreter, in a runtime directory of this run's own that is cleared at the end (`--cold`: each in its own
process); and a scenario that ran out of time, not one that failed, runs once more, alone, after the others.
The table says "passed on retry" or "timed out twice".
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.bounds import load_factor  # noqa: E402
from tests.conformance_client import LIMIT_VARIABLE, RUN_TIMEOUT, WARM_VARIABLE  # noqa: E402
from tests.harness import end_warm_zygotes, warm_zygotes  # noqa: E402

NODE_DIR = ROOT / ".ci" / "node22" / "node_modules"
EXPECTED = ROOT / "tests" / "conformance_expected.txt"
CLIENT = "tests.conformance_client"
# Seconds on an idle two-core machine, each scaled by the load factor when the scenario starts: the agent's run
# (tests/conformance_client.RUN_TIMEOUT), the client as a whole (the suite kills it after this), and the
# scenario with the suite's servers set up and torn down.
SUITE_TIMEOUT = 60.0
SCENARIO_TIMEOUT = 150.0
VERDICT = re.compile(r"^conformance-client: (\S+)(.*)$", re.MULTILINE)
SUITE_KILLED_CLIENT = "Client timed out after"  # the suite's words when its --timeout ends the client
# Scenarios where the right client refuses to connect (tests/conformance_client.REFUSING): the suite passes a
# client that never tried, so these count only when the client did start the OAuth discovery.
REFUSING = frozenset({"auth/resource-mismatch", "auth/scope-retry-limit"})
DISCOVERY = "/.well-known/oauth-protected-resource"


@dataclass(frozen=True)
class Result:
    scenario: str
    passed: bool
    checks_passed: int
    checks_total: int
    note: str  # why it failed, shortest first
    timed_out: bool = False  # ran out of time (the agent, the client or the scenario): worth one more try
    retried: bool = False
    seconds: float = 0.0
    factor: float = 1.0  # the load factor its limits were scaled by


def tools() -> tuple[str, str]:
    node = os.environ.get("CONFORMANCE_NODE") or str(NODE_DIR / ".bin" / "node")
    suite = os.environ.get("CONFORMANCE_SUITE") or str(NODE_DIR / "@modelcontextprotocol/conformance/dist/index.js")
    for path, what in ((node, "Node 22 (npm package node@22)"), (suite, "@modelcontextprotocol/conformance")):
        if not Path(path).is_file():
            sys.exit(f"scripts/conformance: {what} not found at {path}: .ci/run installs it into .ci/node22")
    version = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    if not re.fullmatch(r"v(2[2-9]|[3-9]\d)\..*", version):
        sys.exit(f"scripts/conformance: the suite needs Node 22 or newer, {node} is {version or 'unknown'}")
    return node, suite


def client_scenarios(node: str, suite: str) -> list[str]:
    listed = subprocess.run([node, suite, "list", "--client"], capture_output=True, text=True, timeout=60)
    names = re.findall(r"^\s+- (\S+)", listed.stdout, re.MULTILINE)
    if listed.returncode != 0 or not names:
        sys.exit(f"scripts/conformance: `conformance list --client` failed: {listed.stderr.strip()[:300]}")
    return names


def expected_failures(path: Path) -> dict[str, str]:
    """scenario → reason, one per line (`scenario  reason`); `#` starts a comment."""
    found: dict[str, str] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        scenario, _, reason = line.partition(" ")
        if not reason.strip():
            sys.exit(f"scripts/conformance: {path.name}:{number}: {scenario} needs a reason")
        found[scenario] = reason.strip()
    return found


def run_one(node: str, suite: str, scenario: str, where: Path, warm_dir: Path | None) -> Result:
    """One scenario, every limit scaled by the load factor as it starts."""
    where.mkdir(parents=True, exist_ok=True)
    factor = load_factor()
    command = f"{sys.executable} -m {CLIENT}"
    args = [node, suite, "client", "--command", command, "--scenario", scenario]
    args += ["--timeout", str(round(SUITE_TIMEOUT * factor * 1000)), "-o", str(where)]
    env = os.environ | {LIMIT_VARIABLE: f"{RUN_TIMEOUT * factor:.1f}"}
    if warm_dir is not None:
        env[WARM_VARIABLE] = str(warm_dir)
    limit = SCENARIO_TIMEOUT * factor
    began = time.monotonic()
    # A process group of its own, to end whatever the scenario leaves; not a session, which on a kernel with
    # autogroup scheduling would give each scenario a CPU share as large as a whole login's.
    suite_run = subprocess.Popen(
        args, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, process_group=0,
    )  # fmt: skip
    try:
        log, _ = suite_run.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        log = None
    _kill_group(suite_run.pid)  # the suite, and any client or agent its own kill left behind
    if log is None:
        suite_run.communicate()
        note = f"no result within {limit:.0f} s"
        return Result(scenario, False, 0, 0, note, timed_out=True, seconds=limit, factor=factor)
    (where / "suite.log").write_text(log, encoding="utf-8")
    result = judge(scenario, suite_run.returncode, where)
    timed_out = result.timed_out or (not result.passed and SUITE_KILLED_CLIENT in log)
    return replace(result, timed_out=timed_out, seconds=time.monotonic() - began, factor=factor)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def with_retry(node: str, suite: str, first: Result, out: Path, warm_dir: Path | None) -> Result:
    """A scenario that ran out of time runs once more (the caller runs these one at a time); one that failed does
    not, since a second try would only hide a flaky failure."""
    if not first.timed_out:
        return first
    again = run_one(node, suite, first.scenario, result_dir(out, first.scenario, "-retry"), warm_dir)
    return replace(again, retried=True)


def judge(scenario: str, suite_code: int, where: Path) -> Result:
    found = sorted(where.rglob("checks.json"), key=lambda p: p.stat().st_mtime)
    checks_file = found[-1] if found else None  # the newest, should --output-dir hold an earlier run
    checks: list[dict[str, object]] = json.loads(checks_file.read_text()) if checks_file else []
    counted = [c for c in checks if c.get("status") in ("SUCCESS", "FAILURE")]
    passed = sum(1 for c in counted if c.get("status") == "SUCCESS")
    stderr = (checks_file.parent / "stderr.txt").read_text(errors="replace") if checks_file else ""
    verdicts = VERDICT.findall(stderr)
    verdict, facts = verdicts[-1] if verdicts else ("NONE", " the wrapper printed no verdict")
    failed = [c for c in counted if c.get("status") == "FAILURE"]
    note = ""
    if failed and verdict != "TIMEOUT":  # a run cut short fails checks because it was cut short: say that
        note = f"{failed[0].get('id')}: {str(failed[0].get('errorMessage') or failed[0].get('description'))[:120]}"
    if verdict not in ("OK", "REFUSED"):
        note = note or f"sprout-agent: {verdict}{facts}"[:160]
    elif scenario in REFUSING and not any(DISCOVERY in str(c.get("description", "")) for c in checks):
        note = "passes only because the client never tried OAuth discovery"
    elif not counted:
        note = "no checks ran"
    ok = suite_code == 0 and not note
    return Result(scenario, ok, passed, len(counted), note if not ok else "", timed_out=verdict == "TIMEOUT")


def outcome(r: Result) -> str:
    if r.passed:
        return "passed on retry" if r.retried else "passed"
    if r.timed_out:
        return "timed out twice" if r.retried else "timed out"
    return "failed"


def report(results: list[Result], expected: dict[str, str]) -> int:
    width = max(len(r.scenario) for r in results)
    surprises = 0
    print(f"{'scenario':<{width}}  {'result':<15}  checks  seconds  note")
    for r in results:
        listed = r.scenario in expected
        if r.passed and listed:
            note, surprises = "UNEXPECTED PASS: remove it from tests/conformance_expected.txt", surprises + 1
        elif not r.passed and not listed:
            note, surprises = f"UNEXPECTED FAILURE: {r.note}", surprises + 1
        else:
            note = f"expected: {expected[r.scenario]}" if listed else ""
        checks = f"{r.checks_passed}/{r.checks_total}"
        print(f"{r.scenario:<{width}}  {outcome(r):<15}  {checks:>6}  {r.seconds:>7.1f}  {note}".rstrip())
    total_passed = sum(r.checks_passed for r in results)
    total = sum(r.checks_total for r in results)
    scenarios_passed = sum(r.passed for r in results)
    retried = [r for r in results if r.retried]
    factors = [r.factor for r in results]
    print(
        f"conformance: {scenarios_passed} of {len(results)} scenarios pass, checks {total_passed}/{total}; "
        f"{len(retried)} retried after a timeout ({sum(r.passed for r in retried)} passed on retry); "
        f"limits scaled by the load {min(factors):.1f}-{max(factors):.1f}x"
    )
    if surprises:
        print(f"scripts/conformance: {surprises} scenario(s) disagree with tests/conformance_expected.txt")
    return 1 if surprises else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("scenarios", nargs="*", help="run only these (default: every client scenario)")
    parser.add_argument("-o", "--output-dir", type=Path, help="keep the suite's result files here")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("--cold", action="store_true", help="run each agent in its own process, not warm")
    args = parser.parse_args()
    node, suite = tools()
    scenarios = args.scenarios or client_scenarios(node, suite)
    expected = expected_failures(EXPECTED)
    unknown = sorted(set(expected) - set(client_scenarios(node, suite)))
    if unknown:
        sys.exit(f"scripts/conformance: tests/conformance_expected.txt names no such scenario: {', '.join(unknown)}")
    with tempfile.TemporaryDirectory(prefix="sprout-conformance-") as tmp:
        out = args.output_dir or Path(tmp) / "results"
        warm_dir = None if args.cold else Path(tmp) / "run"
        if warm_dir is not None:
            warm_dir.mkdir(mode=0o700)
        try:
            with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
                first = list(pool.map(lambda s: run_one(node, suite, s, result_dir(out, s), warm_dir), scenarios))
            results = [with_retry(node, suite, r, out, warm_dir) for r in first]
        finally:
            if warm_dir is not None:
                clear_warm(warm_dir)
        return report(results, expected)


def clear_warm(runtime: Path) -> None:
    """Ends the warm interpreters of this run: asked to leave (each does once its runs have ended), then killed
    if still there after a bounded wait, so that none outlives the run (CI must leave no process behind)."""
    end_warm_zygotes(runtime)
    deadline = time.monotonic() + 10 * load_factor()
    while (left := warm_zygotes(runtime)) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in left:
        _kill(pid)


def result_dir(out: Path, scenario: str, attempt: str = "") -> Path:
    return out / (scenario.replace("/", "_") + attempt)


if __name__ == "__main__":
    sys.exit(main())
