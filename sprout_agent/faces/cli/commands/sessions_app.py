"""The `sessions` subcommands (Typer): `sessions` lists, `sessions turns ID`, `sessions rewind ID --to TURN`,
`sessions prune`. Declarations only: the bodies (sessions.py, session_rewind.py) load when a command runs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from sprout_agent.core.errors import SproutError
from sprout_agent.faces.cli.exits import exit_now, fail

sessions_app = typer.Typer(
    help="The recorded sessions: list them (the default), a session's turns, rewind one, prune old ones.",
    no_args_is_help=False,
)
_JsonOption = Annotated[bool, typer.Option("--json", help="JSON on stdout.")]
_SessionArgument = Annotated[str, typer.Argument(help="A session id, or its first characters.")]


def _run(body: Callable[[], int]) -> None:
    """A body's exit code; its SproutError is one line on stderr and the error's code (a usage error: 2)."""
    try:
        code = body()
    except SproutError as error:
        fail(str(error), error.exit_code)
    exit_now(code)


@sessions_app.callback(invoke_without_command=True)
def sessions_list(
    ctx: typer.Context,
    here: Annotated[bool, typer.Option("--here", help="Only sessions started in the current directory.")] = False,
    limit: Annotated[int | None, typer.Option(min=1, metavar="N", help="Show at most this many.")] = None,
    as_json: _JsonOption = False,
) -> None:
    """List recorded sessions, newest activity first: id, directory, last activity, turns, first prompt."""
    if ctx.invoked_subcommand is not None:
        return
    from sprout_agent.faces.cli.commands.sessions import list_command

    _run(lambda: list_command(here=here, limit=limit, as_json=as_json))


@sessions_app.command("turns")
def sessions_turns(session_id: _SessionArgument, as_json: _JsonOption = False) -> None:
    """A session's turns, oldest first: number, time, files changed (+/-), prompt; `sessions rewind --to` takes the
    number."""
    from sprout_agent.faces.cli.commands.sessions import turns_command

    _run(lambda: turns_command(session_id, as_json=as_json))


@sessions_app.command("export")
def sessions_export(
    session_id: _SessionArgument,
    html: Annotated[bool, typer.Option("--html", help="One self-contained HTML page (the default).")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="The same view as JSON, for tools.")] = False,
    atif: Annotated[bool, typer.Option("--atif", help="An ATIF trajectory (Harbor's format), as JSON.")] = False,
    out: Annotated[
        Path | None,
        typer.Option(metavar="FILE", help="Where to write it (default: ID.html, ID.json or ID.atif.json here)."),
    ] = None,
) -> None:
    """A session as a page to open or share: prompts, answers, thinking, each tool call with its result and time,
    hook decisions, compactions, the cost; nothing in it loads or runs anything. `--atif`: the steps, tool calls,
    tokens and cost as an ATIF trajectory."""
    from sprout_agent.faces.cli.commands.sessions import export_command

    if html + as_json + atif > 1:
        fail("give one of --html, --json and --atif", 2)
    _run(lambda: export_command(session_id, as_json=as_json, out=out, atif=atif))


@sessions_app.command("rewind")
def sessions_rewind(
    session_id: _SessionArgument,
    to: Annotated[int, typer.Option("--to", min=1, metavar="TURN", help="Go back to before this turn.")],
    files_only: Annotated[bool, typer.Option("--files-only", help="Only the files; the conversation stays.")] = False,
    conversation_only: Annotated[
        bool, typer.Option("--conversation-only", help="Only the conversation (a fork); the files stay.")
    ] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the diff it would apply; change nothing.")] = False,
    include: Annotated[
        list[str] | None,
        typer.Option("--include", metavar="PATH", help="Put back this conflicting file all the same; repeatable."),
    ] = None,
    as_json: _JsonOption = False,
) -> None:
    """Put the files back as they were before turn TURN (files the user changed since are conflicts, left alone)
    and fork the conversation there. Exit 0, 5 when conflicts were left, 1 when a file could not be put back."""
    from sprout_agent.faces.cli.commands.session_rewind import rewind_command

    _run(
        lambda: rewind_command(
            session_id,
            to,
            files_only=files_only,
            conversation_only=conversation_only,
            include=include or (),
            dry_run=dry_run,
            as_json=as_json,
        )
    )


@sessions_app.command("prune")
def sessions_prune(
    older_than: Annotated[
        float, typer.Option("--older-than", min=0, metavar="DAYS", help="Last activity before this many days ago.")
    ] = 30,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List what it would remove; remove nothing.")] = False,
    as_json: _JsonOption = False,
) -> None:
    """Remove old sessions and their checkpoints (refs/sprout-agent/<id>, private indexes, unused shadow
    repositories). A session in use, or one a kept session was forked from, is kept."""
    from sprout_agent.faces.cli.commands.sessions import prune_command

    _run(lambda: prune_command(older_than_days=older_than, dry_run=dry_run, as_json=as_json))
