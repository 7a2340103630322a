"""The permission mode as one type: every `--permission-mode` spelling (ours and Claude Code's), parsed once by
`parse_mode`, each with what it does here and the name Claude Code gives it. Stdlib only: the command line checks
a flag with it before anything heavy is imported.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Literal


class PermissionMode(enum.StrEnum):
    """A mode as given. Ours are auto, ask and read-only; Claude Code's names behave as one of ours (`ours`), with
    some tools allowed on top (`allows`). A `str`: it prints, compares and serialises as the name given."""

    AUTO = "auto"
    ASK = "ask"
    READ_ONLY = "read-only"
    DEFAULT = "default"
    ACCEPT_EDITS = "acceptEdits"
    PLAN = "plan"
    BYPASS_PERMISSIONS = "bypassPermissions"
    DONT_ASK = "dontAsk"

    @property
    def ours(self) -> Ours:
        """The mode of ours that decides the calls."""
        return _MEANING[self].ours

    @property
    def allows(self) -> tuple[str, ...]:
        """Tool patterns the mode lets run on top of what `ours` lets run (acceptEdits: the built-in edits)."""
        return _MEANING[self].allows

    @property
    def claude_name(self) -> PermissionMode:
        """As Claude Code names it, for what the SDKs read (system/init, hook inputs); its own names are kept."""
        return _MEANING[self].claude

    def within(self, ceiling: PermissionMode) -> bool:
        """Whether this mode lets through no call that `ceiling` refuses: read-only < ask < auto, and at one of ours
        the tools allowed on top count (acceptEdits is ask with the edits allowed)."""
        if _WIDTH[self.ours] != _WIDTH[ceiling.ours]:
            return _WIDTH[self.ours] < _WIDTH[ceiling.ours]
        return set(self.allows) <= set(ceiling.allows)

    def behaves_as(self, other: PermissionMode) -> bool:
        """Whether both decide every call alike (`default` and `ask`, `plan` and `read-only`)."""
        return self.ours is other.ours and self.allows == other.allows


# The three modes of ours: the only values `PermissionMode.ours` takes, so a `match` over them is exhaustive.
Ours = Literal[PermissionMode.AUTO, PermissionMode.ASK, PermissionMode.READ_ONLY]

# The edit tools Claude Code's acceptEdits mode lets run unasked: the built-in dev server's writes.
EDIT_TOOLS = ("dev__write", "dev__edit")


@dataclass(frozen=True, slots=True)
class _Meaning:
    ours: Ours
    allows: tuple[str, ...]
    claude: PermissionMode


_M = PermissionMode
# Both vocabularies in one table. default asks for what is not a read, as our ask mode does; plan may only read;
# dontAsk refuses what is not allowed beforehand, which is our ask mode with nobody to ask (an SDK that answers
# can_use_tool asks on).
_MEANING: dict[PermissionMode, _Meaning] = {
    _M.AUTO: _Meaning(_M.AUTO, (), _M.BYPASS_PERMISSIONS),
    _M.ASK: _Meaning(_M.ASK, (), _M.DEFAULT),
    _M.READ_ONLY: _Meaning(_M.READ_ONLY, (), _M.PLAN),
    _M.DEFAULT: _Meaning(_M.ASK, (), _M.DEFAULT),
    _M.ACCEPT_EDITS: _Meaning(_M.ASK, EDIT_TOOLS, _M.ACCEPT_EDITS),
    _M.PLAN: _Meaning(_M.READ_ONLY, (), _M.PLAN),
    _M.BYPASS_PERMISSIONS: _Meaning(_M.AUTO, (), _M.BYPASS_PERMISSIONS),
    _M.DONT_ASK: _Meaning(_M.ASK, (), _M.DONT_ASK),
}


# How much of ours lets run, least first (`within`).
_WIDTH: dict[PermissionMode, int] = {_M.READ_ONLY: 0, _M.ASK: 1, _M.AUTO: 2}


def parse_mode(name: object) -> PermissionMode:
    """The one way a name (a flag, an SDK's set_permission_mode, an editor's pick) becomes a mode; ValueError
    naming every spelling for anything else."""
    if isinstance(name, str) and name in _MEANING:
        return PermissionMode(name)
    known = ", ".join(_MEANING)
    raise ValueError(f"unknown permission mode {name!r} (known: {known})")
