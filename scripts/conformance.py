"""Runs the official MCP conformance suite's client scenarios against sprout-agent (tests/conformance_client.py).

Installs nothing: `.ci/run` puts Node 22 and `@modelcontextprotocol/conformance` in .ci/node22 (or point
CONFORMANCE_NODE and CONFORMANCE_SUITE at them). Every client scenario runs, two at a time, each bounded; the
table shows scenario → passed/failed with the suite's checks (passed/total, from its result files). Exit 1 when
a scenario fails that tests/conformance_expected.txt does not list, or when a listed one passes (so the list
stays true); 2 when the suite cannot be run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NODE_DIR = ROOT / ".ci" / "node22" / "node_modules"
EXPECTED = ROOT / "tests" / "conformance_expected.txt"
CLIENT = "tests.conformance_client"
SUITE_TIMEOUT_MS = 60_000  # the suite kills the client after this
RUN_TIMEOUT = 150  # seconds for one whole scenario, server set-up and teardown included
VERDICT = re.compile(r"^conformance-client: (\S+)(.*)$", re.MULTILINE)
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


def run_one(node: str, suite: str, scenario: str, out: Path) -> Result:
    where = out / scenario.replace("/", "_")
    where.mkdir(parents=True, exist_ok=True)
    command = f"{sys.executable} -m {CLIENT}"
    args = [node, suite, "client", "--command", command, "--scenario", scenario]
    args += ["--timeout", str(SUITE_TIMEOUT_MS), "-o", str(where)]
    try:
        done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        return Result(scenario, False, 0, 0, f"no result within {RUN_TIMEOUT} s")
    (where / "suite.log").write_text(done.stdout + done.stderr, encoding="utf-8")
    return judge(scenario, done.returncode, where)


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
    if failed:
        note = f"{failed[0].get('id')}: {str(failed[0].get('errorMessage') or failed[0].get('description'))[:120]}"
    if verdict not in ("OK", "REFUSED"):
        note = note or f"sprout-agent: {verdict}{facts}"[:160]
    elif scenario in REFUSING and not any(DISCOVERY in str(c.get("description", "")) for c in checks):
        note = "passes only because the client never tried OAuth discovery"
    elif not counted:
        note = "no checks ran"
    ok = suite_code == 0 and not note
    return Result(scenario, ok, passed, len(counted), note if not ok else "")


def report(results: list[Result], expected: dict[str, str]) -> int:
    width = max(len(r.scenario) for r in results)
    surprises = 0
    print(f"{'scenario':<{width}}  result  checks  note")
    for r in results:
        listed = r.scenario in expected
        if r.passed and listed:
            note, surprises = "UNEXPECTED PASS: remove it from tests/conformance_expected.txt", surprises + 1
        elif not r.passed and not listed:
            note, surprises = f"UNEXPECTED FAILURE: {r.note}", surprises + 1
        else:
            note = f"expected: {expected[r.scenario]}" if listed else ""
        result = "passed" if r.passed else "failed"
        print(f"{r.scenario:<{width}}  {result:<6}  {f'{r.checks_passed}/{r.checks_total}':>6}  {note}".rstrip())
    total_passed = sum(r.checks_passed for r in results)
    total = sum(r.checks_total for r in results)
    scenarios_passed = sum(r.passed for r in results)
    print(f"conformance: {scenarios_passed} of {len(results)} scenarios pass, checks {total_passed}/{total}")
    if surprises:
        print(f"scripts/conformance: {surprises} scenario(s) disagree with tests/conformance_expected.txt")
    return 1 if surprises else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("scenarios", nargs="*", help="run only these (default: every client scenario)")
    parser.add_argument("-o", "--output-dir", type=Path, help="keep the suite's result files here")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    args = parser.parse_args()
    node, suite = tools()
    scenarios = args.scenarios or client_scenarios(node, suite)
    expected = expected_failures(EXPECTED)
    unknown = sorted(set(expected) - set(client_scenarios(node, suite)))
    if unknown:
        sys.exit(f"scripts/conformance: tests/conformance_expected.txt names no such scenario: {', '.join(unknown)}")
    with tempfile.TemporaryDirectory(prefix="sprout-conformance-") as tmp:
        out = args.output_dir or Path(tmp)
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            results = list(pool.map(lambda s: run_one(node, suite, s, out), scenarios))
        return report(results, expected)


if __name__ == "__main__":
    sys.exit(main())
