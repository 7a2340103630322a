"""How argv reaches Typer: Claude Code's flags rewritten first (claude_flags.py), the main command's positional
prompt told apart from a subcommand, with options allowed after it (`sprout-agent -p "q" --model m`), an option
left unset parsed without pydantic (lazy_coercion.py), and the subcommands built only when one is looked up (a `-p`
run never builds them: typer's tree of every subcommand cost ~25 ms of CPU before the first request)."""

from __future__ import annotations

import copy
import sys
from collections.abc import Sequence
from typing import Any, cast

import typer
from typer.core import TyperGroup, TyperOption
from typer.main import get_command

from sprout_agent.core import collection
from sprout_agent.faces.cli.claude_flags import rewrite
from sprout_agent.faces.cli.lazy_coercion import defer_coercion

POSITIONAL = "sprout_agent.prompt"


class PromptOrCommand(TyperGroup):
    """`sprout-agent "fix the test"`: a first argument that names no subcommand is the prompt (Claude Code's
    form); with -p/--print it is always the prompt. A positional parameter on the callback would swallow the
    subcommand names instead. Options may follow the prompt, as in Claude Code.

    Built by `main_command`, its subcommands are Typer's own, built from `later` on the first lookup by name or
    listing (`--help`, a subcommand, a typo's suggestion); `names` tells a prompt from a subcommand before that."""

    later: typer.Typer | None = None  # the app whose subcommands are not built yet
    names: Sequence[str] = ()

    def _built(self, ctx: Any) -> None:
        collection.resume()  # a subcommand (or --help) runs with the collector, however long (core/collection.py)
        if self.later is not None:
            built = cast(TyperGroup, get_command(self.later))
            self.later = None
            for name, sub in built.commands.items():
                defer_coercion(sub, ctx)
                self.add_command(sub, name)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        self._built(ctx)
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: Any) -> list[str]:
        self._built(ctx)
        return super().list_commands(ctx)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        self._built(ctx)  # a typo's suggestion reads `commands` itself
        return super().resolve_command(ctx, args)

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # Any: typer's vendored click Context
        given = list(args)
        try:
            return self._parse(ctx, args)
        except _USAGE_ERROR as error:  # click prints it and exits 2; a script reading stdout gets its result too
            from sprout_agent.core.errors import EXIT_USAGE
            from sprout_agent.faces.headless.jsonl import report_early_error

            report_early_error(_output_format(given), error.format_message(), EXIT_USAGE, sys.stdout)
            raise

    def _parse(self, ctx: Any, args: list[str]) -> list[str]:
        given = list(args)  # the parser consumes the list it is given
        rest = super().parse_args(ctx, args)
        protected: list[str] = ctx._protected_args  # pyright: ignore[reportPrivateUsage]
        if not protected or (protected[0] in (*self.names, *self.commands) and not ctx.params.get("print_mode")):
            return rest
        # The prompt: parse again with options allowed anywhere (a group stops at its first argument).
        ctx.allow_interspersed_args = True
        ctx.params.clear()
        more = super().parse_args(ctx, given)
        positional = [*ctx._protected_args, *more]  # pyright: ignore[reportPrivateUsage]
        ctx._protected_args = []  # pyright: ignore[reportPrivateUsage]
        ctx.args = []
        if len(positional) > 1:
            ctx.fail(f"unexpected argument {positional[1]!r} after the prompt: quote a prompt of several words")
        ctx.meta[POSITIONAL] = positional[0] if positional else None
        return []


# typer vendors click and exports only this subclass of its UsageError (an unknown option, a missing value…): the
# base, typed as the subclass for its `format_message`, which both have.
_USAGE_ERROR = cast("type[typer.BadParameter]", typer.BadParameter.__mro__[1])


def _output_format(args: list[str]) -> str:
    """The `--output-format` the command line asks for, read as the parser would have (the last one wins)."""
    found = "text"
    for index, word in enumerate(args):
        if word == "--":
            break
        if word == "--output-format" and index + 1 < len(args):
            found = args[index + 1]
        elif word.startswith("--output-format="):
            found = word.partition("=")[2]
    return found


def main_command(app: typer.Typer) -> PromptOrCommand:
    """`app`'s main command, its callback's options built and its subcommands (each app or command registered
    with a name) left to build when one is looked up."""
    head, later = copy.copy(app), copy.copy(app)
    head.registered_groups, head.registered_commands = [], []
    later.registered_callback = None
    command = get_command(head)
    assert isinstance(command, PromptOrCommand)
    names = [info.name for info in (*app.registered_commands, *app.registered_groups)]
    if all(names):
        command.later, command.names = later, [name for name in names if name]
    else:  # a subcommand named by its function: Typer's own naming, from the whole tree built now
        command = get_command(app)
        assert isinstance(command, PromptOrCommand)
    return command


def run(app: typer.Typer, argv: list[str]) -> None:
    """Runs `app` on argv with Claude Code's flags rewritten; each dropped flag is one warning line on stderr."""
    command = main_command(app)
    options = [param for param in command.params if isinstance(param, TyperOption)]
    known = {name for param in options for name in (*param.opts, *param.secondary_opts)}
    takes_value = {name for param in options if not param.is_flag for name in param.opts}
    commands = {*command.names, *command.commands}
    rewritten = rewrite(argv, takes_value=takes_value, known=known, commands=commands)
    for warning in rewritten.warnings:
        sys.stderr.write(f"sprout-agent: {warning}\n")
    defer_coercion(command)
    command(args=rewritten.argv, prog_name="sprout-agent")  # the tree built above: `app(...)` would build another
