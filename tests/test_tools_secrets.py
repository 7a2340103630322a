"""The one credential filter every child environment goes through (sprout_agent/trust/secrets.py)."""

from __future__ import annotations

import pytest

from sprout_agent.trust.secrets import is_secret, name_parts, without_secrets

DROPPED = [
    ("GITHUB_PAT", "x"),
    ("STRIPE_KEY", "x"),
    ("MY_CREDENTIALS", "x"),
    ("AWS_SECRET_ACCESS_KEY", "x"),
    ("AWS_SESSION_TOKEN", "x"),
    ("NPM_AUTH", "x"),
    ("githubToken", "x"),
    ("GHTOKEN", "x"),
    ("DB_PASS", "x"),
    ("MYSQL_PWD_PASSWORD", "x"),
    ("SSH_PRIVATE", "x"),
    ("BROWSER_COOKIE", "x"),
    ("OTEL_EXPORTER_OTLP_HEADERS", "x-honeycomb-team=abc"),
    ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "authorization=Basic%20abc"),
    ("ANTHROPIC_BASE_URL", "https://api.example"),
    ("SENTRY_DSN", "https://k@sentry.example/1"),
    ("DATABASE_URL", "postgres://app:hunter2@db.example/app"),
    ("PIP_INDEX_URL", "https://user:pw@pypi.example/simple"),
    ("HTTPS_PROXY", "http://me:pw@proxy:3128"),
    ("INNOCENT", "sk-ant-api03-abc"),
    ("ALSO_INNOCENT", "ghp_abcdef0123456789"),
]
KEPT = [
    ("PATH", "/usr/bin:/bin"),
    ("PWD", "/work"),
    ("OLDPWD", "/"),
    ("HOME", "/root"),
    ("LANG", "C.UTF-8"),
    ("PYTHONPATH", "/src"),
    ("MANPATH", "/usr/share/man"),
    ("SSH_AUTH_SOCK", "/tmp/ssh-x/agent.1"),
    ("DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/user/1000/bus"),
    ("XDG_SESSION_TYPE", "x11"),
    ("GIT_ASKPASS", "/usr/lib/git-core/git-gui--askpass"),
    ("KEYBOARD_LAYOUT", "us"),
    ("TOKENIZERS_PARALLELISM", "false"),
    ("HTTPS_PROXY", "http://proxy:3128"),
    ("REPO_URL", "https://git@github.com/org/repo"),
]


@pytest.mark.parametrize(("name", "value"), DROPPED)
def test_child_environment_drops_credentials_by_name_or_value(name: str, value: str) -> None:
    assert is_secret(name, value)


@pytest.mark.parametrize(("name", "value"), KEPT)
def test_child_environment_keeps_what_tools_need(name: str, value: str) -> None:
    assert not is_secret(name, value)


def test_names_split_on_underscores_other_punctuation_and_camel_case() -> None:
    assert name_parts("githubToken") == name_parts("GITHUB-TOKEN") == name_parts("github_token") == ["GITHUB", "TOKEN"]
    assert without_secrets({"PATH": "/bin", "GITHUB_PAT": "x"}) == {"PATH": "/bin"}
