"""An "always allow" answer kept as Claude Code keeps it: its rule added to `permissions.allow` of the project's
`.claude/settings.local.json`, merged into what the file holds (every other key kept), written whole or not at all
through the one writer's walk (trust/opening.py), which never follows a link a repository planted."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from sprout_agent.config.applied_settings import fingerprint, split
from sprout_agent.config.claude_settings import SETTINGS_MAX_BYTES
from sprout_agent.config.consent import Approvals, Verdict
from sprout_agent.core.errors import ConfigError
from sprout_agent.trust.opening import Refused, descend, open_directory, open_in, replace_in

LOCAL_DIR, LOCAL_NAME = ".claude", "settings.local.json"
NEW_FILE_MODE = 0o600  # the file may come to hold your choices only: nobody else reads it


@dataclass(frozen=True, slots=True)
class Kept:
    """Where a rule was kept, and whether the next session applies it unasked."""

    path: Path
    rule: str
    honoured: bool  # False: the file holds something else that still waits for your consent

    def notice(self) -> str:
        said = f"{self.rule} kept in {self.path}"
        if self.honoured:
            return f"{said}: later sessions here allow it too"
        return f"{said}; the file also holds what you have not approved, so a later session asks about it first"


def local_file(cwd: Path) -> Path:
    """The file the loader reads as the `local` scope (claude_settings.py), named as it names it."""
    return cwd / LOCAL_DIR / LOCAL_NAME


def keep_allow_rule(cwd: Path, rule: str, *, data_dir: Path | None, run_mode: str) -> Kept:
    """Adds `rule` to the file's `permissions.allow` (once). When the file held nothing that widens, or only what
    you approved, your approval moves to its new content, so the next session honours the rule without asking;
    else the file stays held as it was. Refused (a link, a FIFO, a file that is not a JSON object) or OSError:
    nothing was written."""
    path = local_file(cwd)
    directory = descend(open_directory(os.path.realpath(cwd), str(path)), [LOCAL_DIR], str(path), create=True)
    try:
        old, before = _current(directory, str(path))
        after = _with_rule(before, rule, str(path))
        if after != before:
            data = (json.dumps(after, indent=2, ensure_ascii=False) + "\n").encode()
            replace_in(directory, LOCAL_NAME, data, old if old is not None else NEW_FILE_MODE)
    finally:
        os.close(directory)
    return Kept(path, rule, _approve(path, before, after, data_dir, run_mode))


def _current(directory: int, shown: str) -> tuple[os.stat_result | None, dict[str, Any]]:
    """The file's status and object (none yet: no status, an empty object), opened without following a link."""
    try:
        with open_in(directory, LOCAL_NAME, shown) as handle:
            status = os.fstat(handle.fileno())
            raw = handle.read(SETTINGS_MAX_BYTES + 1)
    except FileNotFoundError:
        return None, {}
    if len(raw) > SETTINGS_MAX_BYTES:
        raise Refused(f"{shown} is larger than {SETTINGS_MAX_BYTES // 1024} KB; not changed")
    try:
        data: object = json.loads(raw.decode("utf-8-sig")) if raw.strip() else {}
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise Refused(f"{shown} is not valid JSON ({error}); not changed") from None
    if not isinstance(data, dict):
        raise Refused(f"{shown} is not a JSON object; not changed")
    return status, cast(dict[str, Any], data)


def _with_rule(data: dict[str, Any], rule: str, shown: str) -> dict[str, Any]:
    """A copy of `data` whose `permissions.allow` ends with `rule` (unchanged when it holds it already)."""
    permissions = data.get("permissions", {})
    if not isinstance(permissions, dict):
        raise Refused(f"{shown}: its permissions is not an object; not changed")
    allow = cast(dict[str, Any], permissions).get("allow", [])
    if not isinstance(allow, list):
        raise Refused(f"{shown}: its permissions.allow is not a list; not changed")
    if rule in cast(list[object], allow):
        return data
    return {**data, "permissions": {**cast(dict[str, Any], permissions), "allow": [*cast(list[object], allow), rule]}}


def _approve(path: Path, before: dict[str, Any], after: dict[str, Any], data_dir: Path | None, run_mode: str) -> bool:
    """Whether the next session applies the file's widening part: recorded approved when what it widened before
    was nothing or what you approved (a rule you just allowed adds nothing you did not say yes to)."""
    _, widened_before = split(before, run_mode)
    _, widened_after = split(after, run_mode)
    if not widened_after:
        return True
    if data_dir is None:  # nowhere to remember an approval: the next session asks
        return False
    approvals = Approvals.load(data_dir)
    if widened_before and approvals.settings_verdict(path, fingerprint(widened_before)) is not Verdict.APPROVED:
        return False
    if approvals.settings_verdict(path, fingerprint(widened_after)) is not Verdict.APPROVED:
        try:
            approvals.answered_settings([(path, fingerprint(widened_after), True)])
        except ConfigError:
            return False
    return True
