"""Python's cyclic garbage collector held off while a cold process imports and prepares a session, and back on once
the session runs (or a subcommand is chosen): ~60 ms of a cold `-p`'s CPU before its first request (issue 46).

The start allocates hundreds of thousands of long-lived objects (modules, classes, the SDK's pydantic models) and
little cyclic garbage, so the collector's passes over them find nothing to free. On `resume` they are frozen (moved
out of the collector's sight, as a pre-fork server does) so that its first pass does not walk them all at once
before the first request; what the session allocates after is collected as ever. Peak RSS of a cold `-p`: 70 MB
either way.
"""

from __future__ import annotations

import gc

_held = False  # whether `hold` turned it off: a collector someone else turned off stays off


def hold() -> None:
    """Off until `resume`; called once, by the entry point of a run in this process."""
    global _held
    if gc.isenabled():
        gc.disable()
        _held = True


def resume() -> None:
    """Back on, what the start made frozen, if `hold` turned it off (idempotent: each path that ends the start
    calls it)."""
    global _held
    if _held:
        _held = False
        gc.freeze()
        gc.enable()
