"""`sprout-agent mcp import claude`: Claude Code's user-scope MCP servers (`mcpServers` at the top of
`~/.claude.json`) copied into our user config (`mcp.json` in the user config directory).

Copied as written (`${VAR}` references stay references; a key written inline stays inline: it is the user's own
file going to the user's own file, created 0600), but never printed: env and header values show as `…`.
Claude Code's per-project ("local scope") servers under `projects` are not copied (ours has no per-directory
user scope): they are counted, and `--project DIR` copies those of one directory instead.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from sprout_agent.config.sources import USER_FILE
from sprout_agent.core.errors import EXIT_OK, EXIT_USAGE
from sprout_agent.trust.untrusted import printable

CLAUDE_FILE = ".claude.json"


@dataclass(frozen=True, slots=True)
class Plan:
    copy: dict[str, dict[str, Any]]  # name → entry, to be written
    kept: tuple[str, ...]  # names we have already (not replaced without --force)
    replaced: tuple[str, ...]  # names we have already, replaced (--force)
    local: dict[str, int]  # Claude Code's project directory → its number of local-scope servers


def import_command(
    source: Path, user_config_dir: Path | None, *, project: Path | None, force: bool, dry_run: bool
) -> int:
    """Shows what is (or would be, with `dry_run`) copied; exit 2 when there is nothing to read or nowhere to write."""
    if user_config_dir is None:
        return _fail("there is no user config directory here")
    try:
        claude = _read_object(source)
        target = user_config_dir / USER_FILE
        ours = _read_object(target) if target.exists() else {}
    except ValueError as error:
        return _fail(str(error))
    plan = plan_import(claude, ours, project=project, force=force)
    _show(plan, source, target, dry_run, project)
    if plan.copy and not dry_run:
        servers = cast(dict[str, object], ours.get("mcpServers") or {})
        _write(target, {**ours, "mcpServers": {**servers, **plan.copy}})
    return EXIT_OK


def _objects(value: object) -> dict[str, Any]:
    """`value` if it is a JSON object, else empty (Claude Code's file is read leniently: it is not ours)."""
    return cast(dict[str, Any], value) if isinstance(value, dict) else {}


def plan_import(
    claude: dict[str, Any], ours: dict[str, Any], *, project: Path | None = None, force: bool = False
) -> Plan:
    projects = _objects(claude.get("projects"))
    if project is None:
        found = _objects(claude.get("mcpServers"))
    else:
        entry = _objects(projects.get(str(project.resolve())) or projects.get(str(project)))
        found = _objects(entry.get("mcpServers"))
    existing = _objects(ours.get("mcpServers"))
    clash = tuple(name for name in found if name in existing)
    entries = {name: _objects(entry) for name, entry in found.items()}
    copy = {name: entry for name, entry in entries.items() if entry and (force or name not in existing)}
    local: dict[str, int] = {}
    for directory, entry in projects.items() if project is None else ():
        count = len(_objects(_objects(entry).get("mcpServers")))
        if count:
            local[directory] = count
    return Plan(copy, () if force else clash, clash if force else (), local)


def describe(name: str, entry: dict[str, Any]) -> str:
    """One line: the name, what runs or where it connects, and the env/header names with their values hidden."""
    if "url" in entry:
        what = f"{entry.get('type', 'http')} {entry['url']}"
    else:
        raw = entry.get("args")
        args: list[object] = cast(list[object], raw) if isinstance(raw, list) else []
        what = " ".join(str(part) for part in (entry.get("command", "?"), *args))
    hidden = [
        f"{key} {', '.join(f'{name}=…' for name in cast(dict[str, object], entry[key]))}"
        for key in ("env", "headers")
        if isinstance(entry.get(key), dict) and entry[key]
    ]
    return printable(f"{name}: {what}" + "".join(f"  [{part}]" for part in hidden))


def _show(plan: Plan, source: Path, target: Path, dry_run: bool, project: Path | None) -> None:
    verb = "would copy" if dry_run else "copied"
    scope = f"project {project}" if project is not None else "user-scope"
    if not plan.copy and not plan.kept:
        print(f"no {scope} MCP servers in {source}")
    for name, entry in plan.copy.items():
        replaced = " (replacing ours)" if name in plan.replaced else ""
        print(f"{verb}{replaced}: {describe(name, entry)}")
    for name in plan.kept:
        print(f"kept ours: {name} (already in {target}; --force replaces it)")
    for directory, count in plan.local.items():
        print(f"not copied: {count} local-scope server(s) of {directory} (--project {directory} copies them)")
    if plan.copy:
        print(f"{'would write' if dry_run else 'wrote'} {target}")


def _read_object(path: Path) -> dict[str, Any]:
    try:
        data: object = json.loads(path.read_text(encoding="utf-8-sig"))
    except FileNotFoundError:
        raise ValueError(f"{path}: not found") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise ValueError(f"{path}: cannot read it: {error}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: top level must be a JSON object")
    return cast(dict[str, Any], data)


def _write(target: Path, data: dict[str, Any]) -> None:
    """Atomically, 0600 (the entries may carry keys), in a 0700 directory created if need be."""
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".mcp-", suffix=".json")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=2)
            out.write("\n")
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _fail(message: str) -> int:
    sys.stderr.write(f"sprout-agent: {message}\n")
    return EXIT_USAGE
