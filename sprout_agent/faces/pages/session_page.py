"""A session as one self-contained HTML page (no network when viewed, no script at all): prompts, answers rendered
from Markdown, thinking collapsed, each tool call with its arguments, result, change and time, hook decisions,
compactions, the cost. A transcript is untrusted: every text is escaped, Markdown's raw HTML is not rendered, and
the page's Content-Security-Policy forbids scripts, so a hostile tool output cannot run anything in the viewer."""

from __future__ import annotations

import datetime
import json
from html import escape

from sprout_agent.faces.pages.entries import Entry, Session

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
STYLE = """
body{font:15px/1.5 system-ui,sans-serif;max-width:960px;margin:2em auto;padding:0 1em;color:#1d1d1f;background:#fff}
header{border-bottom:1px solid #ddd;margin-bottom:1.5em}h1{font-size:1.3em}.meta{color:#666;font-size:.9em}
.prompt{background:#eef4ff;border-left:4px solid #3b6fd4;padding:.6em 1em;margin:1.2em 0;white-space:pre-wrap}
.answer{margin:.8em 0}.answer pre,.answer code{background:#f4f4f4;border-radius:3px}
.answer pre{padding:.6em;overflow:auto}
details{margin:.5em 0;border:1px solid #e2e2e2;border-radius:4px;padding:.3em .7em}summary{cursor:pointer}
.tool summary b{font-family:ui-monospace,monospace}.err{border-color:#d33}.err summary{color:#b00}
pre.out{white-space:pre-wrap;word-break:break-word;max-height:30em;overflow:auto;background:#fafafa;padding:.5em}
.diff .add{color:#0a6b1f;background:#eaffea}.diff .del{color:#a11;background:#ffecec}
.hook{color:#7a3e9d;margin:.5em 0}.compaction{text-align:center;color:#888;border-top:1px dashed #bbb;margin:1.5em 0}
.thinking{color:#666;font-style:italic}.time{color:#888;font-size:.85em}
details.sub{border-left:3px solid #9bb7e8;background:#fbfcff}
"""


def session_html(session: Session) -> str:
    created = _when(session.created)
    cost = f" · cost ${session.cost_usd:.4f}" if session.cost_usd is not None else ""
    head = (
        f"<header><h1>Session {escape(session.session_id)}</h1><p class=meta>{escape(session.cwd)} · "
        f"{escape(session.model)}{' · ' + created if created else ''}{cost}</p></header>"
    )
    body = "\n".join(_entry(entry) for entry in session.entries)
    return page(f"sprout-agent session {session.session_id}", head + body)


def page(title: str, body: str, script: str = "", csp: str = CSP) -> str:
    """The document: its CSP first, so nothing in `body` can load or run anything the policy does not name."""
    tail = f"<script>{script}</script>" if script else ""
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f'<meta http-equiv="Content-Security-Policy" content="{escape(csp)}">'
        f"<meta name=viewport content='width=device-width'><title>{escape(title)}</title>"
        f"<style>{STYLE}</style></head><body>{body}{tail}</body></html>\n"
    )


def _entry(entry: Entry) -> str:
    match entry.kind:
        case "prompt":
            return f"<div class=prompt>{escape(entry.text)}</div>"
        case "answer":
            return f"<div class=answer>{markdown(entry.text)}</div>"
        case "thinking":
            return f"<details class=thinking><summary>thinking</summary>{escape(entry.text)}</details>"
        case "tool":
            return _tool(entry)
        case "hook":
            return f"<p class=hook>hook {escape(entry.name)} — {escape(entry.text)}</p>"
        case "compaction":
            return f"<p class=compaction>the conversation was compacted here ({escape(entry.text)})</p>"
        case _:
            return f"<p class=time>{escape(entry.text)}</p>"


def _tool(entry: Entry) -> str:
    time = f" <span class=time>{entry.seconds:.2f} s</span>" if entry.seconds is not None else ""
    mark = "✗" if entry.is_error else "✓"
    arguments = json.dumps(entry.arguments, indent=2, ensure_ascii=False)
    parts = [
        f"<details class='tool{' err' if entry.is_error else ''}'><summary>{mark} <b>{escape(entry.name)}</b>{time}"
        "</summary>",
        f"<pre class=out>{escape(arguments)}</pre>",
    ]
    if entry.diff:
        parts.append(f"<pre class='out diff'>{_diff(entry.diff)}</pre>")
    if (child := entry.subagent) is not None:
        steps = "\n".join(_entry(step) for step in child.entries)
        about = f"subagent {child.agent_type or '?'} ({child.session_id}) · {child.model}"
        parts.append(f"<details class=sub open><summary>{escape(about)}</summary>{steps}</details>")
    parts.append(f"<pre class=out>{escape(entry.result or '(no result recorded)')}</pre></details>")
    return "".join(parts)


def _diff(diff: str) -> str:
    lines: list[str] = []
    for line in diff.splitlines():
        kind = "add" if line.startswith("+") and not line.startswith("+++") else "del" if line.startswith("-") else ""
        lines.append(f"<span class={kind or 'ctx'}>{escape(line)}</span>")
    return "\n".join(lines)


def markdown(text: str) -> str:
    """CommonMark with tables; raw HTML in the text is shown as text, never rendered, and markdown-it refuses
    `javascript:` and the like in links."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).enable("table").render(text)


def _when(seconds: float | None) -> str:
    if seconds is None:
        return ""
    return datetime.datetime.fromtimestamp(seconds).strftime("%Y-%m-%d %H:%M")
