"""`${VAR}` expansion in config strings, and the strings the OS cannot take (exec, environment, chdir)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import cast

from sprout_agent.core.errors import ConfigError

_VAR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_VAR_REF = re.compile(r"\$\{([^}]*)(\}?)")


def unset_vars(entry: object, env: Mapping[str, str]) -> tuple[str, ...]:
    """Every `${VAR}` (without a default) anywhere in an entry's strings that `env` does not set."""
    found: set[str] = set()
    pending: list[object] = [entry]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            pending.extend(cast(dict[str, object], item).values())
        elif isinstance(item, list):
            pending.extend(cast(list[object], item))
        elif isinstance(item, str):
            for match in _VAR_REF.finditer(item):
                name, has_default, _ = match.group(1).partition(":-")
                if not has_default and _VAR_NAME.fullmatch(name) and name not in env:
                    found.add(name)
    return tuple(sorted(found))


def os_string_problem(text: str) -> str | None:
    """Why the OS cannot take `text` (exec, environment, chdir), or None: a spawn would crash on it."""
    if "\0" in text:
        return "contains a NUL byte"
    try:
        os.fsencode(text)
    except UnicodeEncodeError:  # a lone surrogate from a JSON \ud800 escape
        return "is not valid Unicode (a lone surrogate)"
    return None


def os_string(text: str, where: str) -> str:
    problem = os_string_problem(text)
    if problem is not None:
        raise ConfigError(f"{where} {problem}")
    return text


def env_name(name: str, where: str) -> str:
    # POSIX allows any name but an empty one or one with '=' or NUL; the spawn would fail on those.
    if not name or "=" in name:
        raise ConfigError(f"{where}.env: {name!r} cannot be a variable name (empty, or holds '=')")
    return os_string(name, f"{where}.env: {name!r}")


def expand_vars(text: str, env: Mapping[str, str], where: str) -> str:
    """`${VAR}` -> env value (error if unset); `${VAR:-default}` -> default when VAR is unset.

    Claude Code's documented rule ("VAR if set, otherwise default"), not the shell's: a variable set to ""
    stays "" (a file written for Claude Code must mean the same here)."""

    def replace(match: re.Match[str]) -> str:
        body, closed = match.group(1), match.group(2)
        name, has_default, default = body.partition(":-")
        if not closed or not _VAR_NAME.fullmatch(name):
            raise ConfigError(f"{where}: malformed variable reference '${{{body}{closed}'")
        value = env.get(name)
        if has_default and value is None:
            return default
        if value is None:
            raise ConfigError(f"{where}: variable {name} is not set (use ${{{name}:-default}} for a default)")
        return value

    return _VAR_REF.sub(replace, text)
