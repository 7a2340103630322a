"""A process for tests/test_checkpoints_e2e.py to SIGKILL in the middle of a checkpoint or a rewind:
`python -m tests.checkpoint_child snapshot|rewind ROOT STORE RECORDS` (records: the session's turn records, JSON
lines, appended to as a transcript is)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio

from sprout_agent.checkpoints.timeline import turns_from
from sprout_agent.checkpoints.tracker import Tracker, checkpoint_roots
from sprout_agent.core.events import Event


def tracker(root: str, store: Path, records: Path) -> Tracker:
    lines = records.read_text().splitlines() if records.exists() else []
    turns = turns_from(enumerate(json.loads(line) for line in lines))

    def record(data: dict[str, object]) -> int:
        with records.open("a") as handle:
            handle.write(json.dumps(data) + "\n")
        return len(records.read_text().splitlines()) - 1

    def emit(event: Event) -> None:
        print(event, flush=True)

    return Tracker(checkpoint_roots(root, []), root, store, "s1", emit=emit, write_record=record, turns=turns)


async def main(action: str, root: str, store: Path, records: Path) -> None:
    checkpoints = tracker(root, store, records)
    if action == "snapshot":
        stores = await checkpoints.stores()
        print("started", flush=True)
        checkpoints.snapshot_all(stores, "killed")
    else:
        plan, _ = await checkpoints.plan_rewind(1)
        print("started", flush=True)
        await checkpoints.apply_rewind(plan.restores, plan)
    print("done", flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4]))
