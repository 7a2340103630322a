"""`sprout-agent hooks test`: checks any MCP server's hooks against the contract without writing an agent.

Each hook is called with realistic sample contexts (filled as the agent fills them: declared inputs only)
and with `{}` (what an agent that sends no context sends), and gets a verdict per hook: `fail` when it
breaks the contract (slower than the timeout, an error result or a failed call, a non-object inputSchema),
`warn` for what works here but is suspect (an unknown hook name, inputs outside the documented set).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import anyio

from sprout_agent.core.hooks import contract as hc
from sprout_agent.core.messages import text_of
from sprout_agent.core.protocols import HookCallFailed, ToolHost, ToolSpec

_SHOWN_CHARS = 200  # of each answer, in the report
# Objecting hooks: empty means "no objection"; injecting ones: empty means "nothing to add".
_OBJECTING = frozenset({hc.STOP, hc.PRE_TOOL_USE, hc.SUBAGENT_STOP})


def samples(hook: str, cwd: str) -> list[tuple[str, dict[str, object]]]:
    """Named sample contexts for `hook`, as the agent would build them in a session in `cwd`."""
    base: dict[str, object] = {"session_id": "0123456789abcdef0123456789abcdef", "cwd": cwd}
    bash = "dev__bash"
    by_hook: dict[str, list[tuple[str, dict[str, object]]]] = {
        hc.STOP: [
            (
                "first end_turn",
                {
                    "objections_so_far": 0,
                    "rejections_left": 3,
                    "trigger": "end_turn",
                    "last_assistant_message": "Done: the --json flag is added.",
                },
            ),
            (
                "last objection left",
                {
                    "objections_so_far": 2,
                    "rejections_left": 1,
                    "trigger": "end_turn",
                    "last_assistant_message": "I could not fix the last test.",
                },
            ),
        ],
        hc.POST_COMPACT: [
            ("auto", {"trigger": "auto", "last_assistant_message": ""}),
            ("manual", {"trigger": "manual", "last_assistant_message": ""}),
        ],
        hc.SESSION_START: [(source, {"source": source}) for source in ("startup", "resume", "clear")],
        hc.USER_PROMPT_SUBMIT: [
            ("a task", {"prompt": "Add a --json flag to the report command."}),
            ("a question", {"prompt": "why does test_report fail?"}),
        ],
        hc.PRE_TOOL_USE: [
            ("harmless command", {"tool_name": bash, "arguments": {"command": "git status --short"}}),
            ("destructive command", {"tool_name": bash, "arguments": {"command": "rm -rf ~"}}),
            ("write to .git", {"tool_name": "dev__write", "arguments": {"file_path": ".git/config", "content": "x"}}),
        ],
        hc.POST_TOOL_USE: [
            (
                "ok result",
                {
                    "tool_name": bash,
                    "arguments": {"command": "ls"},
                    "result_text": "README.md\nsrc\n",
                    "is_error": False,
                },
            ),
            (
                "error result",
                {"tool_name": bash, "arguments": {"command": "false"}, "result_text": "exit code 1", "is_error": True},
            ),
        ],
        hc.SESSION_END: [(reason, {"reason": reason}) for reason in ("exit", "clear", "signal")],
        hc.SUBAGENT_START: [
            (kind, {"agent_type": kind, "agent_id": "agent-1-0a1b2c3d", "description": what, "prompt": prompt})
            for kind, what, prompt in (
                ("Explore", "find the flag", "Where is --json parsed? Report the file and line."),
                ("general-purpose", "fix the test", "Make tests/test_report.py pass; change only src/report.py."),
            )
        ],
        hc.SUBAGENT_STOP: [
            (
                "first end",
                {
                    "agent_type": "general-purpose",
                    "agent_id": "agent-1-0a1b2c3d",
                    "objections_so_far": 0,
                    "rejections_left": 3,
                    "trigger": "end_turn",
                    "last_assistant_message": "The test passes now.",
                },
            )
        ],
    }
    return [(name, {**base, **context}) for name, context in by_hook.get(hook, [])]


@dataclass
class Answer:
    sample: str  # the sample's name, or "{}"
    arguments: dict[str, object]
    ms: float
    outcome: str  # answered, error, failed, timeout
    text: str = ""
    meaning: str = ""  # how the agent reads it: objection, no objection, injected, nothing to add, logged…
    chars: int = 0  # the whole answer's length (the report shows its start)


@dataclass
class HookReport:
    server: str
    hook: str
    known: bool
    declared: list[str]
    undocumented: list[str]  # declared inputs this hook is never given
    schema_ok: bool
    timeout_ms: int
    answers: list[Answer] = field(default_factory=list[Answer])
    p50_ms: float = 0.0
    max_ms: float = 0.0
    problems: list[str] = field(default_factory=list[str])  # contract breaks: the verdict is fail
    warnings: list[str] = field(default_factory=list[str])

    @property
    def verdict(self) -> str:
        return "fail" if self.problems else "warn" if self.warnings else "ok"


async def probe(host: ToolHost, timeout_ms: int, cwd: str, servers: Sequence[str] = ()) -> list[HookReport]:
    """Calls every hook of `servers` (all when empty), one at a time so latencies are the hook's own."""
    reports: list[HookReport] = []
    for spec in host.tools():
        if hc.is_hook(spec) and (not servers or spec.server in servers):
            reports.append(await _probe_one(host, spec, timeout_ms, cwd))
    return reports


async def _probe_one(host: ToolHost, spec: ToolSpec, timeout_ms: int, cwd: str) -> HookReport:
    declared = hc.declared_inputs(spec)
    allowed = hc.HOOK_CONTEXT.get(spec.tool, frozenset[str]())
    report = HookReport(
        spec.server,
        spec.tool,
        spec.tool in hc.HOOK_CONTEXT,
        declared,
        [name for name in declared if name not in allowed],
        spec.input_schema.get("type") == "object",
        timeout_ms,
    )
    if not report.schema_ok:
        report.problems.append(f"inputSchema type is {spec.input_schema.get('type')!r}, not 'object'")
    if not report.known:
        report.warnings.append(f"the agent never calls {spec.tool} (known: {', '.join(hc.HOOK_POINTS)})")
    if report.undocumented:
        report.warnings.append(
            f"inputs never given to {spec.tool}: {', '.join(report.undocumented)} (give them defaults)"
        )
    calls = [(name, hc.fill_context(spec, context)) for name, context in samples(spec.tool, cwd)] + [("{}", {})]
    for name, arguments in calls:
        answer = await _call(host, spec, name, arguments, timeout_ms / 1000)
        report.answers.append(answer)
        if answer.outcome != "answered":
            report.problems.append(f"{name}: {answer.outcome}" + (f": {answer.text}" if answer.text else ""))
        if answer.chars > hc.HOOK_TEXT_MAX_CHARS:
            report.warnings.append(f"{name}: {answer.chars} characters; the agent keeps {hc.HOOK_TEXT_MAX_CHARS}")
        if answer.outcome in ("timeout", "failed"):
            break  # a hung or dead server: more calls would only repeat it (and cost a timeout each)
    times = [a.ms for a in report.answers if a.outcome != "timeout"] or [float(timeout_ms)]
    report.p50_ms, report.max_ms = statistics.median(times), max(a.ms for a in report.answers)
    return report


async def _call(host: ToolHost, spec: ToolSpec, name: str, arguments: dict[str, object], timeout: float) -> Answer:
    started = time.perf_counter()
    with anyio.move_on_after(timeout):
        try:
            outcome = await host.call_hook(spec, arguments)
        except HookCallFailed as error:
            return Answer(name, arguments, _ms(started), "failed", str(error)[:_SHOWN_CHARS])
        text = text_of(outcome.content).strip()
        if outcome.is_error:
            return Answer(name, arguments, _ms(started), "error", text[:_SHOWN_CHARS], "ignored (error result)")
        meaning = _meaning(spec.tool, text)
        return Answer(name, arguments, _ms(started), "answered", text[:_SHOWN_CHARS], meaning, len(text))
    return Answer(name, arguments, _ms(started), "timeout", f"no answer within {timeout * 1000:g} ms")


def _meaning(hook: str, text: str) -> str:
    if hook in _OBJECTING:
        return "objection" if text else "no objection"
    if hook == hc.SESSION_END:
        return "logged" if text else "nothing to log"
    if hook == hc.SUBAGENT_START and hc.blocked(text) is not None:
        return "refuses the subagent"
    return "injected" if text else "nothing to add"


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 2)


def as_record(reports: Sequence[HookReport], failed_servers: Mapping[str, str]) -> dict[str, object]:
    """The `--json` object: one entry per hook, the servers that did not start, and `ok`."""
    hooks = [
        {
            "server": r.server,
            "hook": r.hook,
            "verdict": r.verdict,
            "known": r.known,
            "declared": r.declared,
            "undocumented": r.undocumented,
            "schema_ok": r.schema_ok,
            "timeout_ms": r.timeout_ms,
            "p50_ms": r.p50_ms,
            "max_ms": r.max_ms,
            "problems": r.problems,
            "warnings": r.warnings,
            "answers": [vars(a) for a in r.answers],
        }
        for r in reports
    ]
    ok = not failed_servers and all(r.verdict != "fail" for r in reports)
    return {"ok": ok, "hooks": hooks, "failed_servers": dict(failed_servers)}


def report_lines(reports: Sequence[HookReport], failed_servers: Mapping[str, str]) -> list[str]:
    """The human report: a verdict line per hook, then what it declared, its latency and its answers."""
    lines: list[str] = []
    for r in reports:
        lines.append(f"[{r.verdict}] {r.server}  {r.hook}")
        lines.append(f"    inputs: {', '.join(r.declared) or '(none: called with {})'}")
        lines.append(f"    latency: p50 {r.p50_ms:.1f} ms, max {r.max_ms:.1f} ms (timeout {r.timeout_ms} ms)")
        for a in r.answers:
            said = f" {a.text.splitlines()[0][:80]!r}" if a.text else ""
            lines.append(f"    {a.sample}: {a.outcome}, {a.meaning or '-'}{said}")
        lines += [f"    FAIL: {problem}" for problem in r.problems]
        lines += [f"    warn: {warning}" for warning in r.warnings]
    lines += [f"[fail] server {name} did not start: {why}" for name, why in failed_servers.items()]
    if not reports and not failed_servers:
        lines.append("no hooks found")
    return lines
