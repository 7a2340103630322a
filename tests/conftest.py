"""Shared pytest fixtures; shared helpers are in tests/harness.py."""

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.bounds import bounded


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A fresh working directory for a built-in tool server, symlinks resolved."""
    work = tmp_path / "work"
    work.mkdir()
    return work.resolve()


def _timeout(config: pytest.Config) -> float:
    """pytest-timeout's per-test timeout as configured: --timeout, else PYTEST_TIMEOUT, else the ini's `timeout`."""
    for raw in (config.getoption("timeout", None), os.environ.get("PYTEST_TIMEOUT"), config.getini("timeout")):
        if raw not in (None, ""):
            return float(raw)
    return 0.0


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    """The per-test timeout is a bound like any other: it scales with the load when the test starts
    (tests/bounds.py). Before pytest-timeout reads it; a test's own `timeout` mark is left as written."""
    if item.get_closest_marker("timeout") is None and (seconds := _timeout(item.config)) > 0:
        item.add_marker(pytest.mark.timeout(bounded(seconds)))
    yield
