"""Boolean environment variables are read by one function with one set of spellings (trust/env_flags.py,
docs/configuration.md "Switches"): every switch, wherever it is read (the launcher, the settings, consent,
telemetry, the tool servers' workspace and sandbox, OAuth), takes the same words for on and off. In-process.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from sprout_agent.config.consent import trusted_by_environment
from sprout_agent.config.settings import Settings, sampling_allowed
from sprout_agent.core.errors import UsageError
from sprout_agent.faces.warm import place
from sprout_agent.mcp.oauth.store import oauth_setup
from sprout_agent.telemetry.enabled import content_on, telemetry_on
from sprout_agent.trust.env_flags import OFF, ON, env_flag
from sprout_agent.trust.sandbox import Policy
from sprout_agent.trust.workspace import Workspace
from tests.package_source import package_modules

PACKAGE = Path(__file__).resolve().parent.parent / "sprout_agent"
VALUE_TESTS = (ast.Eq, ast.NotEq, ast.In, ast.NotIn)  # not `is None`: whether a variable is set at all

Reader = Callable[[Mapping[str, str]], bool]
# Each switch, read where the agent reads it, with its default.
READERS: list[tuple[str, Reader, bool]] = [
    ("SPROUT_AGENT_TELEMETRY", telemetry_on, False),
    ("SPROUT_AGENT_TELEMETRY_CONTENT", content_on, False),
    ("SPROUT_AGENT_ALLOW_SAMPLING", lambda env: sampling_allowed(False, env), False),
    ("SPROUT_AGENT_TRUST_PROJECT", trusted_by_environment, False),
    ("SPROUT_AGENT_WEB", lambda env: Settings.from_env(env).web, False),
    ("SPROUT_AGENT_CHECKPOINTS", lambda env: Settings.from_env(env).checkpoints, True),
    ("SPROUT_AGENT_TOOL_HOOKS", lambda env: Settings.from_env(env).tool_hooks, False),
    ("SPROUT_DEV_SANDBOX_REQUIRED", lambda env: Policy.from_env(env, "/").required, False),
    ("SPROUT_DEV_ALLOW_OUTSIDE", lambda env: Workspace.from_environment("/", env).allow_outside, False),
    ("SPROUT_AGENT_OAUTH_TEST_REDIRECT", lambda env: oauth_setup(None, env).flow == "test", False),
]
if sys.platform.startswith("linux"):  # the warm interpreter is Linux's only
    READERS.append(("SPROUT_AGENT_WARM", lambda env: place.wanted(["-p", "q"], env, False), True))

SPELLINGS = [(word, True) for word in ON] + [(word, False) for word in OFF]
CASES = [word.upper() if i % 2 else f" {word.title()} " for i, (word, _) in enumerate(SPELLINGS)]


@pytest.mark.parametrize(("name", "read", "default"), READERS, ids=[name for name, _, _ in READERS])
def test_every_switch_takes_the_same_spellings_for_on_and_off_wherever_it_is_read(
    name: str, read: Reader, default: bool
) -> None:
    for (word, on), cased in zip(SPELLINGS, CASES, strict=True):
        assert read({name: word}) is on, word
        assert read({name: cased}) is on, cased  # any case, any surrounding blanks
    assert read({}) is default and read({name: " "}) is default


@pytest.mark.parametrize("name", ["SPROUT_AGENT_WEB", "SPROUT_AGENT_CHECKPOINTS", "SPROUT_AGENT_TOOL_HOOKS"])
def test_a_misspelt_setting_switch_is_a_usage_error_naming_the_spellings(name: str) -> None:
    with pytest.raises(UsageError, match=f"{name} must be one of 1, true, yes, on .* or 0, false, no, off"):
        Settings.from_env({name: "enabled"})


def test_any_other_value_of_a_switch_read_outside_the_settings_is_its_default() -> None:
    assert not env_flag({"X": "enabled"}, "X") and env_flag({"X": "2"}, "X", default=True)
    assert not trusted_by_environment({"SPROUT_AGENT_TRUST_PROJECT": "y"})  # a security switch fails closed


def test_no_module_reads_a_switch_by_comparing_an_environment_value_itself() -> None:
    """A second reader (`env.get(X) == "1"`, `….lower() in (…)`) would compare a lookup of the environment."""
    own = PACKAGE / "trust" / "env_flags.py"
    found: list[str] = []
    for path, tree in package_modules():
        if path == own:
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.Compare) or not any(isinstance(op, VALUE_TESTS) for op in node.ops):
                continue
            left = ast.unparse(node.left)
            if ".get(" in left and "env" in left.lower():
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {ast.unparse(node)}")
    assert found == []
