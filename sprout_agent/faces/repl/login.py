"""The REPL's side of OAuth: after start-up, one line per server that needs a login offering `/login NAME`;
`/login NAME` runs the browser flow, then starts that server in the running pool.

An offer to type, not a modal question: the prompt stays free (a person may already be typing the first
prompt while the servers start), and Ctrl-C or Esc ends a login like any command.
"""

from __future__ import annotations

from collections.abc import Sequence

from sprout_agent.core.errors import SproutError
from sprout_agent.faces.terminal.render import TerminalRenderer
from sprout_agent.mcp.oauth.store import oauth_setup
from sprout_agent.mcp.state import ServerStatus
from sprout_agent.session.runtime import Runtime
from sprout_agent.trust.untrusted import printable


def login_offers(statuses: Sequence[ServerStatus]) -> list[str]:
    return [f"MCP server '{s.name}' needs login: /login {s.name} opens the browser" for s in statuses if _needs(s)]


def _needs(status: ServerStatus) -> bool:
    return status.state == "needs login"


async def login_command(runtime: Runtime, renderer: TerminalRenderer, argument: str) -> None:
    prepared = runtime.prepared
    by_name = {server.name: server for server in prepared.loaded.servers if server.remote}
    waiting = [s.name for s in runtime.pool.status() if _needs(s)]
    server = by_name.get(argument)
    if server is None:
        listed = ", ".join(waiting) or "none"
        renderer.say(f"/login NAME: a remote server's name (waiting for a login: {listed})", "yellow")
        return
    from sprout_agent.mcp.oauth.login import login  # the SDK's auth pieces and httpx2 only for a login

    oauth = oauth_setup(prepared.locations.data, prepared.inherited_env, flow="browser")
    renderer.say(f"logging in to {server.name}: finish in the browser (Esc cancels)", "dim")
    try:
        await login(server, oauth, lambda text: renderer.say(text, "dim"))
    except (SproutError, OSError) as error:
        renderer.say(f"login to {server.name} failed: {printable(str(error))}", "red")
        return
    status = await runtime.pool.restart(server.name)
    if status is None or status.state == "running":
        count = f" ({status.tool_count} tools)" if status is not None else ""
        renderer.say(f"logged in to {server.name}{count}", "green")
    else:
        renderer.say(f"logged in, but {server.name} did not start: {printable(status.last_error)}", "red")
