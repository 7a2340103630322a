"""`sprout-agent replay SESSION|CASSETTE`: a recorded `-p` session re-run with today's tools, hooks and MCP servers,
the model's side from its cassette (answered by position, so the run goes on past a difference), in a scratch copy
of the working directory; reports where it went another way (docs/cassettes.md, "Re-running a session")."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Generator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import anyio

from sprout_agent.config.locations import Locations
from sprout_agent.config.options import Options
from sprout_agent.core.errors import EXIT_OK, EXIT_REPLAY_DIVERGED, SproutError, UsageError, sprout_error_in
from sprout_agent.core.events import Event, HookObjected, SubagentEvent, ToolFinished
from sprout_agent.model.cassettes.divergence import Divergence, Today, divergences
from sprout_agent.model.cassettes.format import Cassette, Exchange, load
from sprout_agent.model.cassettes.player import Answered
from sprout_agent.session.prepared import Prepared, prepare
from sprout_agent.session.runtime import open_runtime
from sprout_agent.session.taping import RECORD_ENV
from sprout_agent.trust.untrusted import printable


def replay_command(target: str, cassettes: Path | None, options: Options, in_place: bool) -> int:
    """Exit 0 when the run went as recorded, 6 when it diverged, 2 for a cassette that cannot be used."""
    cassette = load(find_cassette(target, cassettes or _path(os.environ.get(RECORD_ENV))))
    prompt = cassette.header.get("prompt")
    if not isinstance(prompt, str) or not prompt:
        raise UsageError(f"{cassette.path}: no prompt recorded (a REPL or stream-json session): use -p PROMPT --replay")
    answered: list[Answered] = []
    with _workspace(options.cwd, in_place) as where:
        chosen = replace(options, prompt=prompt, cwd=where, replay=cassette.path, replay_mode="lenient")
        chosen = replace(chosen, model=options.model or str(cassette.header.get("model") or "") or None)
        prepared = prepare(chosen, Locations.for_user(), os.environ)
        assert prepared.tape is not None
        prepared = replace(prepared, tape=replace(prepared.tape, observe=answered.append))
        today = anyio.run(_run, prepared, prompt)
    found = divergences(answered, _unanswered(cassette, answered), today)
    print("\n".join(printable(line) for line in report(cassette, len(answered), found)))
    return EXIT_REPLAY_DIVERGED if found else EXIT_OK


def find_cassette(target: str, directory: Path | None) -> Path:
    """A cassette's path, or a session id recorded in `directory` (--cassettes, else SPROUT_AGENT_RECORD)."""
    if Path(target).is_file():
        return Path(target)
    if directory is None:
        raise UsageError(f"{target}: no such cassette (to name a session by id, give --cassettes DIR)")
    path = directory / f"{target}.jsonl"
    if not path.is_file():
        raise UsageError(f"no cassette for session {target} in {directory} (sessions are recorded with --record DIR)")
    return path


def _path(value: str | None) -> Path | None:
    return Path(value) if value else None


@contextmanager
def _workspace(cwd: Path, in_place: bool) -> Generator[Path]:
    """The directory the session runs in: a scratch copy of `cwd` (removed after), or `cwd` itself."""
    if in_place:
        yield cwd
        return
    scratch = Path(tempfile.mkdtemp(prefix="sprout-replay-"))
    try:
        copy = scratch / cwd.name
        shutil.copytree(cwd, copy, symlinks=True)
        yield copy
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


async def _run(prepared: Prepared, prompt: str) -> Today:
    today = Today()
    try:
        async with open_runtime(prepared, _watching(today)) as runtime:
            await runtime.agent.run_turn(prompt)
    except Exception as error:
        found = sprout_error_in(error)
        if found is None:
            raise
        today.failure = str(found)
    return today


def _watching(today: Today) -> Callable[[Event], None]:
    """The session's events as far as the report needs them: the calls refused, the hooks that objected."""

    def seen(event: Event) -> None:
        while isinstance(event, SubagentEvent):
            event = event.event
        if isinstance(event, ToolFinished) and event.denied:
            today.refused.add(event.call_id)
        elif isinstance(event, HookObjected):
            today.objections.append((event.hook, event.server, event.text))

    return seen


def _unanswered(cassette: Cassette, answered: list[Answered]) -> list[Exchange]:
    used = {a.exchange.n for a in answered}
    return [e for e in cassette.exchanges if e.n not in used]


def report(cassette: Cassette, requests: int, found: list[Divergence]) -> list[str]:
    total = len(cassette.exchanges)
    head = f"replay of {cassette.path}: {requests} of {total} recorded request(s) made"
    if not found:
        return [f"{head}; no divergence"]
    lines = [f"{head}; {len(found)} divergence(s):"]
    for item in found:
        where = f"exchange {item.exchange}" if item.exchange is not None else "the run"
        lines.append(f"  {where}: {item.kind}: {item.text}")
    return lines


def fail_with(error: SproutError) -> int:
    sys.stderr.write(f"sprout-agent: {printable(str(error))}\n")
    return error.exit_code
