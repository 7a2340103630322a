"""The "todo" MCP server: a per-session todo list, and the `_Stop`/`_PostCompact` hooks that use it.

Run as `python -m sprout_agent.tools.todo` (stdio). The list lives in the server process, so it lasts
exactly as long as the agent session that started it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sprout_agent.tools._server import Args, Report, ToolError, ToolOutput, ToolSpec, build_server, serve_stdio
from sprout_agent.trust.secrecy import harden

if TYPE_CHECKING:  # serving imports mcp; listing (`announce`) does not
    from mcp.server.lowlevel import Server

NAME = "todo"
VERSION = "0.1.0"
STATUSES = ("pending", "in_progress", "completed")
MARKS = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}
MAX_ITEMS = 100
MAX_CONTENT_CHARS = 500

TODO_WRITE = """Replace this session's todo list (send every item). For multi-step tasks: plan the steps, mark one \
in_progress while on it, each completed once done; activeForm says what is being done ("Running the tests"). \
Pending or in_progress items are put to you again when you try to stop."""

TODO_READ = "This session's todo list."

STOP = "Hook: objects to stopping while todo items are pending or in_progress (empty result: no objection)."
POST_COMPACT = "Hook: returns the todo list after the conversation was compacted, so it is not lost."

ITEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "content": {"type": "string", "minLength": 1, "maxLength": MAX_CONTENT_CHARS},
        "status": {"type": "string", "enum": list(STATUSES)},
        "id": {"type": "string"},
        # Claude Code's TodoWrite shape: what is being done, shown while the item is in progress
        "activeForm": {"type": "string"},
    },
    "required": ["content", "status"],
    "additionalProperties": False,
}


@dataclass(frozen=True)
class Item:
    content: str
    status: str
    id: str
    active_form: str = ""


def _parse_item(index: int, raw: object) -> Item:
    if not isinstance(raw, dict):
        raise ToolError(f"todos[{index}] must be an object with content and status")
    fields: dict[str, object] = {str(k): v for k, v in raw.items()}  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    unknown = sorted(set(fields) - {"content", "status", "id", "activeForm"})
    if unknown:
        raise ToolError(f"todos[{index}] has unknown field(s): {', '.join(unknown)}")
    content, status, item_id = fields.get("content"), fields.get("status"), fields.get("id", str(index + 1))
    if not isinstance(content, str) or not content.strip():
        raise ToolError(f"todos[{index}].content must be a non-empty string")
    if len(content) > MAX_CONTENT_CHARS:
        raise ToolError(f"todos[{index}].content is longer than {MAX_CONTENT_CHARS} characters")
    if status not in STATUSES:
        raise ToolError(f"todos[{index}].status must be one of {', '.join(STATUSES)}, not {status!r}")
    if not isinstance(item_id, str):
        raise ToolError(f"todos[{index}].id must be a string")
    active_form = fields.get("activeForm", "")
    if not isinstance(active_form, str) or len(active_form) > MAX_CONTENT_CHARS:
        raise ToolError(f"todos[{index}].activeForm must be a string of at most {MAX_CONTENT_CHARS} characters")
    return Item(content.strip(), str(status), item_id, active_form.strip())


def render(items: list[Item]) -> str:
    return "\n".join(f"{MARKS[i.status]} {i.content} ({_state(i)}, id {i.id})" for i in items)


def _state(item: Item) -> str:
    return f"{item.status}: {item.active_form}" if item.status == "in_progress" and item.active_form else item.status


@dataclass
class TodoList:
    """One session's list and the tools over it."""

    items: list[Item] = field(default_factory=list[Item])

    async def write(self, args: Args, report: Report | None = None) -> ToolOutput:
        raw: list[object] = args["todos"]
        if len(raw) > MAX_ITEMS:
            raise ToolError(f"at most {MAX_ITEMS} todo items")
        items = [_parse_item(i, item) for i, item in enumerate(raw)]
        ids = [i.id for i in items]
        if len(set(ids)) != len(ids):
            raise ToolError("todo ids must be unique")
        self.items = items
        if not items:
            return "Todo list cleared."
        done = sum(i.status == "completed" for i in items)
        return f"Todo list updated ({done}/{len(items)} completed):\n{render(items)}"

    async def read(self, args: Args, report: Report | None = None) -> ToolOutput:
        return render(self.items) if self.items else "The todo list is empty."

    async def stop(self, args: Args, report: Report | None = None) -> ToolOutput:
        open_items = [i for i in self.items if i.status != "completed"]
        if not open_items:
            return ""
        listed = "\n".join(f"- {i.content} ({i.status})" for i in open_items)
        return (
            f"You have open todo items:\n{listed}\n"
            "Finish them (and mark them completed with todo_write), or update the list if they no "
            "longer apply, before stopping."
        )

    async def post_compact(self, args: Args, report: Report | None = None) -> ToolOutput:
        if not self.items:
            return ""
        return f"Your todo list (kept across compaction):\n{render(self.items)}"

    def specs(self) -> list[ToolSpec]:
        read_only = {"read_only_hint": True, "destructive_hint": False, "idempotent_hint": True,
                     "open_world_hint": False}  # fmt: skip
        todos = {"type": "array", "items": ITEM_SCHEMA, "maxItems": MAX_ITEMS}
        return [
            # read-only too: it changes only this session's plan, never files or processes, so
            # --permission-mode read-only lets the model plan (as Claude Code's plan mode allows TodoWrite).
            ToolSpec("todo_write", TODO_WRITE, {"todos": todos}, self.write, ("todos",), read_only),
            ToolSpec("todo_read", TODO_READ, {}, self.read, (), read_only),
            ToolSpec("_Stop", STOP, {}, self.stop, (), read_only, open_args=True),
            ToolSpec("_PostCompact", POST_COMPACT, {}, self.post_compact, (), read_only, open_args=True),
        ]  # fmt: skip


def create_server() -> Server[Any]:
    """A fresh todo server with an empty list; serve over stdio or pass to `mcp.Client`."""
    return build_server(NAME, VERSION, TodoList().specs())


def create_server_in(cwd: str, env: Mapping[str, str] | None = None) -> Server[Any]:
    """The todo list needs no working directory nor settings; the signature matches the other built-ins."""
    del cwd, env
    return create_server()


def announce(cwd: str, env: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """What `create_server_in` lists (`tools/list`), without the mcp SDK: offered before the server starts."""
    del cwd, env
    return [spec.listed() for spec in TodoList().specs()]


def main() -> None:
    harden()  # standalone, a client may have given us its whole environment; our commands are our children
    serve_stdio(create_server())


if __name__ == "__main__":
    main()
