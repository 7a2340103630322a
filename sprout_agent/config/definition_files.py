"""Reading the agent definitions, skills and custom slash commands a project and its user keep in Markdown (the
types: definitions.py; the formats and places: docs/definitions.md).

Front matter is YAML, read with PyYAML's safe loader (a well-kept parser of the format Claude Code writes; imported
only when a file exists, so a directory without any costs nothing). Every file is untrusted text: bounded in size
and number, its names and descriptions checked, never run, and read by the one reader (trust/opening.py) from its
directory as pinned when found, never through a symlink out of it nor past the deny list. A file that cannot be
used is one notice naming it and why; the others load.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any, TypeVar, cast

from sprout_agent.config.definitions import BUILTIN_AGENTS, AgentDefinition, CustomCommand, Definitions, Skill
from sprout_agent.core.errors import UsageError
from sprout_agent.trust.opening import NOTHING_DENIED, DenyList, Fixed, Refused, under
from sprout_agent.trust.untrusted import printable
from sprout_agent.trust.write_policy import project_directories

FILE_MAX_BYTES = 256 * 1024
MAX_PER_KIND = 200  # files of one kind read from one directory
DESCRIPTION_MAX_CHARS = 1024
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}")
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Places:
    """Where each kind is read from, nearest first: a name found earlier wins over the same name found later."""

    agents: tuple[Path, ...]
    skills: tuple[Path, ...]
    commands: tuple[Path, ...]
    project: Path | None = None  # the project's root: its directories may not be symbolic links out of it


SOURCES = ("user", "project", "local")


def places(cwd: Path, home: Path | None, config: Path | None, sources: str | None = None) -> Places:
    """The project's `.claude/` (and `.agents/skills`, which Codex and goose read) from the working directory up to
    its git root, then the user's `~/.claude/` and `~/.agents/skills`, then ours (the user config directory).
    `sources` (`--setting-sources`): only the project's with `project`, only the user's and ours with `user`."""
    chosen = set(SOURCES) if sources is None else {part.strip() for part in sources.split(",") if part.strip()}
    if unknown := sorted(chosen - set(SOURCES)):
        raise UsageError(f"--setting-sources: {unknown[0]!r} is not one of {', '.join(SOURCES)}")
    # Innermost first (the nearest wins); none that anybody may write, nor above one (another user's `.claude/`).
    project = [Path(d) for d in reversed(project_directories(str(cwd)))] if "project" in chosen else []
    root = project[-1] if project else cwd
    users = [home] if home is not None and "user" in chosen else []
    ours = [config] if config is not None and "user" in chosen else []
    return Places(
        agents=(*(d / ".claude" / "agents" for d in [*project, *users]), *(c / "agents" for c in ours)),
        skills=(
            *(d / sub / "skills" for d in [*project, *users] for sub in (".claude", ".agents")),
            *(c / "skills" for c in ours),
        ),
        commands=(*(d / ".claude" / "commands" for d in [*project, *users]), *(c / "commands" for c in ours)),
        project=root if project and root != home else None,  # run in ~: its links are the user's own
    )


@dataclass(frozen=True, slots=True)
class _Found:
    """A file found in `directory` (pinned when found, as `fixed`): it is read from there or not at all."""

    path: Path
    directory: Path
    fixed: Fixed

    def read(self) -> tuple[dict[str, Any], str]:
        """(front matter, body), bounded."""
        data = self.fixed.read(os.path.relpath(self.path, self.directory), FILE_MAX_BYTES)
        if len(data) > FILE_MAX_BYTES:
            raise ValueError(f"larger than {FILE_MAX_BYTES // 1024} KB")
        # A Windows checkout's CRLF and BOM (Notepad's) are the same file to Claude Code: the `---` lines still close.
        return front_matter(data.decode("utf-8-sig").replace("\r\n", "\n"))


@dataclass
class _Reading:
    notices: list[str] = field(default_factory=list[str])
    project: Path | None = None
    deny: DenyList = NOTHING_DENIED

    def escapes(self, directory: Path) -> bool:
        """A project's `.claude/commands` (or `.claude`) linked to somewhere outside the project (a user's home: its
        every Markdown file read, and walked at each start) is refused; the user's own links are the user's."""
        if self.project is None or not directory.is_relative_to(self.project):
            return False
        if directory.resolve().is_relative_to(self.project.resolve()):
            return False
        self.notices.append(f"{printable(str(directory))}: a symbolic link out of the project (skipped)")
        return True

    def pin(self, directory: Path) -> Fixed | None:
        try:
            return Fixed.pin(str(directory), self.deny)
        except (OSError, Refused) as error:
            self.notices.append(f"{printable(str(directory))}: {printable(str(error), 200)} (skipped)")
            return None

    def each(self, found: Iterable[_Found], read: Callable[[_Found], T | None]) -> list[T]:
        """Reads each file; a file that fails is one notice, the rest load."""
        items: list[T] = []
        for item in found:
            try:
                made = read(item)
            except (ValueError, OSError, UnicodeDecodeError, Refused) as error:
                self.notices.append(f"{printable(str(item.path))}: {printable(str(error), 200)} (skipped)")
                continue
            if made is not None:
                items.append(made)
        return items


def load_definitions(where: Places, agents_json: Sequence[str] = (), deny: DenyList = NOTHING_DENIED) -> Definitions:
    """Every kind from its places, deduplicated by name (nearest wins); `--agents` / the SDK's agents win over files,
    files over the built-in agents. A bad `--agents` is a UsageError (exit 2). `deny`: what the read tool may not
    read (the sandbox's deny list), which these reads may not either."""
    reading = _Reading(project=where.project, deny=deny)
    given = [agent for raw in agents_json for agent in parse_agents_json(raw)]
    agents = reading.each(_files(where.agents, "*.md", reading), _agent_file)
    skills = reading.each(_skill_files(where.skills, reading), _skill_file)
    commands = reading.each(_files(where.commands, "**/*.md", reading), _command_file)
    return Definitions(
        agents=_first_by_name([*given, *agents, *BUILTIN_AGENTS]),
        skills=_first_by_name(skills),
        commands=_first_by_name(commands),
        notices=tuple(reading.notices),
    )


def _first_by_name(items: Iterable[T]) -> tuple[T, ...]:
    seen: dict[str, T] = {}
    for item in items:
        seen.setdefault(getattr(item, "name"), item)  # noqa: B009 (every kind has a name)
    return tuple(seen.values())


def _files(directories: Sequence[Path], pattern: str, reading: _Reading) -> list[_Found]:
    found: list[_Found] = []
    for directory in directories:
        if not directory.is_dir() or reading.escapes(directory):
            continue
        fixed = reading.pin(directory)
        if fixed is None:
            continue
        # Bounded before sorting: a repository's tree of a million files is not listed whole at each start.
        paths = sorted(islice(directory.glob(pattern), 5 * MAX_PER_KIND))
        if len(paths) > MAX_PER_KIND:
            reading.notices.append(f"{printable(str(directory))}: more than {MAX_PER_KIND} files; the first read")
        found += [_Found(path, directory, fixed) for path in paths[:MAX_PER_KIND] if path.is_file()]
    return found


def _skill_files(directories: Sequence[Path], reading: _Reading) -> list[_Found]:
    """Each skill's SKILL.md, with the skill's own directory pinned: its other files are read from it later."""
    found: list[_Found] = []
    for item in _files(directories, "*/SKILL.md", reading):
        fixed = reading.pin(item.path.parent)
        if fixed is None:
            continue
        if not under(fixed.real, item.fixed.real) or fixed.real == item.fixed.real:
            where = printable(str(item.path))
            reading.notices.append(f"{where}: a symbolic link out of its skills directory (skipped)")
            continue
        found.append(_Found(item.path, item.path.parent, fixed))
    return found


def front_matter(text: str) -> tuple[dict[str, Any], str]:
    """YAML between `---` lines at the top, and the Markdown after it ({} and the whole text when there is none)."""
    if not text.startswith("---"):
        return {}, text
    end = re.search(r"^---[ \t]*$", text[3:], re.MULTILINE)
    if end is None:
        raise ValueError("front matter opened with --- is never closed")
    import yaml

    try:
        data = yaml.load(text[3 : 3 + end.start()], Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as error:
        raise ValueError(f"front matter is not YAML: {str(error).splitlines()[0]}") from None
    if data is not None and not isinstance(data, dict):
        raise ValueError("front matter is not a mapping of fields")
    return cast(dict[str, Any], data or {}), text[3 + end.end() :].lstrip("\n")


def _agent_file(found: _Found) -> AgentDefinition:
    fields, body = found.read()
    return agent_definition(fields.get("name") or found.path.stem, fields, body.strip(), str(found.path))


def agent_definition(name: object, fields: Mapping[str, Any], prompt: str, source: str) -> AgentDefinition:
    if not prompt:
        raise ValueError("no prompt (the Markdown body, or `prompt`)")
    limit = fields.get("maxTurns")  # Claude Code's name for the most model requests a task makes
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
        raise ValueError("maxTurns must be a positive integer")
    model = fields.get("model")
    if model is not None and (not isinstance(model, str) or not re.fullmatch(r"[\x21-\x7e]{1,100}", model)):
        raise ValueError("model must be an alias (sonnet, opus, haiku, inherit) or a model id")
    tools = fields.get("tools")
    return AgentDefinition(
        _name(name),
        _description(fields.get("description")),
        prompt,
        tools=None if tools is None else _names(tools, "tools"),
        disallowed_tools=_names(fields.get("disallowedTools") or [], "disallowedTools"),
        model=model,
        max_requests=limit,
        source=source,
    )


def _skill_file(found: _Found) -> Skill:
    fields, _body = found.read()
    name = _name(fields.get("name") or found.directory.name)
    return Skill(name, _description(fields.get("description")), found.path, found.fixed)


def _command_file(found: _Found) -> CustomCommand:
    fields, body = found.read()
    relative = found.path.relative_to(found.directory).with_suffix("")
    name = _name(":".join(relative.parts))
    first = next((line.strip() for line in body.splitlines() if line.strip()), "")
    description = _description(fields.get("description") or first[:120] or name)
    hint = fields.get("argument-hint")
    hint = printable(hint, 80) if isinstance(hint, str) else ""  # never str() of YAML: aliases make it gigabytes
    return CustomCommand(name, description, body, hint, str(found.path))


def _name(value: object) -> str:
    if not isinstance(value, str):  # not str() of it: a few YAML aliases write out as gigabytes of text
        raise ValueError(f"name is a {type(value).__name__}, not 1-64 letters, digits, '_', '.', ':' or '-'")
    if not _NAME.fullmatch(value):
        raise ValueError(f"name {printable(value, 80)!r} is not 1-64 letters, digits, '_', '.', ':' or '-'")
    return value


def _description(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("no description")
    return printable(" ".join(value.split()), DESCRIPTION_MAX_CHARS)


def _names(value: object, field_name: str) -> tuple[str, ...]:
    """`Read, Grep` or a list of names."""
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    if isinstance(value, list):
        items = cast(list[object], value)
        if all(isinstance(item, str) for item in items):
            return tuple(str(item).strip() for item in items)
    raise ValueError(f"{field_name} must be a list of tool names or a comma-separated string")


def parse_agents_json(raw: str) -> list[AgentDefinition]:
    """`--agents '{"name": {"description", "prompt", "tools", "disallowedTools", "model", "maxTurns"}}'`, as
    Claude Code's flag and the SDKs' `agents` option give them."""
    try:
        data: object = json.loads(raw)
    except ValueError as error:
        raise UsageError(f"--agents is not JSON: {error}") from None
    if not isinstance(data, dict):
        raise UsageError("--agents must be a JSON object of agent definitions by name")
    agents: list[AgentDefinition] = []
    for name, fields in cast(dict[str, object], data).items():
        if not isinstance(fields, dict):
            raise UsageError(f"--agents: {printable(name, 80)} must be an object")
        given = cast(dict[str, Any], fields)
        prompt = given.get("prompt")
        try:
            agents.append(agent_definition(name, given, prompt.strip() if isinstance(prompt, str) else "", "--agents"))
        except ValueError as error:
            raise UsageError(f"--agents: {printable(name, 80)}: {error}") from None
    return agents
