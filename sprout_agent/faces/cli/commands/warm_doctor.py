"""`sprout-agent doctor`: the provider check (provider_doctor.py), then the warm interpreters this user has running
(age, memory, runs in flight, whether they serve the code installed now), the files of ended ones cleared, and
`--stop` to ask them all to leave."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, TextIO

from sprout_agent.faces.warm import live, place

if TYPE_CHECKING:
    from sprout_agent.config.options import Options

_TURN_OFF = (
    "one stays up to {idle:g} s after its last run ({idle_name}); {switch}=0 turns it off, --no-warm skips it once"
)


def doctor_command(
    env: Mapping[str, str],
    stop: bool,
    as_json: bool,
    provider: tuple[Options, bool] | None = None,
    out: TextIO = sys.stdout,
) -> int:
    """The provider check (`provider`: the run's options and whether to stay offline; None: none), then the warm
    interpreters listed (with `stop`, stopped); the provider's exit code, else 1 when their directory is not safe."""
    if provider is None:
        return _warm(env, stop, as_json, out, {})
    from sprout_agent.faces.cli.commands.provider_doctor import check_provider, write

    report = check_provider(provider[0], env, offline=provider[1])
    if not as_json:
        write(report, out)
    warm = _warm(env, stop, as_json, out, report.record)
    return report.exit_code or warm


def _warm(env: Mapping[str, str], stop: bool, as_json: bool, out: TextIO, more: dict[str, object]) -> int:
    base = place.directory(env)
    if base is None:
        out.write("the warm interpreter's directory is missing, not yours or open to others: runs stay cold\n")
        return 1
    try:
        cleared = live.clear_dead(base, keep="")
        found = live.interpreters(base)
    except OSError as error:
        out.write(f"cannot read {base}: {error.strerror}\n")
        return 1
    current = place.fingerprint(sys.path if sys.flags.safe_path else sys.path[1:])
    stopped = {one.pid for one in found if stop and live.stop(one.pid)}
    if as_json:
        rows = [_row(one, current, one.pid in stopped) for one in found]
        out.write(json.dumps({**more, "directory": str(base), "interpreters": rows, "cleared": cleared}) + "\n")
        return 0
    out.write(f"warm interpreters in {base}: {len(found) or 'none'}\n")
    for one in found:
        out.write(f"  {_line(one, current, one.pid in stopped)}\n")
    if cleared:
        out.write(f"  cleared {len(cleared)} file(s) of ended interpreters\n")
    idle = place.idle_seconds(env)
    out.write(_TURN_OFF.format(idle=idle, idle_name=place.IDLE, switch=place.SWITCH) + "\n")
    return 0


def _row(one: live.Interpreter, current: str, stopped: bool) -> dict[str, object]:
    return {
        "pid": one.pid,
        "fingerprint": one.fingerprint,
        "age_s": round(one.age_s, 1),
        "memory_bytes": one.memory_bytes,
        "runs": one.runs,
        "current": one.fingerprint == current,
        "stopping": stopped,
    }


def _line(one: live.Interpreter, current: str, stopped: bool) -> str:
    memory = f"{one.memory_bytes / 2**20:.0f} MB" if one.memory_bytes is not None else "? MB"
    runs = f"{one.runs} run{'s' if one.runs != 1 else ''} in flight"
    which = "this install's code" if one.fingerprint == current else "other code (an older version or another install)"
    state = "; stopping: it leaves once its runs end" if stopped else ""
    return f"pid {one.pid}  up {_age(one.age_s)}  {memory}  {runs}  {which}{state}"


def _age(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
