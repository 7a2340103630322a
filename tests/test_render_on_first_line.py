"""A `-p` run's renderer makes its rich console at the first line it prints (faces/terminal/render.py), not when it
is made: what a run reports before its first request prints nothing, and the first line still reaches stderr."""

from __future__ import annotations

import io

import pytest

from sprout_agent.core.events import ModelWaiting, Notice
from sprout_agent.faces.terminal.render import TerminalRenderer


def test_a_quiet_run_makes_no_console_until_it_prints_and_then_prints_the_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    renderer = TerminalRenderer(interactive=False, verbose=False, stdout=io.StringIO(), answers=io.StringIO())
    renderer(ModelWaiting(1, 100))
    assert "err" not in vars(renderer) and "out" not in vars(renderer)
    renderer(Notice("config files read: none", "warning"))
    assert "err" in vars(renderer)
    assert "config files read: none" in capsys.readouterr().err
