"""The end of a batch: totals and one row per task, as a table on stderr or one JSON object on stdout;
`batch merge` builds the same summary from several shards' directories."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sprout_agent.batch.outcome import STATUSES, USAGE_KEYS
from sprout_agent.batch.outdir import RESULTS, OutDir, read_records, read_shard, shard_transcripts
from sprout_agent.batch.swebench import PREDICTIONS, prediction_files
from sprout_agent.core.errors import UsageError

ROW_KEYS = ("id", "status", "exit_code", "stop_reason", "turns", "cost_usd", "duration_ms", "session_id")


def summarise(task_ids: Iterable[str], records: dict[str, dict[str, Any]]) -> dict[str, Any]:
    ids = sorted(set(task_ids))
    done = [records[i] for i in ids if i in records]
    counts = {status: sum(1 for r in done if r.get("status") == status) for status in STATUSES}
    usage = {key: sum(int(r.get("usage", {}).get(key, 0)) for r in done) for key in USAGE_KEYS}
    return {
        "type": "batch_summary",
        "tasks": len(ids),
        **counts,
        "not_run": len(ids) - len(done),
        "cost_usd": round(sum(float(r.get("cost_usd") or 0) for r in done), 6),
        "turns": sum(int(r.get("turns") or 0) for r in done),
        "usage": usage,
        "duration_ms": sum(int(r.get("duration_ms") or 0) for r in done),
        "results": [{key: r.get(key) for key in ROW_KEYS} for r in done],
    }


def table(summary: dict[str, Any]) -> str:
    rows = [("id", "status", "exit", "turns", "cost", "time", "stop")]
    for r in summary["results"]:
        exit_code = "-" if r["exit_code"] is None else str(r["exit_code"])
        seconds = f"{(r['duration_ms'] or 0) / 1000:.1f}s"
        rows.append((r["id"], r["status"], exit_code, str(r["turns"]), f"${r['cost_usd']:.4f}", seconds, _s(r)))
    widths = [min(40, max(len(row[i]) for row in rows)) for i in range(len(rows[0]))]
    lines = ["  ".join(cell[:40].ljust(width) for cell, width in zip(row, widths, strict=True)) for row in rows]
    counts = ", ".join(f"{summary[s]} {s}" for s in (*STATUSES, "not_run") if summary[s])
    lines.append(
        f"{summary['tasks']} tasks: {counts or 'none run'}; ${summary['cost_usd']:.4f}, {summary['turns']} turns"
    )
    return "\n".join(line.rstrip() for line in lines)


def _s(row: dict[str, Any]) -> str:
    return str(row.get("stop_reason") or "")


def merge(directories: list[Path], out: Path | None) -> dict[str, Any]:
    """One summary over shards' directories (each task in one of them; a later directory wins a clash);
    with `out`, their records, transcripts and the summary are written there too."""
    ids: set[str] = set()
    records: dict[str, dict[str, Any]] = {}
    for directory in directories:
        meta = read_shard(directory, "batch.json")
        if meta is None:
            raise UsageError(f"{directory}: not a batch --out directory (no batch.json)")
        ids.update(json.loads(meta.decode("utf-8"))["task_ids"])
        records.update(read_records(directory))
    summary = summarise(ids, records)
    if out is not None:
        _write_merged(directories, out, sorted(ids), records, summary)
    return summary


def _write_merged(
    directories: list[Path], out: Path, ids: list[str], records: dict[str, dict[str, Any]], summary: dict[str, Any]
) -> None:
    target = OutDir(out)
    target.open()
    try:
        for directory in directories:
            for name in shard_transcripts(directory):
                target.write("transcripts", name, read_shard(directory, f"transcripts/{name}") or b"")
        lines = "".join(json.dumps(records[i], ensure_ascii=False) + "\n" for i in ids if i in records)
        target.write("", RESULTS, lines)
        target.write_json("batch.json", {"task_ids": ids, "merged_from": [str(d) for d in directories]})
        target.write_json("summary.json", summary)
        predictions = _merged_predictions(directories)
        for name, text in prediction_files(predictions).items() if predictions else ():
            target.write("", name, text)
    finally:
        target.close()


def _merged_predictions(directories: list[Path]) -> list[dict[str, str]]:
    """The SWE-bench predictions of shards run with --swebench (their preds.json), one per instance."""
    keyed: dict[str, dict[str, str]] = {}
    for directory in directories:
        data = read_shard(directory, PREDICTIONS[0])
        if data is not None:
            keyed.update(json.loads(data.decode("utf-8")))
    return list(keyed.values())
