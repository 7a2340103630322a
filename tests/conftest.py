"""Shared pytest fixtures; shared helpers are in tests/harness.py."""

from pathlib import Path

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A fresh working directory for a built-in tool server, symlinks resolved."""
    work = tmp_path / "work"
    work.mkdir()
    return work.resolve()
