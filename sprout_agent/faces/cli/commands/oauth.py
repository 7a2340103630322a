"""`sprout-agent mcp login NAME` and `mcp logout NAME`: the OAuth login of a remote server done outside a
session (so headless runs later find the tokens), and forgetting them."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping

import anyio

from sprout_agent.config.files import ServerConfig
from sprout_agent.core.errors import EXIT_USAGE, SproutError
from sprout_agent.faces.cli.commands.doctor import Setup
from sprout_agent.mcp.oauth.store import OAuthSetup, oauth_setup
from sprout_agent.trust.untrusted import printable


def _remote(setup: Setup, name: str) -> ServerConfig | None:
    """The remote server called `name`; None after saying why not."""
    by_name = {server.name: server for server in setup.loaded.servers}
    server = by_name.get(name)
    if server is None:
        known = ", ".join(s.name for s in setup.loaded.servers if s.remote) or "none"
        sys.stderr.write(f"sprout-agent: no server named {printable(name)} (remote servers here: {known})\n")
        return None
    if not server.remote:
        sys.stderr.write(f"sprout-agent: server {server.name} is not remote (http or sse): it has no login\n")
        return None
    return server


def login_command(setup: Setup, name: str, environ: Mapping[str, str] | None = None) -> int:
    server = _remote(setup, name)
    if server is None:
        return EXIT_USAGE
    oauth = oauth_setup(setup.data, os.environ if environ is None else environ, flow="browser")
    try:
        anyio.run(login, server, oauth)
    except (SproutError, OSError) as error:
        sys.stderr.write(f"sprout-agent: login to {server.name} failed: {printable(str(error))}\n")
        return 1
    print(f"logged in to {server.name}; its tokens are in {oauth.store.where}")
    return 0


def _to_stderr(text: str) -> None:
    sys.stderr.write(text + "\n")


async def login(server: ServerConfig, oauth: OAuthSetup, say: Callable[[str], None] = _to_stderr) -> None:
    from sprout_agent.mcp.oauth import login as oauth_login  # the SDK's auth pieces and httpx2 only for a login

    await oauth_login.login(server, oauth, say)


def logout_command(setup: Setup, name: str) -> int:
    server = _remote(setup, name)
    if server is None:
        return EXIT_USAGE
    assert server.url is not None
    store = oauth_setup(setup.data, os.environ).store
    try:
        forgotten = store.delete(server.url)
    except OSError as error:
        sys.stderr.write(f"sprout-agent: cannot forget the tokens of {server.name}: {printable(str(error))}\n")
        return 1
    print(f"logged out of {server.name}" if forgotten else f"no stored login for {server.name}")
    return 0
