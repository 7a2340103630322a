"""OAuth for remote MCP servers, through the real pool against an OAuth-protected server in this process:
the test redirect's login, headless "needs login", refresh of an expired token, `mcp login`'s browser flow with
its localhost callback, where tokens are kept, and that they never reach events or logs."""

from __future__ import annotations

import json
import logging
import stat
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import httpx2
import pytest

from sprout_agent.config.files import ServerConfig, load_config
from sprout_agent.core.errors import ConfigError
from sprout_agent.core.events import Event
from sprout_agent.core.messages import text_of
from sprout_agent.mcp.oauth.store import FileTokens, KeyringTokens, OAuthSetup, canonical, oauth_setup
from sprout_agent.mcp.pool import ServerPool
from tests.bounds import bounded

if TYPE_CHECKING:
    from tests.oauth_server import AuthServer

pytestmark = pytest.mark.anyio


def _pool(config: ServerConfig, setup: OAuthSetup, events: list[Event]) -> ServerPool:
    return ServerPool(
        [config],
        emit=events.append,
        start_timeout=bounded(10.0),
        tool_timeout=bounded(10.0),
        result_max_bytes=100_000,
        child_env=dict,
        oauth=setup,
    )


def _config(server: AuthServer) -> ServerConfig:
    return ServerConfig("guarded", "", transport="http", url=server.url)


async def test_the_test_redirect_logs_in_with_pkce_and_resource_and_an_expired_token_is_refreshed_next_start(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from tests.oauth_server import oauth_server

    caplog.set_level(logging.DEBUG)
    store, events = FileTokens(tmp_path / "data" / "mcp-oauth.json"), list[Event]()
    async with oauth_server() as server:
        async with _pool(_config(server), OAuthSetup(store, "test"), events) as pool:
            status = pool.status()[0]
            assert status.state == "running", status
            outcome = await pool.call(pool.tools()[0], {})
            assert text_of(outcome.content) == "you are logged in"
            assert server.registrations == 1 and server.grants == ["authorization_code"]  # the server checked PKCE
            (token,) = server.tokens
        assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
        assert stat.S_IMODE(store.path.parent.stat().st_mode) == 0o700
        record = store.load(server.url)
        assert record is not None and record["tokens"]["access_token"] == token
        store.save(server.url, {**record, "expires_at": 1.0})  # long expired: the next start refreshes it
        async with _pool(_config(server), OAuthSetup(store, "stored"), events) as pool:
            assert pool.status()[0].state == "running", pool.status()[0]
        assert server.grants == ["authorization_code", "refresh_token"] and server.registrations == 1
    refreshed = store.load(server.url)
    assert refreshed is not None and refreshed["tokens"]["access_token"] != token
    shown = repr(events) + repr(pool.status()) + caplog.text
    for secret in (token, record["tokens"]["refresh_token"], refreshed["tokens"]["access_token"]):
        assert secret not in shown


async def test_a_start_without_a_stored_token_needs_login_registers_nothing_and_starts_after_a_login(
    tmp_path: Path,
) -> None:
    from sprout_agent.mcp.oauth.login import login
    from tests.oauth_server import oauth_server

    store, events = FileTokens(tmp_path / "mcp-oauth.json"), list[Event]()
    async with oauth_server() as server, _pool(_config(server), OAuthSetup(store, "stored"), events) as pool:
        status = pool.status()[0]
        assert status.state == "needs login"
        assert status.last_error == "needs login: run `sprout-agent mcp login guarded`"
        assert pool.tools() == [] and server.registrations == 0 and server.grants == []
        # What `/login guarded` does in the REPL, here with the test redirect instead of a browser.
        await login(_config(server), OAuthSetup(store, "test"), lambda _: None)
        restarted = await pool.restart("guarded")
        assert restarted is not None and restarted.state == "running" and restarted.tool_count == 1
        assert [spec.tool for spec in pool.tools()] == ["whoami"]


async def test_mcp_login_catches_the_browsers_redirect_on_localhost_then_a_headless_start_connects(
    tmp_path: Path,
) -> None:
    from sprout_agent.mcp.oauth.login import login
    from tests.oauth_server import oauth_server

    store, said, printed = FileTokens(tmp_path / "mcp-oauth.json"), list[str](), anyio.Event()

    def say(text: str) -> None:
        said.append(text)
        printed.set()

    async with oauth_server() as server:
        config = _config(server)

        async def person() -> None:
            """The browser: opens the URL printed, follows the redirect to our callback."""
            with anyio.fail_after(bounded(10)):
                await printed.wait()
            url = said[0].removeprefix("open this URL to log in: ")
            async with httpx2.AsyncClient(follow_redirects=True) as browser:
                page = await browser.get(url)
            assert page.status_code == 200 and b"Logged in." in page.content

        async with anyio.create_task_group() as group:
            group.start_soon(person)
            with anyio.fail_after(bounded(10)):
                await login(config, OAuthSetup(store, "browser", open_browser=False), say, wait=10)
        async with _pool(config, OAuthSetup(store, "stored"), []) as pool:
            assert pool.status()[0].state == "running"
        assert store.delete(server.url) and store.load(server.url) is None  # what `mcp logout` does


def test_tokens_are_keyed_by_the_canonical_url_and_the_keyring_can_be_refused(tmp_path: Path) -> None:
    assert canonical("HTTPS://Example.COM:443/mcp#frag") == "https://example.com/mcp"
    assert canonical("http://127.0.0.1:8080") == "http://127.0.0.1:8080/"
    setup = oauth_setup(tmp_path, {"SPROUT_AGENT_OAUTH_TEST_REDIRECT": "1"})
    assert setup.flow == "test" and oauth_setup(tmp_path, {}).flow == "stored"


class LockedKeyring:
    """A keyring backend whose service refuses every write (a locked collection, a D-Bus error)."""

    def set_password(self, service: str, name: str, value: str) -> None:
        raise RuntimeError("the collection is locked")

    def get_password(self, service: str, name: str) -> str | None:
        raise RuntimeError("the collection is locked")


def test_after_the_keyring_refuses_tokens_the_store_says_they_are_in_the_file(tmp_path: Path) -> None:
    store = KeyringTokens(LockedKeyring(), FileTokens(tmp_path / "tokens.json"))
    assert store.where == "the OS keyring"
    store.save("https://x.example/mcp", {"access_token": "t"})
    assert store.where.startswith(str(tmp_path / "tokens.json")) and "keyring refused them" in store.where
    assert store.load("https://x.example/mcp") == {"access_token": "t"}


def test_oauth_keys_are_read_like_claude_codes_and_the_secret_stays_out_of_reprs(tmp_path: Path) -> None:
    entry = {"type": "http", "url": "https://x.example/mcp"}
    oauth = {"clientId": "abc", "clientSecret": "${SECRET}", "callbackPort": 8765, "scopes": "read write"}
    (tmp_path / "mcp.json").write_text(json.dumps({"mcpServers": {"x": {**entry, "oauth": oauth}}}))
    (server,) = load_config([Path("mcp.json")], tmp_path, {"SECRET": "s3cret-value"}, None).servers
    assert server.oauth is not None and server.oauth.client_secret == "s3cret-value"
    assert (server.oauth.client_id, server.oauth.callback_port, server.oauth.scopes) == ("abc", 8765, "read write")
    assert "s3cret-value" not in repr(server)
    (tmp_path / "mcp.json").write_text(json.dumps({"mcpServers": {"x": {**entry, "oauth": {"clientID": "a"}}}}))
    with pytest.raises(ConfigError, match="oauth: unknown key 'clientID'"):
        load_config([Path("mcp.json")], tmp_path, {}, None)
