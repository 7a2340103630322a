"""`sprout-agent batch report DIR`: one HTML page over a batch's output directory (a running batch shows what is
done; merged shards read as one): a table of the tasks, sortable by a click on a column, each linking to its
session page (made beside it from the task's stream-json transcript), and charts drawn as inline SVG when the page
is made: cost and duration per task, their distributions, failures by stop reason. Its one script (the sort) is
allowed by hash in the page's Content-Security-Policy; nothing from a record can run."""

from __future__ import annotations

import base64
import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import Any, cast

from sprout_agent.batch.private import PrivateDir, write_file
from sprout_agent.faces.pages.charts import bars, histogram
from sprout_agent.faces.pages.entries import from_stream
from sprout_agent.faces.pages.session_page import CSP, page, session_html

MONEY, SECONDS = "${:.4f}", "{:.1f} s"  # how the charts show a task's cost and duration
SORT = (
    "document.querySelectorAll('th').forEach((th,i)=>th.addEventListener('click',()=>{"
    "const body=document.querySelector('tbody');const rows=[...body.rows];const up=th.dataset.up!=='1';"
    "document.querySelectorAll('th').forEach(h=>delete h.dataset.up);th.dataset.up=up?'1':'0';"
    "const key=r=>{const c=r.cells[i];const v=c.dataset.v;return v===undefined?c.textContent:parseFloat(v)};"
    "rows.sort((a,b)=>{const x=key(a),y=key(b);return (x<y?-1:x>y?1:0)*(up?1:-1)});"
    "rows.forEach(r=>body.appendChild(r))}));"
)
TABLE_STYLE = (
    "table{border-collapse:collapse;width:100%;font-size:.9em}th,td{border-bottom:1px solid #e5e5e5;padding:.3em .5em;"
    "text-align:left}th{cursor:pointer;background:#f6f6f6}td.n{text-align:right;font-variant-numeric:tabular-nums}"
    ".failed,.timeout,.interrupted{color:#b00}.ok{color:#0a6b1f}.charts{display:flex;flex-wrap:wrap;gap:1em}"
    "figure{margin:0}figcaption{font-size:.9em;color:#444}"
)


def write_report(directory: Path, out: Path | None = None) -> Path:
    """Writes `report.html` (and a page per finished task under `report/`) in `directory`, 0600 in 0700
    directories; returns the page. A directory another user could steer is refused (private.Unsafe)."""
    with PrivateDir.open(directory, create=False) as top, top.sub("report") as pages:  # checked before it is read
        records = _records(directory / "results.jsonl")
        ids = _task_ids(directory / "batch.json") or [str(r.get("id")) for r in records]
        rows = [_row(record, directory, pages) for record in records]
        pending = [task for task in ids if task not in {str(r.get("id")) for r in records}]
        html = report_html(directory.name, rows, pending)
        if out is None:
            top.write("report.html", html)
            return top.path / "report.html"
    write_file(out, html)
    return out


def report_html(title: str, rows: Sequence[dict[str, Any]], pending: Sequence[str]) -> str:
    done = len(rows)
    failed = sum(1 for r in rows if r["status"] != "ok")
    cost = sum(r["cost"] for r in rows)
    head = (
        f"<header><h1>Batch {escape(title)}</h1><p class=meta>{done} tasks done ({failed} not ok), "
        f"{len(pending)} not finished; cost ${cost:.4f}</p></header>"
    )
    charts = "".join(
        [
            bars("cost per task", [(r["id"], r["cost"]) for r in rows], MONEY),
            bars("duration per task", [(r["id"], r["seconds"]) for r in rows], SECONDS),
            histogram("cost distribution", [r["cost"] for r in rows], MONEY),
            histogram("duration distribution", [r["seconds"] for r in rows], SECONDS),
            bars("not ok, by stop reason", sorted(_failures(rows).items()), "{:.0f}"),
        ]
    )
    table = _table(rows) + (f"<p class=meta>not finished: {escape(', '.join(pending))}</p>" if pending else "")
    digest = base64.b64encode(hashlib.sha256(SORT.encode()).digest()).decode()
    csp = CSP + f"; script-src 'sha256-{digest}'"
    body = f"<style>{TABLE_STYLE}</style>{head}<div class=charts>{charts}</div>{table}"
    return page(f"sprout-agent batch {title}", body, SORT, csp)


def _table(rows: Sequence[dict[str, Any]]) -> str:
    header = "".join(
        f"<th>{name}</th>" for name in ("task", "status", "stop", "turns", "tokens", "cost", "duration", "diff")
    )
    lines: list[str] = []
    for r in rows:
        link = f"<a href='{escape(r['page'])}'>{escape(r['id'])}</a>" if r["page"] else escape(r["id"])
        cells = [
            f"<td>{link}</td>",
            f"<td class='{escape(r['status'])}'>{escape(r['status'])}</td>",
            f"<td>{escape(r['stop'])}</td>",
            _number(r["turns"], "{:.0f}"),
            _number(r["tokens"], "{:.0f}"),
            _number(r["cost"], "${:.4f}"),
            _number(r["seconds"], "{:.1f} s"),
            _number(r["diff_lines"], "{:.0f} lines"),
        ]
        lines.append(f"<tr>{''.join(cells)}</tr>")
    return f"<table><thead><tr>{header}</tr></thead><tbody>{''.join(lines)}</tbody></table>"


def _number(value: float, shown: str) -> str:
    return f"<td class=n data-v='{value}'>{escape(shown.format(value))}</td>"


def _row(record: dict[str, Any], directory: Path, pages: PrivateDir) -> dict[str, Any]:
    given: object = record.get("usage")
    usage = cast(dict[str, object], given) if isinstance(given, dict) else {}
    task = str(record.get("id", "?"))
    diff = record.get("diff")
    return {
        "id": task,
        "status": str(record.get("status", "?")),
        "stop": str(record.get("stop_reason") or ""),
        "turns": _float(record.get("turns")),
        "tokens": float(sum(v for v in usage.values() if isinstance(v, int) and not isinstance(v, bool))),
        "cost": _float(record.get("cost_usd")),
        "seconds": _float(record.get("duration_ms")) / 1000,
        "diff_lines": float(len(diff.splitlines()) if isinstance(diff, str) else 0),
        "page": _task_page(record, directory, pages),
    }


def _float(value: object) -> float:
    """A record's number, 0 for anything else (a hand-edited or foreign line must not stop the report)."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def _task_page(record: dict[str, Any], directory: Path, pages: PrivateDir) -> str:
    """The task's session page, from its stream-json transcript; "" when there is none."""
    transcript = record.get("transcript")
    if not isinstance(transcript, str):
        return ""
    source = (directory / transcript).resolve()
    if not source.is_relative_to(directory.resolve()) or not source.is_file():
        return ""  # a record names a file of the batch's directory, or nothing
    name = hashlib.sha256(str(record.get("id")).encode()).hexdigest()[:16] + ".html"
    pages.write(name, session_html(from_stream(source)))
    return f"report/{name}"


def _failures(rows: Sequence[dict[str, Any]]) -> Counter[str]:
    return Counter(r["stop"] or r["status"] for r in rows if r["status"] != "ok")


def _records(path: Path) -> list[dict[str, Any]]:
    """The records written so far (a running batch: the last line may be half-written, and is skipped); a task
    recorded twice (a retry) is shown as its last record."""
    found: dict[str, dict[str, Any]] = {}
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and "id" in record:
            kept = cast(dict[str, Any], record)
            found[str(kept["id"])] = kept
    return list(found.values())


def _task_ids(path: Path) -> list[str]:
    try:
        data: object = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    ids = cast(dict[str, object], data).get("task_ids") if isinstance(data, dict) else None
    return [str(i) for i in cast(list[object], ids)] if isinstance(ids, list) else []
