"""Shared pytest fixtures; shared helpers are in tests/harness.py.

No test module imports anthropic, mcp or acp at module level, directly or through our modules that do: collecting
the suite (each xdist worker collects all of it before its first test, e2e modules included) stays cheap, and a test
that needs one of them imports it inside the test or its helper. `pytest_collection_finish` holds that rule.
"""

import gc
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.bounds import bounded
from tests.harness import end_warm_zygotes

# Agents the tests start run cold (each in its own process, no zygote left behind) whatever environment they
# inherit, unless SPROUT_TEST_WARM_DIR names the runtime directory of a warm interpreter for the run (scripts/test
# sets it unless SPROUT_TEST_COLD=1; tests/harness.py agent_env); tests/test_warm.py uses runtime directories of
# its own.
os.environ["SPROUT_AGENT_WARM"] = "0"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A fresh working directory for a built-in tool server, symlinks resolved."""
    work = tmp_path / "work"
    work.mkdir()
    return work.resolve()


SDKS = ("anthropic", "mcp", "acp")  # ~0.9 s, ~0.35 s and ~0.35 s of imports


def pytest_collection_finish(session: pytest.Session) -> None:
    if loaded := [name for name in SDKS if name in sys.modules]:
        raise pytest.UsageError(
            f"collecting the tests imported {', '.join(loaded)}: a test module imports it (or one of our modules "
            "that does) at module level; import it inside the test or helper that uses it (tests/conftest.py)"
        )


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


def pytest_sessionfinish(session: pytest.Session) -> None:
    """With SPROUT_TEST_WARM_DIR (the suite through the warm interpreter: docs/testing.md), the run ends the warm
    interpreters it started there, once every worker is done.

    Every process of the run then freezes what it holds: the interpreter's last collection at exit would otherwise
    walk every object the tests left (the SDKs' types, a worker's hundreds of sessions), about 0.8 s of CPU per
    process for a third of the suite, to free memory the exit frees anyway."""
    warm_dir = os.environ.get("SPROUT_TEST_WARM_DIR")
    if warm_dir and not hasattr(session.config, "workerinput"):
        end_warm_zygotes(Path(warm_dir))
    gc.freeze()
