"""Typer parses an option's value with a pydantic TypeAdapter built on first use, even for a value left unset: an
unset option here is passed through as typer's own coercion would pass it, and the adapter built on a real value."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from typer._click import Context  # pyright: ignore[reportPrivateUsage]
from typer._coercion import RuntimeParam, TypeDescriptor, build_runtime_param  # pyright: ignore[reportPrivateUsage]
from typer.core import TyperGroup, _TyperParameter  # pyright: ignore[reportPrivateUsage]

# Why: `sprout-agent mcp list` processes every option of the main command too (~45, all unset), and each one built
# a TypeAdapter, importing pydantic: about 0.1 s of CPU on a path that needs none (docs/architecture.md, light paths).


@dataclass(frozen=True)
class _OnFirstValue(RuntimeParam):
    """Typer's RuntimeParam.coerce already answers an unset value (None, or () for a multiple option) without
    `_coerce_value`; a default that is already its enum member is answered here; anything else goes to the runtime
    param typer builds, which then replaces this one."""

    descriptor: TypeDescriptor

    def _coerce_value(self, value: Any, param: _TyperParameter, ctx: Any) -> Any:  # Any: typer's vendored Context
        if isinstance(value, Enum) and type(value) is self.annotation:
            return value
        built = build_runtime_param(self.descriptor)
        param._runtime_param = built  # pyright: ignore[reportPrivateUsage]
        return built._coerce_value(value, param=param, ctx=ctx)  # pyright: ignore[reportPrivateUsage]


def defer_coercion(command: Any, parent: Any = None) -> None:
    """Every typer parameter of `command` and of its subcommands, at any depth, parsed through _OnFirstValue: its
    help option too, which click makes once per command from a context (made here as a run's would be)."""
    context = Context(command, parent=parent, info_name=command.name)
    for param in command.get_params(context):
        if isinstance(param, _TyperParameter) and param._runtime_param is None:  # pyright: ignore[reportPrivateUsage]
            described = param.type_descriptor
            lazy = _OnFirstValue(described.parameter_info, described.annotation, described)
            param._runtime_param = lazy  # pyright: ignore[reportPrivateUsage]
    if isinstance(command, TyperGroup):
        for sub in command.commands.values():
            defer_coercion(sub, context)
