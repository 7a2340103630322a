"""faces/cli/lazy_coercion.py: options left unset are parsed without building typer's pydantic adapters; a given
value is parsed and refused exactly as typer parses it (the light paths' import check is scripts/light_paths.py)."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import pytest
import typer
from typer.main import get_command

from sprout_agent.faces.cli.lazy_coercion import defer_coercion


class Colour(Enum):
    red = "red"
    blue = "blue"


def _app(seen: dict[str, Any]) -> typer.Typer:
    app = typer.Typer()
    sub = typer.Typer()

    @app.callback(invoke_without_command=True)
    def main(
        colour: Annotated[Colour, typer.Option()] = Colour.red,
        count: Annotated[int | None, typer.Option(min=1)] = None,
        paths: Annotated[list[Path] | None, typer.Option("--path")] = None,
    ) -> None:
        seen.update(colour=colour, count=count, paths=paths)

    @sub.command("go")
    def go(name: Annotated[str | None, typer.Option()] = None) -> None:
        seen.update(name=name)

    app.add_typer(sub, name="sub")
    return app


def _run(args: list[str]) -> tuple[int, dict[str, Any], Any]:
    seen: dict[str, Any] = {}
    command = get_command(_app(seen))
    defer_coercion(command)
    try:
        command(args=args, prog_name="t", standalone_mode=False)
        code = 0
    except typer.BadParameter:
        code = 2
    return code, seen, command


def _built(command: Any) -> dict[str, str]:
    """Each parameter's runtime parser, by name: still the deferred one, or the one typer built."""
    params = [*command.params, *command.commands["sub"].commands["go"].params]
    return {p.name: type(p._runtime_param).__name__ for p in params}


def test_options_left_unset_keep_their_defaults_and_build_no_parser() -> None:
    code, seen, command = _run(["sub", "go"])
    assert code == 0 and seen == {"colour": Colour.red, "count": None, "paths": None, "name": None}
    assert set(_built(command).values()) == {"_OnFirstValue"}


def test_a_given_value_is_parsed_as_typer_parses_it() -> None:
    code, seen, command = _run(["--colour", "blue", "--count", "3", "--path", "a", "--path", "b", "sub", "go"])
    assert (
        code == 0 and seen["colour"] is Colour.blue and seen["count"] == 3 and seen["paths"] == [Path("a"), Path("b")]
    )
    assert _built(command)["count"] == "AdapterRuntimeParam"


@pytest.mark.parametrize("args", [["--count", "0"], ["--colour", "green"], ["--count", "many"]])
def test_a_bad_value_is_refused_as_typer_refuses_it(args: list[str]) -> None:
    code, seen, _ = _run(args)
    assert code == 2 and seen == {}
