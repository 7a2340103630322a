"""The path in a Claude Code `Read(…)` or `Edit(…)` rule, matched as Claude Code matches it: gitignore patterns,
`//abs`, `~/home`, `/relative-to-the-settings-file`, `./` or a bare path relative to the working directory."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import cached_property

WILDCARDS = frozenset("*?[")


@dataclass(frozen=True)
class PathPattern:
    """A gitignore pattern anchored at `base`; `anywhere`: it has no slash, so it matches a name at any depth.
    A pattern that matches a directory matches everything under it, as an ignored directory hides its files."""

    base: str  # absolute, normalised
    pattern: str
    anywhere: bool = False

    @cached_property
    def _regex(self) -> re.Pattern[str]:
        return re.compile(_translate(self.pattern))

    @cached_property
    def _bases(self) -> tuple[str, ...]:
        """The base as written and as it resolves (a working directory under a link, /tmp on macOS)."""
        real = os.path.realpath(self.base)
        return (self.base,) if real == self.base else (self.base, real)

    @property
    def literal(self) -> str | None:
        """The one path this pattern names when it has no wildcard (`./.env`, `secrets/**` as `secrets`), for the
        sandbox's deny list; a name matched at any depth gives only the one at `base`."""
        head = self.pattern[:-3] if self.pattern.endswith("/**") else self.pattern
        if not head or any(char in WILDCARDS for char in head):
            return None
        return os.path.normpath(os.path.join(self.base, head))

    def matches(self, path: str) -> bool:
        """Whether the absolute `path` or a directory above it matches (`candidates` gives the forms to try)."""
        return any(self._matches_below(base, path) for base in self._bases)

    def _matches_below(self, base: str, path: str) -> bool:
        rel = os.path.relpath(path, base)
        if rel == ".." or rel.startswith("../"):
            return False
        parts = [] if rel == "." else rel.split(os.sep)
        if self.anywhere:
            return any(self._regex.fullmatch(part) for part in parts)
        return any(self._regex.fullmatch("/".join(parts[: end + 1])) for end in range(len(parts)))


def _translate(pattern: str) -> str:
    """gitignore's glob as a regular expression: `**` any depth, `*` and `?` within a name, `[…]` a class."""
    out: list[str] = []
    index = 0
    while index < len(pattern):
        if pattern.endswith("/**") and index == len(pattern) - 3:
            out.append("(?:/.*)?")  # `secrets/**` also names the directory itself: a search of it reads them all
            index += 3
        elif pattern.startswith("**/", index):
            out.append("(?:.*/)?")
            index += 3
        elif pattern.startswith("**", index):
            out.append(".*")
            index += 2
        elif pattern[index] == "*":
            out.append("[^/]*")
            index += 1
        elif pattern[index] == "?":
            out.append("[^/]")
            index += 1
        elif pattern[index] == "[" and (close := pattern.find("]", index + 2)) != -1:
            body = pattern[index + 1 : close].replace("\\", "\\\\")
            out.append("[^" + body[1:] + "]" if body.startswith("!") else "[" + body + "]")
            index = close + 1
        else:
            out.append(re.escape(pattern[index]))
            index += 1
    return "".join(out)


def parse_path(spec: str, *, settings_base: str, cwd: str, home: str | None) -> PathPattern | None:
    """A rule's path as a pattern (None: empty, or `~/` with no home known)."""
    text = spec.strip()
    if text.startswith("//"):
        base, rest = "/", text[2:]
    elif text == "~" or text.startswith("~/"):
        if home is None:
            return None
        base, rest = home, text[2:]
    elif text.startswith("/"):
        base, rest = settings_base, text[1:]
    elif text.startswith("./"):
        base, rest = cwd, text[2:]
    else:
        base, rest = cwd, text
        if "/" not in rest.rstrip("/"):  # gitignore: a pattern without a slash matches at any depth
            return PathPattern(os.path.normpath(base), rest.rstrip("/") or "*", anywhere=True)
    rest = rest.rstrip("/") or "**"
    return PathPattern(os.path.normpath(base), rest)


def candidates(path: str, cwd: str) -> tuple[str, ...]:
    """The path as named (normalised, from `cwd`) and as it resolves: a link to `.env` is `.env`."""
    joined = os.path.normpath(os.path.join(cwd, os.path.expanduser(path)))
    try:
        real = os.path.realpath(joined)
    except (OSError, ValueError):
        return (joined,)
    return (joined,) if real == joined else (joined, real)
