"""--record and --replay for a session (docs/cassettes.md): what the flags and variables ask for, checked before
anything starts, and the cassette's writer or player made the model client's HTTP client. Neither asked for,
nothing of model/cassettes/ is imported."""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from sprout_agent import __version__
from sprout_agent.config.options import Options
from sprout_agent.core.errors import CassetteError, UsageError
from sprout_agent.core.events import Event, Notice
from sprout_agent.trust.secrets import redactor

if TYPE_CHECKING:
    from sprout_agent.model.cassettes.format import Cassette
    from sprout_agent.model.cassettes.player import Answered, Player
    from sprout_agent.model.cassettes.recorder import CassetteWriter
    from sprout_agent.model.facts import ModelFacts
    from sprout_agent.session.prepared import Prepared

RECORD_ENV, REPLAY_ENV, REPLAY_MODE_ENV = "SPROUT_AGENT_RECORD", "SPROUT_AGENT_REPLAY", "SPROUT_AGENT_REPLAY_MODE"
NAME_ENV = "SPROUT_AGENT_CASSETTE_NAME"  # set by batch for each task: its cassette is `<task name>.jsonl`
REPLAY_MODES = ("strict", "lenient")


@dataclass(frozen=True, slots=True)
class TapePlan:
    """What the run records to, or replays from (the cassette already read and checked)."""

    record: Path | None = None
    replay: Cassette | None = None
    lenient: bool = False
    name: str | None = None  # the cassette's file name without .jsonl; None: the session id
    observe: Callable[[Answered], None] | None = None  # `sprout-agent replay`: told of every request answered


def tape_plan(options: Options, environ: Mapping[str, str]) -> TapePlan | None:
    """The flags over the real environment (never `.env`: guarded_env.py), a flag over the other's variable (a
    replay under SPROUT_AGENT_RECORD is not recorded); exit 2 for a cassette that cannot be used. None when neither
    is asked for."""
    record, replay = options.record, options.replay
    if record is None and replay is None:
        record, replay = _path(environ.get(RECORD_ENV)), _path(environ.get(REPLAY_ENV))
    if record is None and replay is None:
        return None
    if record is not None and replay is not None:
        raise UsageError("--record and --replay: give one (a replay is not recorded again)")
    mode = options.replay_mode or environ.get(REPLAY_MODE_ENV) or "strict"
    if mode not in REPLAY_MODES:
        raise UsageError(f"--replay-mode takes strict or lenient, not {mode!r}")
    name = environ.get(NAME_ENV) or None
    if record is not None:
        if record.exists() and not record.is_dir():
            raise UsageError(f"--record {record}: not a directory")
        return TapePlan(record=record.resolve(), name=name)
    assert replay is not None
    return TapePlan(replay=_cassette(replay, name or options.session_id), lenient=mode == "lenient", name=name)


def _path(value: str | None) -> Path | None:
    return Path(value) if value else None


def _cassette(path: Path, name: str | None) -> Cassette:
    """The cassette `path` names: a file, or in a directory the one named for the task or session, else its only
    one."""
    from sprout_agent.model.cassettes.format import load

    if path.is_dir():
        named = path / f"{name}.jsonl" if name else None
        found = [named] if named is not None and named.is_file() else sorted(path.glob("*.jsonl"))
        if len(found) != 1:
            what = "no cassette" if not found else f"{len(found)} cassettes"
            raise UsageError(f"--replay {path}: {what} there; name one (--replay {path}/ID.jsonl)")
        path = found[0]
    elif not path.is_file():
        raise UsageError(f"--replay {path}: no such cassette")
    return load(path)


class Tape:
    """One session's recording or replay, a context manager: `http_client` is the model client's; leaving without
    an error ends a strict replay's check (ReplayDiverged, exit 6); leaving closes the cassette. Asked for neither,
    it does nothing and imports nothing."""

    def __init__(self, prepared: Prepared, session_id: str, emit: Callable[[Event], None]) -> None:
        self._prepared, self._plan, self._session_id, self._emit = prepared, prepared.tape, session_id, emit
        self.writer: CassetteWriter | None = None
        self.player: Player | None = None
        self._redact: Callable[[str], str] = str
        if self._plan is None:
            return
        known = {**prepared.inherited_env, **prepared.settings_env, **prepared.configured_credentials}
        self._redact = redactor(known)  # the one filter of trust/secrets.py, for every string written or compared
        plan = self._plan
        if plan.replay is not None:
            from sprout_agent.model.cassettes.player import Player

            cwd = str(prepared.options.cwd)
            self.player = Player(
                plan.replay, lenient=plan.lenient, cwd=cwd, redact=self._redact, warn=self._warn, observe=plan.observe
            )

    def _warn(self, text: str) -> None:
        self._emit(Notice(text, "warning"))

    def http_client(self, facts: ModelFacts) -> Any:
        """The model client's HTTP client (called from the model's thread, once the facts are known): the player's, a
        new cassette's, or None (the SDK's own) when neither is asked for."""
        if self.player is not None:
            from sprout_agent.model.cassettes.player import replaying_client

            return replaying_client(self.player)
        if self._plan is None or self._plan.record is None:
            return None
        from sprout_agent.model.cassettes.recorder import CassetteWriter, recording_client

        name = self._plan.name or self._session_id
        self.writer = CassetteWriter(self._plan.record, name, self._header(facts), self._redact)
        return recording_client(self.writer)

    def _header(self, facts: ModelFacts) -> dict[str, Any]:
        options = self._prepared.options
        created = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        plain = {k: _plain(v) for k, v in asdict(facts).items()}
        return {
            "created": created,
            "sprout_agent": __version__,
            "session_id": self._session_id,
            "cwd": str(options.cwd),
            "model": self._prepared.model,
            "prompt": options.prompt,
            "facts": plain,
        }

    def __enter__(self) -> Tape:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: object) -> None:
        if self.writer is not None:
            self.writer.close()
        if self.player is None or kind is not None:
            return
        self.player.finish()  # strict: every recorded request made, none that differed


def replayed_facts(plan: TapePlan | None, model: str) -> ModelFacts | None:
    """Replay: the model's facts as recorded, or the built-in table's for another model (a subagent's, `/model`):
    never a Models API request. None when not replaying."""
    if plan is None or plan.replay is None:
        return None
    from sprout_agent.model.facts import fallback

    recorded = plan.replay.header.get("facts")
    if isinstance(recorded, dict) and recorded.get("model") == model:  # pyright: ignore[reportUnknownMemberType]
        return _facts_from(cast(dict[str, Any], recorded))
    return fallback(model)


def _plain(value: object) -> object:
    return sorted(cast(frozenset[str], value)) if isinstance(value, frozenset) else value


def _facts_from(recorded: dict[str, Any]) -> ModelFacts:
    from sprout_agent.model.facts import ModelFacts

    sets = ("thinking_types", "effort_levels")
    fields: dict[str, Any] = {k: frozenset(v) if k in sets and v is not None else v for k, v in recorded.items()}
    try:
        return ModelFacts(**fields)
    except TypeError as error:
        raise CassetteError(f"the cassette's header: `facts` is not what this version records ({error})") from error
