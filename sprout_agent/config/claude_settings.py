"""Claude Code's settings files, read in its precedence (highest first): managed, `--settings` FILE|JSON (and an
SDK's `initialize.settings`), `.claude/settings.local.json`, `.claude/settings.json`, `~/.claude/settings.json`
(and ours, `~/.config/sprout-agent/settings.json`). Reading only: what the keys mean is their readers' (the rules,
the hooks, consent). A file that is not there costs one failed open; a malformed one is one notice naming it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from sprout_agent.config.sources import untrusted_place
from sprout_agent.core.errors import UsageError
from sprout_agent.trust.opening import Reader, Refused

MANAGED, FLAG, LOCAL, PROJECT, USER = "managed", "flag", "local", "project", "user"
SCOPES = (MANAGED, FLAG, LOCAL, PROJECT, USER)  # highest precedence first
CHOSEN_BY_SOURCES = (USER, PROJECT, LOCAL)  # --setting-sources names; managed and --settings are always read
REPOSITORY_SCOPES = frozenset({LOCAL, PROJECT})  # a cloned repository's: what widens needs consent
SETTINGS_MAX_BYTES = 1024 * 1024
# The keys something here reads; any other is kept and ignored (one -v line names them).
READ_KEYS = frozenset(
    {"$schema", "permissions", "hooks", "disableAllHooks", "allowManagedHooksOnly", "env", "enableAllProjectMcpServers"}
    | {"outputStyle", "enabledMcpjsonServers", "disabledMcpjsonServers", "allowManagedPermissionRulesOnly"}
    | {"apiKeyHelper", "awsAuthRefresh", "awsCredentialExport", "gcpAuthRefresh"}
)


@dataclass(frozen=True, slots=True)
class SettingsFile:
    """One settings file (or inline JSON) as read: its scope, where rules' `/path` forms start, its keys."""

    scope: str
    shown: str  # for messages and /permissions: the path, or `--settings` for inline JSON
    base: Path  # `Edit(/src/**)` is relative to this: the project root, home, or the working directory
    data: Mapping[str, Any]
    path: Path | None = None  # None: inline JSON

    @property
    def repository(self) -> bool:
        return self.scope in REPOSITORY_SCOPES


@dataclass(frozen=True, slots=True)
class ClaudeSettings:
    """The files read, highest precedence first, and what reading them had to say."""

    files: tuple[SettingsFile, ...] = ()
    notices: tuple[str, ...] = ()  # malformed or skipped files: shown to the user
    verbose: tuple[str, ...] = ()  # keys kept and ignored: shown with -v

    def first(self, key: str) -> tuple[SettingsFile, object] | None:
        """The highest-precedence file that sets `key`, and its value."""
        return next(((f, f.data[key]) for f in self.files if key in f.data), None)

    def section(self, key: str, name: str) -> tuple[SettingsFile, object] | None:
        """The highest-precedence file whose `key` object sets `name` (`permissions.defaultMode`)."""
        for found in self.files:
            part = found.data.get(key)
            if isinstance(part, dict) and name in part:
                return found, cast(dict[str, object], part)[name]
        return None

    def without(self, dropped: Iterable[SettingsFile]) -> ClaudeSettings:
        gone = set(map(id, dropped))
        return ClaudeSettings(tuple(f for f in self.files if id(f) not in gone), self.notices, self.verbose)


@dataclass(frozen=True, slots=True)
class Places:
    """Where a run looks for settings files."""

    cwd: Path
    home: Path | None
    ours: Path | None  # our user config directory
    managed: Path | None = None  # Locations.managed_settings
    flag_values: Sequence[str] = field(default_factory=tuple[str, ...])  # --settings, then initialize.settings


def chosen_sources(sources: str | None) -> frozenset[str]:
    """`--setting-sources user,project,local` (all when not given); a wrong name is a UsageError."""
    if sources is None:
        return frozenset(CHOSEN_BY_SOURCES)
    chosen = {part.strip() for part in sources.split(",") if part.strip()}
    if unknown := sorted(chosen - set(CHOSEN_BY_SOURCES)):
        raise UsageError(f"--setting-sources: {unknown[0]!r} is not one of {', '.join(CHOSEN_BY_SOURCES)}")
    return frozenset(chosen)


def load_settings(places: Places, sources: str | None = None) -> ClaudeSettings:
    """Every settings file that exists, highest precedence first; nothing is read that is not there."""
    chosen = chosen_sources(sources)
    files: list[SettingsFile] = []
    notices: list[str] = []
    for scope, path, base in _candidates(places, chosen):
        found = _read_file(scope, path, base, notices)
        if found is not None:
            files.append(found)
    flags = [_flag(value, places.cwd, notices) for value in places.flag_values]
    files[1 if files and files[0].scope == MANAGED else 0 : 0] = [f for f in reversed(flags) if f is not None]
    ignored = sorted({f"{f.shown}: {key}" for f in files for key in f.data if key not in READ_KEYS})
    verbose = (f"settings keys kept and ignored: {', '.join(ignored)}",) if ignored else ()
    return ClaudeSettings(tuple(files), tuple(notices), verbose)


def _candidates(places: Places, chosen: frozenset[str]) -> list[tuple[str, Path, Path]]:
    """(scope, file, base) in precedence order, managed first; --settings goes in after managed."""
    found: list[tuple[str, Path, Path]] = []
    if places.managed is not None:
        found.append((MANAGED, places.managed, places.cwd))
    project = places.cwd / ".claude"
    if LOCAL in chosen:
        found.append((LOCAL, project / "settings.local.json", places.cwd))
    if PROJECT in chosen and places.cwd != places.home:  # run in ~: ~/.claude/settings.json is the user's
        found.append((PROJECT, project / "settings.json", places.cwd))
    if USER in chosen:
        if places.home is not None:
            found.append((USER, places.home / ".claude" / "settings.json", places.home))
        if places.ours is not None:
            found.append((USER, places.ours / "settings.json", places.home or places.cwd))
    return found


def _read_file(scope: str, path: Path, base: Path, notices: list[str]) -> SettingsFile | None:
    raw = _bytes(path, str(path), notices)
    if raw is None:
        return None
    if scope in REPOSITORY_SCOPES and (why := untrusted_place(path)) is not None:
        notices.append(f"{path}: not read ({why})")
        return None
    data = _parsed(raw, str(path), notices)
    return None if data is None else SettingsFile(scope, str(path), base, data, path)


def _bytes(path: Path, shown: str, notices: list[str], *, missing_ok: bool = True) -> bytes | None:
    """By the one reader (trust/opening.py): a FIFO planted as `.claude/settings.json` never blocks the start. A
    file that is not there costs one failed open and says nothing."""
    try:
        if not os.path.lexists(path):  # one lstat: most runs have no settings file at most of these places
            raise FileNotFoundError(path)
        return Reader().read(str(path), os.getcwd(), SETTINGS_MAX_BYTES)
    except FileNotFoundError:
        if not missing_ok:
            notices.append(f"{shown}: not read (no such file); the session goes on without it")
        return None
    except (OSError, Refused) as error:
        why = error.strerror if isinstance(error, OSError) else str(error)
        notices.append(f"{shown}: not read ({why}); the session goes on without it")
        return None


def _flag(value: str, cwd: Path, notices: list[str]) -> SettingsFile | None:
    """`--settings` (or the SDK's settings): inline JSON when it starts with `{`, else a file's path."""
    if value.lstrip().startswith("{"):
        data = _parsed(value.encode(), "--settings", notices)
        return None if data is None else SettingsFile(FLAG, "--settings", cwd, data)
    path = cwd / Path(value).expanduser()
    raw = _bytes(path, f"--settings {value}", notices, missing_ok=False)
    data = None if raw is None else _parsed(raw, str(path), notices)
    return None if data is None else SettingsFile(FLAG, str(path), cwd, data, path)


def _parsed(raw: bytes, shown: str, notices: list[str]) -> dict[str, Any] | None:
    """The file's object, or None with one notice naming the file and what is wrong."""
    if len(raw) > SETTINGS_MAX_BYTES:
        notices.append(f"{shown}: larger than {SETTINGS_MAX_BYTES // 1024} KB, not read")
        return None
    try:
        data: object = json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        notices.append(f"{shown}: not valid JSON ({error}); the session goes on without it")
        return None
    if not isinstance(data, dict):
        notices.append(f"{shown}: not a JSON object; the session goes on without it")
        return None
    return cast(dict[str, Any], data)


def strings(value: object) -> tuple[str, ...]:
    """A list of strings as a tuple (anything else in it, or a value that is no list, is dropped)."""
    if not isinstance(value, list):
        return ()
    return tuple(item for item in cast(list[object], value) if isinstance(item, str))
