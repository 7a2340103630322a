"""A child's command line with text we do not own on it (a batch task's prompt, a model's command under the
sandbox's launcher): the program and our options first, then `--`, then that text as operands, so a prompt that
reads `--mcp-config` stays a prompt and is never taken for an option. The one way to build such a command line
(docs/security.md, "Text on a child's command line")."""

from __future__ import annotations

from collections.abc import Sequence

END_OF_OPTIONS = "--"


def with_operands(command: Sequence[str], operands: Sequence[str]) -> list[str]:
    """`command` (the program and options we chose, none of them from the untrusted text), `--`, `operands`.
    A `--` already in `command` would end the options early and make the rest operands: refused."""
    if END_OF_OPTIONS in command:
        raise ValueError(f"{END_OF_OPTIONS!r} in the options of {command[0]!r}: the operands would not be operands")
    return [*command, END_OF_OPTIONS, *operands]
