"""The permission mode is one type: every spelling (ours and Claude Code's) goes through one parser, means one thing
wherever it is given (the command line, the SDK's set_permission_mode, an editor's pick), shows as Claude Code names
it, and is defaulted by one decision. In-process: the parser, the policy and the decision, with no process.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

import pytest

from sprout_agent.config.options import SDK_MARK, Options, decided_mode
from sprout_agent.core.permission_mode import EDIT_TOOLS, PermissionMode, parse_mode
from sprout_agent.core.permissions import Policy
from sprout_agent.faces.acp import choices
from sprout_agent.faces.cli import flags
from tests.package_source import package_modules

M = PermissionMode
PACKAGE = Path(__file__).resolve().parent.parent / "sprout_agent"

# spelling → (ours: how calls are decided, tools allowed on top, Claude Code's name, the editor's listed mode)
SPELLINGS = [
    ("auto", M.AUTO, (), "bypassPermissions", "auto"),
    ("ask", M.ASK, (), "default", "ask"),
    ("read-only", M.READ_ONLY, (), "plan", "read-only"),
    ("default", M.ASK, (), "default", "ask"),
    ("acceptEdits", M.ASK, EDIT_TOOLS, "acceptEdits", "acceptEdits"),
    ("plan", M.READ_ONLY, (), "plan", "read-only"),
    ("bypassPermissions", M.AUTO, (), "bypassPermissions", "auto"),
    ("dontAsk", M.ASK, (), "dontAsk", "ask"),
]


@pytest.mark.parametrize(("spelling", "ours", "allows", "claude", "listed"), SPELLINGS)
def test_every_spelling_means_one_thing_wherever_it_is_given(
    spelling: str, ours: PermissionMode, allows: tuple[str, ...], claude: str, listed: str
) -> None:
    mode = parse_mode(spelling)
    assert (mode, mode.ours, mode.allows, mode.claude_name) == (spelling, ours, allows, claude)
    assert str(mode) == spelling and f"{mode}" == spelling  # it prints as given (the banner, a refusal)
    assert flags.checked_mode(spelling) is mode  # --permission-mode of the main command, acp and batch
    policy = Policy(M.AUTO)
    policy.set_mode(spelling)  # the SDK's set_permission_mode and the editor's picks switch through this
    assert (policy.permission_mode, policy.mode) == (mode, ours)
    assert choices.shown_mode(mode) == listed  # the editor is shown the listed mode that behaves the same
    assert decided_mode(Options(permission_mode=mode), {SDK_MARK: "1"}) is mode  # a given mode is kept


def test_the_parsers_spellings_are_the_types_and_the_help_names_them_all() -> None:
    assert [spelling for spelling, *_ in SPELLINGS] == list(PermissionMode)
    help_text = str(get_args(flags.PermissionModeOption)[1].help)
    for mode in PermissionMode:
        assert mode in help_text
    for mode, _, _ in choices.MODES:  # the editor lists only what the parser takes
        assert parse_mode(mode) is mode


@pytest.mark.parametrize("name", ["yolo", "Auto", "read_only", "bypass", "plan ", "", None, 3])
def test_an_unknown_mode_is_refused_naming_every_spelling_and_changes_nothing(name: object) -> None:
    known = "auto, ask, read-only, default, acceptEdits, plan, bypassPermissions, dontAsk"
    with pytest.raises(ValueError, match=f"unknown permission mode .* \\(known: {known}\\)"):
        parse_mode(name)
    policy = Policy(M.PLAN)
    with pytest.raises(ValueError):
        policy.set_mode(str(name))
    assert policy.permission_mode is M.PLAN and policy.mode is M.READ_ONLY


@pytest.mark.parametrize(
    ("given", "fields", "environ", "decided"),
    [
        (None, {}, {}, M.AUTO),
        (None, {"claude_rules": True}, {}, M.DEFAULT),
        (None, {"input_format": "stream-json"}, {SDK_MARK: "1"}, M.DEFAULT),
        (None, {"input_format": "text"}, {SDK_MARK: "1"}, M.AUTO),
        (None, {"permission_prompt_tool": "stdio", "input_format": "stream-json"}, {}, M.ASK),
        (M.AUTO, {"permission_prompt_tool": "stdio", "input_format": "stream-json"}, {}, M.ASK),
        (
            M.BYPASS_PERMISSIONS,
            {"permission_prompt_tool": "stdio", "input_format": "stream-json"},
            {},
            M.BYPASS_PERMISSIONS,
        ),
        (M.AUTO, {"claude_rules": True}, {SDK_MARK: "1"}, M.AUTO),
    ],
)
def test_the_mode_not_given_is_decided_once_as_claude_p_would_and_an_asking_sdk_turns_auto_into_ask(
    given: PermissionMode | None, fields: dict[str, object], environ: dict[str, str], decided: PermissionMode
) -> None:
    options = Options(permission_mode=given, **fields)  # type: ignore[arg-type]
    assert decided_mode(options, environ) is decided


def test_no_module_but_the_modes_own_spells_a_mode_name_of_claude_codes_alone() -> None:
    """A second vocabulary (a table of Claude Code's names, a validator with its own list) would spell them again:
    only core/permission_mode.py may. (auto, ask, plan, default and read-only are ordinary words elsewhere.)"""
    own = {"acceptEdits", "bypassPermissions", "dontAsk"}
    spelt: list[str] = []
    for path, tree in package_modules():
        if path.name == "permission_mode.py" and path.parent.name == "core":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value in own:
                spelt.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {node.value}")
    assert spelt == []
