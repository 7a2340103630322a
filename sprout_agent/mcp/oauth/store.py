"""Where OAuth tokens and client registrations of remote MCP servers are kept: one record per canonical server
URL, in the OS keyring when a usable one exists, else a 0600 file in the user data directory.

The key is the server's URL, never a name or path a config file chooses: a repository's `.mcp.json` can make
its server use a token only by naming the very URL the token was issued for (and only after consent).
Nothing here logs: records hold bearer tokens and client secrets.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast

from sprout_agent.trust.env_flags import env_flag

_log = logging.getLogger(__name__)  # the -v log: why the keyring was passed over

SERVICE = "sprout-agent MCP OAuth"
FILE_NAME = "mcp-oauth.json"
_DEFAULT_PORTS = {"http": 80, "https": 443}


class TokenStore(Protocol):
    """Records (plain JSON objects) keyed by canonical server URL."""

    @property
    def where(self) -> str:  # for messages: "the OS keyring" or the file's path
        ...

    def load(self, url: str) -> dict[str, Any] | None: ...
    def save(self, url: str, record: dict[str, Any]) -> None: ...
    def delete(self, url: str) -> bool: ...


@dataclass(frozen=True, slots=True)
class OAuthSetup:
    """What the remote transport needs to authorize: the store, and whether it may run the authorization flow.

    `flow` is "stored" (use and refresh stored tokens only: a start-up, a headless run), "browser" (`mcp login`,
    the REPL's `/login`) or "test" (SPROUT_AGENT_OAUTH_TEST_REDIRECT=1: the flow without a browser).
    """

    store: TokenStore
    flow: str = "stored"
    open_browser: bool = True  # False: print the URL only (tests; a machine without a browser)


TEST_REDIRECT_ENV = "SPROUT_AGENT_OAUTH_TEST_REDIRECT"


def oauth_setup(data: Path | None, environ: Mapping[str, str], flow: str = "stored") -> OAuthSetup:
    """The user's token store; with SPROUT_AGENT_OAUTH_TEST_REDIRECT=1 (tests only) the flow runs without a browser."""
    return OAuthSetup(UserTokens(data), "test" if env_flag(environ, TEST_REDIRECT_ENV) else flow)


def canonical(url: str) -> str:
    """The key for a server URL: scheme and host lower-cased, the default port and the fragment dropped."""
    parts = urllib.parse.urlsplit(url.strip())
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    netloc = host if port is None or port == _DEFAULT_PORTS.get(scheme) else f"{host}:{port}"
    return urllib.parse.urlunsplit((scheme, netloc, parts.path or "/", parts.query, ""))


class FileTokens:
    """Every record in one JSON file, mode 0600 in a 0700 directory, replaced atomically on each write."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.where = str(path)

    def _all(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return cast(dict[str, Any], data) if isinstance(data, dict) else {}

    def load(self, url: str) -> dict[str, Any] | None:
        record = self._all().get(canonical(url))
        return cast(dict[str, Any], record) if isinstance(record, dict) else None

    def save(self, url: str, record: dict[str, Any]) -> None:
        records = self._all()
        records[canonical(url)] = record
        self._write(records)

    def delete(self, url: str) -> bool:
        records = self._all()
        if records.pop(canonical(url), None) is None:
            return False
        self._write(records)
        return True

    def _write(self, records: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        # mkstemp creates the file 0600, so the tokens are never readable by others, not even for a moment.
        fd, temp = tempfile.mkstemp(prefix=".oauth-", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(records, out)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise


class KeyringTokens:
    """One keyring entry per server URL; when the keyring fails (locked, its service gone), the file."""

    def __init__(self, keyring: Any, fallback: FileTokens | None) -> None:
        self._keyring = keyring
        self._fallback = fallback
        self.where = "the OS keyring"

    def load(self, url: str) -> dict[str, Any] | None:
        try:
            text = self._keyring.get_password(SERVICE, canonical(url))
        except Exception as error:  # keyring backends raise their own types: any failure means "not there"
            _log.warning("OAuth tokens: the OS keyring could not be read (%s: %s)", type(error).__name__, error)
            return self._fallback.load(url) if self._fallback is not None else None
        try:
            record = json.loads(text) if isinstance(text, str) else None
        except ValueError:
            return None
        return cast(dict[str, Any], record) if isinstance(record, dict) else None

    def save(self, url: str, record: dict[str, Any]) -> None:
        try:
            self._keyring.set_password(SERVICE, canonical(url), json.dumps(record))
        except Exception as error:
            if self._fallback is None:
                raise
            _log.warning("OAuth tokens: the OS keyring refused them (%s: %s)", type(error).__name__, error)
            self._fallback.save(url, record)
            # Said wherever `where` is shown (after a login): the user must not believe they are in the keyring.
            self.where = f"{self._fallback.where} (the OS keyring refused them: {type(error).__name__})"

    def delete(self, url: str) -> bool:
        deleted = False
        try:
            self._keyring.delete_password(SERVICE, canonical(url))
            deleted = True
        except Exception as error:  # keyring raises PasswordDeleteError for a missing entry
            _log.info("OAuth tokens: nothing deleted from the OS keyring (%s: %s)", type(error).__name__, error)
        if self._fallback is not None:
            deleted = self._fallback.delete(url) or deleted
        return deleted


class UserTokens:
    """The OS keyring when one is usable, else the 0600 file in `data`; chosen at first use (keyring's backend
    discovery costs time and may talk to D-Bus: only a run with a remote server pays it, in a thread).

    PYTHON_KEYRING_BACKEND=keyring.backends.fail.Keyring (keyring's own variable) forces the file.
    """

    def __init__(self, data: Path | None) -> None:
        self._data = data
        self._chosen: FileTokens | KeyringTokens | None = None

    def _store(self) -> FileTokens | KeyringTokens:
        if self._chosen is None:
            fallback = FileTokens(self._data / FILE_NAME) if self._data is not None else None
            backend = _usable_keyring()
            if backend is not None:
                self._chosen = KeyringTokens(backend, fallback)
            elif fallback is not None:
                self._chosen = fallback
            else:
                raise OSError("no OS keyring and no user data directory: tokens cannot be stored")
        return self._chosen

    @property
    def where(self) -> str:
        return self._store().where

    def load(self, url: str) -> dict[str, Any] | None:
        return self._store().load(url)

    def save(self, url: str, record: dict[str, Any]) -> None:
        self._store().save(url, record)

    def delete(self, url: str) -> bool:
        return self._store().delete(url)


def _usable_keyring() -> Any:
    """The keyring backend, or None for the ones that store nothing ("fail" and "null": no keyring service)."""
    try:
        import keyring
        from keyring.backends import fail, null
    except Exception as error:  # a broken install or a backend that fails to import: the file still works
        _log.warning("OAuth tokens: no OS keyring (%s: %s); a private file holds them", type(error).__name__, error)
        return None
    try:
        backend: Any = keyring.get_keyring()
        priority = float(backend.priority)
    except Exception as error:
        _log.warning("OAuth tokens: the OS keyring is unusable (%s: %s)", type(error).__name__, error)
        return None
    if isinstance(backend, (fail.Keyring, null.Keyring)) or priority <= 0:
        return None
    return backend
