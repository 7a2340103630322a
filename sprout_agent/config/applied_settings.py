"""What a run takes from Claude Code's settings files (claude_settings.py): the permission rules with their
sources, the mode, added directories, command hooks and `env`. A repository's file (`.claude/settings.json`,
`settings.local.json`) gives what only restricts at once (deny and ask rules, a stricter mode); what widens or runs
something waits for the user's consent, asked and remembered as the project's MCP servers are (consent.py).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

from sprout_agent.config.claude_settings import MANAGED, ClaudeSettings, SettingsFile, strings
from sprout_agent.config.consent import Approvals, Verdict
from sprout_agent.config.credential_commands import SETTINGS_KEYS
from sprout_agent.config.guarded_env import refused_because
from sprout_agent.core.permission_mode import PermissionMode, parse_mode
from sprout_agent.core.settings_rules import KINDS, Rule, RuleSet, parse_rules

_WIDEST = 3  # bypassPermissions, auto: run everything
RESTRICTING = ("deny", "ask", "disableBypassPermissionsMode")  # permissions' keys that only take away
RESTRICTING_KEYS = ("disabledMcpjsonServers",)  # top-level keys that only take away
MANAGED_ONLY = "allowManagedPermissionRulesOnly"  # read in managed settings only: elsewhere it does nothing
_NOT_WIDENING = frozenset({"permissions", "$schema", MANAGED_ONLY, *RESTRICTING_KEYS})


def width(name: str) -> int:
    """How much a mode lets run unasked, from plan (0) to bypassPermissions (3): a repository may pick a mode no
    wider than the one the run would have without it."""
    mode = parse_mode(name)
    match mode.ours:
        case PermissionMode.READ_ONLY:
            return 0
        case PermissionMode.ASK:
            return 2 if mode.allows else 1
        case PermissionMode.AUTO:
            return _WIDEST


def split(data: Mapping[str, Any], run_mode: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(what only restricts, what widens or runs something). `run_mode`: the mode the run has without the file."""
    raw = data.get("permissions")
    permissions = cast(dict[str, Any], raw) if isinstance(raw, dict) else {}
    restricting = {key: permissions[key] for key in RESTRICTING if key in permissions}
    rest = {key: value for key, value in permissions.items() if key not in RESTRICTING}
    mode = rest.get("defaultMode")
    # bypassPermissions is never the repository's to choose, even where the run would run everything anyway.
    if isinstance(mode, str) and _known(mode) and width(mode) <= width(run_mode) and width(mode) < _WIDEST:
        restricting["defaultMode"] = rest.pop("defaultMode")
    widening = {key: value for key, value in data.items() if key not in _NOT_WIDENING}
    if rest:
        widening["permissions"] = rest
    kept = {"permissions": restricting} if restricting else {}
    return kept | {key: data[key] for key in RESTRICTING_KEYS if key in data}, widening


def _known(mode: str) -> bool:
    try:
        parse_mode(mode)
    except ValueError:
        return False
    return True


def fingerprint(widening: Mapping[str, Any]) -> str:
    """What identifies a file's widening part: a changed allow rule, hook or variable asks again."""
    return hashlib.sha256(json.dumps(widening, sort_keys=True, ensure_ascii=True).encode()).hexdigest()


@dataclass(frozen=True)
class Held:
    """A repository file's widening part, not applied until the user says yes to it."""

    file: SettingsFile
    verdict: Verdict
    widening: dict[str, Any]

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.widening)

    def notice(self) -> str:
        why = {Verdict.DECLINED: "you declined it", Verdict.CHANGED: "it changed since you approved it"}
        keys = ", ".join(_widening_names(self.widening))
        said = why.get(self.verdict, "not approved yet")
        return (
            f"{self.file.shown}: its deny and ask rules apply; not applied ({said}): {keys}; approve it in an "
            "interactive session, or run with --trust-project"
        )


def _widening_names(widening: Mapping[str, Any]) -> list[str]:
    names = [key for key in widening if key != "permissions"]
    permissions = widening.get("permissions")
    if isinstance(permissions, dict):
        names = [f"permissions.{key}" for key in cast(dict[str, Any], permissions)] + names
    return names


@dataclass(frozen=True)
class Applied:
    """The settings as the run applies them."""

    files: tuple[SettingsFile, ...] = ()  # as applied: a held file's restricting part only
    rules: RuleSet = field(default_factory=RuleSet)
    mode: str | None = None  # permissions.defaultMode of the highest file that sets one
    add_dirs: tuple[Path, ...] = ()
    env: dict[str, str] = field(default_factory=dict[str, str])
    all_project_servers: bool = False  # enableAllProjectMcpServers
    enabled_servers: frozenset[str] = frozenset()  # enabledMcpjsonServers: these project servers start unasked
    disabled_servers: frozenset[str] = frozenset()  # disabledMcpjsonServers: these never start (over enabled)
    managed_rules_only: bool = False  # a managed allowManagedPermissionRulesOnly: no "always" is kept either
    run_mode: str = "default"  # the mode the run has without the repository's files (what `split` was given)
    output_style: str | None = None  # outputStyle of the highest file that sets one (output_styles.py reads it)
    commands: dict[str, tuple[str, str]] = field(default_factory=dict[str, tuple[str, str]])  # apiKeyHelper, …
    held: tuple[Held, ...] = ()
    notices: tuple[str, ...] = ()

    @property
    def hooks(self) -> tuple[tuple[SettingsFile, object], ...]:
        """Each file's `hooks`, highest precedence first: none when a file says `disableAllHooks`, only the managed
        file's when it says `allowManagedHooksOnly`."""
        if any(f.data.get("disableAllHooks") is True for f in self.files):
            return ()
        managed_only = any(f.scope == MANAGED and f.data.get("allowManagedHooksOnly") is True for f in self.files)
        return tuple(
            (f, f.data["hooks"]) for f in self.files if "hooks" in f.data and (f.scope == MANAGED or not managed_only)
        )


def apply(
    settings: ClaudeSettings,
    verdict: Callable[[SettingsFile, str], Verdict],
    *,
    cwd: Path,
    home: Path | None,
    run_mode: str,
) -> Applied:
    """The files as applied: a repository file's widening part only when `verdict` says it was approved."""
    files: list[SettingsFile] = []
    held: list[Held] = []
    # The mode the run has without the repository's files: your own files' defaultMode, else the flags'.
    run_mode = _mode(tuple(f for f in settings.files if not f.repository), []) or run_mode
    for found in settings.files:
        if not found.repository:
            files.append(found)
            continue
        restricting, widening = split(found.data, run_mode)
        answer = verdict(found, fingerprint(widening)) if widening else Verdict.APPROVED
        if answer is Verdict.APPROVED:
            files.append(found)
        else:
            files.append(SettingsFile(found.scope, found.shown, found.base, restricting, found.path))
            held.append(Held(found, answer, widening))
    return replace(_applied(tuple(files), tuple(held), settings.notices, cwd, home), run_mode=run_mode)


def _applied(
    files: tuple[SettingsFile, ...], held: tuple[Held, ...], notices: tuple[str, ...], cwd: Path, home: Path | None
) -> Applied:
    warnings = list(notices)
    env: dict[str, str] = {}
    for found in reversed(files):  # lowest first: a higher file's variable wins
        env |= _env(found, warnings)
    managed_only = any(f.scope == MANAGED and f.data.get(MANAGED_ONLY) is True for f in files)
    rules = _rules(files, managed_only, cwd, home, warnings)
    mode = _mode(files, warnings)
    all_servers = any(f.data.get("enableAllProjectMcpServers") is True for f in files)
    style = next((s for f in files if isinstance(s := f.data.get("outputStyle"), str) and s.strip()), None)
    return Applied(files, RuleSet(tuple(rules), str(cwd)), mode, _dirs(files, warnings), env, all_servers,
                   _names(files, "enabledMcpjsonServers"), _names(files, "disabledMcpjsonServers"), managed_only,
                   output_style=style, commands=_commands(files), held=held, notices=tuple(warnings))  # fmt: skip


def _rules(
    files: tuple[SettingsFile, ...], managed_only: bool, cwd: Path, home: Path | None, warnings: list[str]
) -> list[Rule]:
    """Every file's rules, higher files' first; with a managed allowManagedPermissionRulesOnly, the managed file's
    only (the others' are named in one warning each, as Claude Code ignores them)."""
    rules: list[Rule] = []
    for found in files:
        permissions = found.data.get("permissions")
        part = cast(dict[str, Any], permissions) if isinstance(permissions, dict) else {}
        if managed_only and found.scope != MANAGED:
            if any(strings(part.get(kind)) for kind in KINDS):
                warnings.append(f"{found.shown}: permission rules not applied (managed settings allow only theirs)")
            continue
        for kind in KINDS:
            made, said = parse_rules(
                kind, strings(part.get(kind)), source=found.shown, settings_base=str(found.base), cwd=str(cwd),
                home=None if home is None else str(home),
            )  # fmt: skip
            rules += made
            warnings += said
    return rules


def _names(files: tuple[SettingsFile, ...], key: str) -> frozenset[str]:
    """A list of server names merged over every applied file (Claude Code concatenates such lists)."""
    return frozenset(name for found in files for name in strings(found.data.get(key)))


def _commands(files: tuple[SettingsFile, ...]) -> dict[str, tuple[str, str]]:
    """apiKeyHelper, awsAuthRefresh, awsCredentialExport, gcpAuthRefresh: each from the highest file that sets it,
    with that file (a repository's only once approved: held, its file here has no such key)."""
    found: dict[str, tuple[str, str]] = {}
    for settings_file in reversed(files):  # lowest first: a higher file's command wins
        for key in SETTINGS_KEYS:
            value = settings_file.data.get(key)
            if isinstance(value, str) and value.strip():
                found[key] = (value.strip(), settings_file.shown)
    return found


def _mode(files: tuple[SettingsFile, ...], warnings: list[str]) -> str | None:
    """The highest file's defaultMode; bypassPermissions refused when a managed file disables it."""
    disabled = any(
        f.scope == MANAGED and isinstance(p := f.data.get("permissions"), dict)
        and cast(dict[str, Any], p).get("disableBypassPermissionsMode") == "disable"
        for f in files
    )  # fmt: skip
    for found in files:
        permissions = found.data.get("permissions")
        mode = cast(dict[str, Any], permissions).get("defaultMode") if isinstance(permissions, dict) else None
        if not isinstance(mode, str):
            continue
        if not _known(mode):
            warnings.append(
                f"{found.shown}: permissions.defaultMode {mode!r} is not a mode sprout-agent knows; ignored"
            )
        elif disabled and width(mode) == _WIDEST:
            warnings.append(f"{found.shown}: permissions.defaultMode {mode} is disabled by the managed settings")
        else:
            return mode
    return None


def _dirs(files: tuple[SettingsFile, ...], warnings: list[str]) -> tuple[Path, ...]:
    """additionalDirectories of your own files; a repository does not choose where the agent may write."""
    found: list[Path] = []
    for settings_file in files:
        permissions = settings_file.data.get("permissions")
        part = cast(dict[str, Any], permissions) if isinstance(permissions, dict) else {}
        dirs = strings(part.get("additionalDirectories"))
        if dirs and settings_file.repository:
            warnings.append(f"{settings_file.shown}: permissions.additionalDirectories is not applied "
                            "(only your own settings choose where the agent may write; use --add-dir)")  # fmt: skip
            continue
        found += [(settings_file.base / Path(d).expanduser()) for d in dirs]
    return tuple(dict.fromkeys(found))


def _env(found: SettingsFile, warnings: list[str]) -> dict[str, str]:
    """The file's `env`; a repository's may not set what its `.env` may not (guarded_env.py)."""
    raw = found.data.get("env")
    if not isinstance(raw, dict):
        return {}
    env: dict[str, str] = {}
    for name, value in cast(dict[str, object], raw).items():
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            continue
        if found.repository and (why := refused_because(name)) is not None:
            warnings.append(f"{found.shown}: env {name} not applied: a repository may not set {why}")
            continue
        env[name] = str(value)
    return env


def verdicts(approvals: Approvals, trusted: bool) -> Callable[[SettingsFile, str], Verdict]:
    """Each repository file's answer: approved when the run trusts the project, else the remembered one."""
    if trusted:
        return lambda found, print_: Verdict.APPROVED
    return lambda found, print_: approvals.settings_verdict(found.path or Path(found.shown), print_)
