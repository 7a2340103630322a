"""A server's question in the terminal: the small form its schema asks for (pre-filled with its defaults,
required fields marked, each answer checked as it is typed), a URL to open only with consent, and the
sampling request to approve. Everything the server wrote is shown escaped (sprout_agent/trust/untrusted.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from rich.console import Group
from rich.text import Text

from sprout_agent.faces.terminal.ask import Choice, choose, read_line
from sprout_agent.faces.terminal.render import TerminalRenderer
from sprout_agent.mcp import elicitation as el
from sprout_agent.mcp.sampling import SamplingRequest
from sprout_agent.trust.untrusted import printable

MESSAGE_CHARS = 600
URL_CHARS = 400

# Reads one line, pre-filled with `default`; None when the person gave up (Ctrl-C, Ctrl-D).
ReadLine = Callable[[str, str], Awaitable[str | None]]


async def ask_elicitation(renderer: TerminalRenderer, question: el.Question) -> el.Answer:
    renderer.pause()  # the live region would draw over the question
    if isinstance(question, el.UrlQuestion):
        return await _ask_url(renderer, question)
    renderer.show(form_view(question))
    picked = await choose(
        [Choice("f", "fill in the form", "fill"), Choice("d", "decline", "decline")],
        escape="cancel",
        escape_label="cancel",
    )
    if picked != "fill":
        renderer.say(f"  → {'declined' if picked == 'decline' else 'cancelled'}", "dim")
        return el.Answer("decline" if picked == "decline" else "cancel", why="you answered")
    content = await fill(question.form, read_line, renderer.say)
    if content is None:
        return el.Answer("cancel", why="you left the form")
    return el.Answer("accept", content, why="you filled in the form")


def form_view(question: el.FormQuestion) -> Group:
    head = Text(f"\nMCP server '{printable(question.server)}' asks:", style="bold")
    parts = [head, Text(printable(question.message, MESSAGE_CHARS))]
    for f in question.form.fields:
        parts.append(Text(f"  {field_label(f)}", style="bright_black"))
    parts.append(Text("  (* required)", style="dim"))
    return Group(*parts)


def field_label(f: el.Field) -> str:
    """`name*: the title (kind: options)`, escaped: every part but the kind comes from the server."""
    mark = "*" if f.required else ""
    about = " — ".join(printable(part, 200) for part in (f.title, f.description) if part)
    kind = f.kind
    if f.options:
        shown = f.labels or f.options
        kind = f"{'one of' if f.kind == 'enum' else 'some of (comma-separated)'}: " + ", ".join(
            f"{n}. {printable(o, 80)}" for n, o in enumerate(shown, 1)
        )
    return f"{printable(f.name, 80)}{mark}{': ' + about if about else ''} ({kind})"


def default_text(f: el.Field) -> str:
    value = f.default
    if value is None:
        return ""
    if isinstance(value, bool):
        return "y" if value else "n"
    if isinstance(value, list):
        return ", ".join(value)
    return str(value)


async def fill(form: el.Form, read: ReadLine, say: Callable[[str, str], None]) -> dict[str, el.Value] | None:
    """Asks each field in turn until its answer passes the field's checks; an empty optional field is left out.
    None when the person gives up."""
    content: dict[str, el.Value] = {}
    for f in form.fields:
        while True:
            line = await read(f"{printable(f.name, 80)}{'*' if f.required else ''} › ", default_text(f))
            if line is None:
                return None
            if not line.strip():
                if not f.required:
                    break
                say(f"  {printable(f.name, 80)}: required", "yellow")
                continue
            value = el.parse_value(f, line)
            if not el.is_bad(value):
                content[f.name] = value
                break
            say(f"  {printable(f.name, 80)}: {str(value)[1:]}", "yellow")
    return content


async def _ask_url(renderer: TerminalRenderer, question: el.UrlQuestion) -> el.Answer:
    renderer.show(
        Group(
            Text(f"\nMCP server '{printable(question.server)}' asks you to open a page:", style="bold"),
            Text(printable(question.message, MESSAGE_CHARS)),
            Text(f"  {printable(question.url, URL_CHARS)}", style="cyan"),
        )
    )
    picked = await choose(
        [Choice("o", "open it in the browser", "open"), Choice("d", "decline", "decline")],
        escape="cancel",
        escape_label="cancel",
    )
    if picked != "open":
        return el.Answer("decline" if picked == "decline" else "cancel", why="you answered")
    import webbrowser  # only now: nothing opens without this consent

    opened = question.url.startswith(("https://", "http://")) and webbrowser.open(question.url)
    renderer.say("  → opened in the browser" if opened else "  → could not open it: copy the address above", "dim")
    return el.Answer("accept", why="you opened the page" if opened else "you agreed to open the page")


async def approve_sampling(renderer: TerminalRenderer, request: SamplingRequest) -> bool:
    renderer.pause()
    renderer.show(
        Group(
            Text(f"\nMCP server '{printable(request.server)}' asks to use the model (billed to you):", style="bold"),
            Text(f"  {printable(request.summary(), MESSAGE_CHARS)}", style="bright_black"),
            Text(f"  up to {request.max_tokens} tokens out, no tools", style="bright_black"),
        )
    )
    picked = await choose([Choice("y", "yes, run it", "yes"), Choice("n", "no", "no")], escape="no")
    renderer.say(f"  → {'approved' if picked == 'yes' else 'refused'}", "dim")
    return picked == "yes"
