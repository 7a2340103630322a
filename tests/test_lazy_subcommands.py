"""The main command builds its subcommands' tree only when one is looked up (faces/cli/argv.py): a prompt run
never pays for it, and `--help`, a subcommand or its options behave as the whole tree built at once does."""

from __future__ import annotations

from typing import Any

from typer._click import Context  # pyright: ignore[reportPrivateUsage]
from typer.core import TyperGroup
from typer.main import get_command

from sprout_agent.faces.cli.app import app
from sprout_agent.faces.cli.argv import POSITIONAL, main_command
from sprout_agent.faces.cli.lazy_coercion import _OnFirstValue  # pyright: ignore[reportPrivateUsage]


def _whole() -> TyperGroup:
    whole = get_command(app)
    assert isinstance(whole, TyperGroup)
    return whole


def test_a_prompt_run_is_parsed_without_building_any_subcommand() -> None:
    command = main_command(app)
    context = command.make_context("sprout-agent", ["-p", "mcp"])  # a prompt that is a subcommand's name
    assert context.meta[POSITIONAL] == "mcp"
    assert dict(command.commands) == {}
    assert sorted(command.names) == sorted(_whole().commands)


def test_help_lists_the_subcommands_as_the_whole_tree_does() -> None:
    command, whole = main_command(app), _whole()
    mine = command.get_help(Context(command, info_name="sprout-agent"))
    theirs = whole.get_help(Context(whole, info_name="sprout-agent"))
    assert mine == theirs
    assert list(command.commands) == list(whole.commands)


def test_a_subcommand_named_is_built_with_its_unset_options_parsed_without_pydantic() -> None:
    command = main_command(app)
    context = command.make_context("sprout-agent", ["mcp", "list"])
    named = context._protected_args  # pyright: ignore[reportPrivateUsage]
    _name, found, _rest = command.resolve_command(context, named)
    assert isinstance(found, TyperGroup) and named == ["mcp"] and context.args == ["list"]
    listing: Any = found.get_command(context, "list")
    params = [p for p in listing.params if hasattr(p, "_runtime_param")]
    assert params and all(isinstance(p._runtime_param, _OnFirstValue) for p in params)
