"""The garbage collector held off while a cold process starts (core/collection.py) is back on once the session
runs, when its start fails, and for any subcommand; one turned off by someone else stays off."""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from sprout_agent.config.locations import Locations
from sprout_agent.config.options import Options
from sprout_agent.core import collection
from sprout_agent.core.events import Event
from sprout_agent.faces.cli.app import app
from sprout_agent.faces.cli.argv import main_command
from sprout_agent.session.prepared import prepare
from sprout_agent.session.runtime import open_runtime
from tests.bounds import bounded
from tests.fake_anthropic import FakeAnthropic
from tests.harness import API_KEY


@pytest.fixture(autouse=True)
def _collector_restored() -> Iterator[None]:
    yield
    collection.resume()
    gc.enable()
    gc.unfreeze()  # what `resume` froze goes back to the collector of the test process


@pytest.mark.anyio
async def test_a_collector_held_at_start_is_back_on_once_the_session_runs(tmp_path: Path) -> None:
    with FakeAnthropic([]) as fake:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "ANTHROPIC_API_KEY": API_KEY,
            "ANTHROPIC_BASE_URL": fake.base_url,
            "SPROUT_AGENT_BUILTIN_SERVERS": "none",
            "SPROUT_AGENT_SANDBOX": "off",  # no sandbox probe: an in-process test starts no process
        }
        locations = Locations(None, tmp_path / "sessions", tmp_path / "data", None)
        prepared = prepare(Options(prompt=None, cwd=tmp_path), locations, env)
        events: list[Event] = []
        collection.hold()
        assert not gc.isenabled()
        with anyio.fail_after(bounded(30)):
            async with open_runtime(prepared, events.append):
                assert gc.isenabled()


def test_a_subcommand_runs_with_the_collector() -> None:
    command = main_command(app)
    collection.hold()
    context = command.make_context("sprout-agent", ["-p", "hi"])
    assert not gc.isenabled()  # a prompt is parsed, still starting
    context = command.make_context("sprout-agent", ["sessions"])
    command.resolve_command(context, ["sessions"])
    assert gc.isenabled()


def test_a_collector_someone_else_turned_off_stays_off() -> None:
    gc.disable()
    collection.hold()
    collection.resume()
    assert not gc.isenabled()
