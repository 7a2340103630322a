"""A Claude Code script's restrictions hold. When a run takes Claude Code's `default` mode (options.decided_mode);
what a command rule (`Bash(git:*)`) covers: for a program we know, only what its table lists (command_tables.py; each
row is tested in test_command_rules.py), so every escape found so far is refused. Table-driven, in-process: each
row's id names the failure it prevents. One run as a process: `-p --allowedTools`, as a script passes them.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sprout_agent.config.locations import Locations
from sprout_agent.config.options import SDK_MARK, Options
from sprout_agent.core.claude_rules import translate
from sprout_agent.core.messages import ToolUse
from sprout_agent.core.permission_mode import PermissionMode
from sprout_agent.core.permissions import Decision, Policy
from sprout_agent.core.protocols import ToolSpec
from sprout_agent.session.prepared import prepare
from tests.fake_anthropic import FakeAnthropic, reply, tool_use
from tests.harness import agent_env, result_text, run_agent, tool_results
from tests.stream_schema import valid_lines

pytestmark = pytest.mark.anyio


UNSET: dict[str, Any] = {"permission_mode": None}  # as the CLI passes it when no --permission-mode is given
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
            {"claude_rules": True, "permission_mode": PermissionMode.AUTO},
            {},
            "auto",
            id="an_explicit_mode_was_overruled",
        ),
        pytest.param(
            {"claude_rules": True, "input_format": "stream-json", "permission_mode": PermissionMode.BYPASS_PERMISSIONS},
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
    assert prepared.permission_mode == mode


def bash(command: str) -> tuple[ToolSpec, ToolUse]:
    return ToolSpec("dev__bash", "dev", "bash", "", {}, False), ToolUse("t", "dev__bash", {"command": command})


def nobody_asked(*rules: str) -> Policy:
    """As `claude -p` runs a script: Claude Code's default mode, its rules, nobody to ask."""
    return Policy(PermissionMode.DEFAULT, allow=translate(rules, deny=False).patterns)


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
    # Issue 39: a list of exceptions is never complete; what the table does not list is not covered.
    ("git submodule--helper foreach ./evil", "git_submodule_helper_foreach_runs_a_command"),
    ("git hook run pre-commit", "git_hook_run_runs_a_hook"),
    ("git cat-file --filters HEAD:x", "git_cat_file_filters_runs_a_filter"),
    ("git cat-file --textconv HEAD:x", "git_cat_file_textconv_runs_a_textconv_program"),
    ("git show --textconv HEAD:x", "git_show_textconv_runs_a_textconv_program"),
    ("git web--browse http://x", "git_web_browse_runs_a_browser"),
    ("git co main", "an_alias_we_cannot_see"),
    ("git log --exe=./evil", "an_abbreviation_of_a_long_option"),
    ("git status --sprout-new-option", "an_option_the_table_does_not_list"),
    ("git --help log", "git_help_runs_a_manual_viewer"),
    ("git log --help", "git_subcommand_help_runs_a_manual_viewer"),
    ("git fetch origin", "git_fetch_acts_on_another_repository_unless_a_rule_names_it"),
    ("git diff -U --ext-diff", "an_option_with_an_optional_value_never_takes_the_next_word"),
    ("git rebase -C -- -x ./evil main", "a_double_dash_taken_as_a_value_does_not_end_the_options"),
    ("git remote -v add evil ext::x", "git_remote_add_writes_config"),
    ("git config -f /tmp/x --get a.b", "git_config_reads_another_file"),
    ("git merge -s evil main", "git_merge_strategy_runs_git_merge_evil"),
    ("git commit -S -m x", "git_commit_gpg_sign_runs_gpg"),
    ("git checkout --recurse-submodules main", "git_recurse_submodules_acts_on_other_repositories"),
    ("git apply --unsafe-paths ../x.patch", "git_apply_writes_outside_the_work_tree"),
    # Attack B (issue 39's last round): git mv renames first and checks the index path after, so it moves a file the
    # model wrote into .git (a config whose core.fsmonitor every later `git status` runs) or through a link.
    ("git mv -f cfg .git/config", "git_mv_plants_a_config_in_the_git_directory"),
    ("git mv hook lnk/pre-commit", "git_mv_plants_a_hook_through_a_link_to_the_hooks_directory"),
    # ... and reads what the deny list hides where only bubblewrap hides it from commands (Landlock, --sandbox off).
    ("git diff --no-index /home/u/.ssh/id_rsa /dev/null", "git_diff_no_index_reads_a_denied_file"),
    ("git rm --pathspec-from-file=/home/u/.ssh/id_rsa", "git_pathspec_from_file_prints_a_denied_files_lines"),
    ("git commit -F /home/u/.ssh/id_rsa", "git_commit_f_makes_a_denied_file_the_message"),
    ("git blame --contents=/home/u/.ssh/id_rsa a.txt", "git_blame_contents_prints_a_denied_file"),
    ("git blame -S /home/u/.ssh/id_rsa a.txt", "git_blame_s_prints_a_denied_files_lines"),
    ("git grep -P -f /home/u/.ssh/id_rsa", "git_grep_f_prints_a_denied_files_lines"),
    ("rg -z pattern", "rg_search_zip_runs_decompressors"),
    ("make CC=./evil", "make_variable_sets_the_program_a_recipe_runs"),
    ("make --eval='x:=$(shell ./evil)'", "make_eval_runs_make_code"),
    ("make -f /tmp/evil.mk", "make_f_reads_recipes_from_another_file"),
    ("make -C /tmp/elsewhere", "make_c_runs_another_directorys_makefile"),
    ("npm run evil", "npm_run_is_covered_only_by_a_rule_naming_it"),
    ("npm install evil", "npm_install_runs_install_scripts"),
    ("npm audit fix", "npm_audit_fix_installs"),
    ("npm exec evil", "npm_exec_runs_a_package"),
    ("npm test --script-shell=./evil", "npm_script_shell_runs_a_program"),
    ("npm test -w --script-shell=./evil", "npm_reads_an_option_where_a_value_was_expected"),
    ("pip download evil", "pip_download_builds_a_source_package"),
    ("pip install --target=/home/u/.local/lib x", "pip_install_target_writes_elsewhere"),
    ("pip --python=./evil list", "pip_python_runs_another_interpreter"),
    ("python -c 'import os'", "python_c_runs_code"),
    ("python3 evil.py", "python_runs_a_script"),
    ("python -m evil", "python_m_runs_a_module_we_do_not_list"),
    ("python -I -m pip install evil", "python_m_pip_install_is_pip_install"),
    ("python -m pip list", "python_m_pip_runs_a_pip_py_in_the_working_directory"),
    ("python -m pytest -p evil", "pytest_p_loads_a_module"),
]


@pytest.mark.parametrize("command", [pytest.param(c, id=failure) for c, failure in NOT_COVERED])
async def test_a_prefix_rule_covers_only_what_its_programs_table_lists(command: str) -> None:
    rules = ("Bash(git:*)", "Bash(find:*)", "Bash(rg:*)", "Bash(make:*)", "Bash(npm:*)", "Bash(npm test:*)")
    rules += ("Bash(pip:*)", "Bash(pip install:*)", "Bash(python:*)", "Bash(python3:*)", "Bash(python -m pytest:*)")
    refusal = await nobody_asked(*rules)(*bash(command))
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
    ("Bash(git fetch:*)", "git fetch origin --prune"),
    ("Bash(git:*)", "git commit -am 'fix: the parser' --no-verify"),
    ("Bash(git:*)", "git grep -F -n needle"),  # grep's -F is fixed strings, not a file
    ("Bash(git:*)", "git stash list -p"),
    ("Bash(git:*)", "git log -5 -n3 --author 'A B' -- src"),
    ("Bash(git lfs:*)", "git lfs pull --include x"),  # a subcommand we do not list, named by the rule: its words
    ("Bash(make:*)", "make -j4 test"),
    ("Bash(npm:*)", "npm ls --all --json"),
    ("Bash(npm run test:*)", "npm run test -- --watch --anything"),  # after --: the script's arguments
    ("Bash(pip3:*)", "pip3 list --outdated"),
    ("Bash(pip install:*)", "pip install -r requirements.txt -U"),
    ("Bash(python:*)", "python -I -m pip show requests"),
    ("Bash(python -m pytest:*)", "python -m pytest -q -x -k parser tests/"),
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
    assert await Policy(PermissionMode.DEFAULT, allow=rules, ask=person)(*bash("git -c core.pager=cat log")) is None
    assert asked == ["git -c core.pager=cat log"]  # asked, not run unasked
    assert (
        await Policy(PermissionMode.AUTO, allow=rules)(*bash("git -c core.pager=cat log")) is None
    )  # auto runs anything


@pytest.mark.parametrize(
    "command", ["'rm' -rf build", 'r"m" -rf build', "ls; 'rm' -rf build", "echo 'a;b' && rm -rf build"]
)
async def test_quoting_the_program_name_does_not_escape_a_deny_rule(command: str) -> None:
    policy = Policy(PermissionMode.AUTO, deny=translate(["Bash(rm:*)"], deny=True).patterns)
    assert "denied" in (await policy(*bash(command)) or ""), command


# ---------------------------------------------------------------- as a process


def hostile_checkout(top: Path) -> None:
    """`top` as a repository with a submodule and a pre-commit hook: `git submodule--helper foreach CMD` and
    `git hook run pre-commit` each run a program there (checked by running them, so the test cannot pass vacuously)."""
    run = functools.partial(subprocess.run, check=True, capture_output=True, timeout=30)
    ident = ["-c", "user.name=t", "-c", "user.email=t@t", "-c", "protocol.file.allow=always"]
    for repo in (top / "upstream", top):
        run(["git", "init", "-q", str(repo)])
        run(["git", *ident, "-C", str(repo), "commit", "-q", "--allow-empty", "-m", "start"])
    run(["git", *ident, "-C", str(top), "submodule", "add", "-q", "./upstream", "sub"])
    hook = top / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text("#!/bin/sh\ntouch made-by-hook\n")
    hook.chmod(0o755)
    run(["git", "-C", str(top), "submodule--helper", "foreach", "touch", "../helper-ran"])
    run(["git", "-C", str(top), "hook", "run", "pre-commit"])
    assert (top / "helper-ran").exists() and (top / "made-by-hook").exists()
    (top / "helper-ran").unlink()
    (top / "made-by-hook").unlink()


@pytest.mark.e2e
def test_claude_p_with_allowed_tools_denies_what_no_rule_allows_and_lists_it_in_permission_denials(
    tmp_path: Path,
) -> None:
    """claude-code-action's way of restricting the agent: `-p --allowedTools …` and no --permission-mode. Under
    `Bash(git:*)` the escapes of issue 39 (`submodule--helper foreach`, `hook run`) are refused like `-c`."""
    hostile_checkout(tmp_path)
    calls = {
        "t_status": {"command": "git status --short"},
        "t_config": {"command": "git -c core.pager=./evil log"},
        "t_helper": {"command": "git submodule--helper foreach touch ../helper-ran"},
        "t_hook": {"command": "git hook run pre-commit"},
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
    denied = ["t_config", "t_helper", "t_hook", "t_touch", "t_write"]
    assert [d["tool_use_id"] for d in result["permission_denials"]] == denied
    assert [d["tool_name"] for d in result["permission_denials"]] == ["Bash"] * 4 + ["Write"]
    assert [d["tool_input"] for d in result["permission_denials"]] == [calls[i] for i in denied]
    made = ("made-by-bash", "made-by-write.txt", "helper-ran", "made-by-hook")
    assert [name for name in made if (tmp_path / name).exists()] == []
    results = {r["tool_use_id"]: (bool(r.get("is_error")), result_text(r)) for r in tool_results(fake.requests[1].body)}
    assert not results["t_status"][0] and "?? " in results["t_status"][1]  # covered: it ran
    assert all(results[i][0] and results[i][1].startswith("not approved") for i in denied)
    assert "'-c' makes git run a program" in results["t_config"][1]
    assert "'submodule--helper' is not a git subcommand" in results["t_helper"][1]


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


def _plant(directory: Path, name: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    planted = directory / name
    planted.write_text("#!/bin/sh\necho PLANTED-RAN\n")
    planted.chmod(0o755)


def _real_git_dir() -> str:
    found = shutil.which("git")
    assert found is not None
    return os.path.dirname(found)


@pytest.mark.parametrize("path_entry", [".venv/bin", "", "."], ids=["activated_venv", "empty_entry", "dot"])
async def test_a_rule_does_not_cover_a_program_the_model_planted_where_path_finds_it_first(
    tmp_path: Path, path_entry: str
) -> None:
    """Attack: the model overwrites `.venv/bin/git` (an activated venv in the working directory is on PATH first),
    and `Bash(git:*)` would run it unasked as `git status`. A rule for a program we know covers it only when PATH
    finds it outside what the model can write; any other program's rule already lets the model's code run."""
    from sprout_agent.trust import program_lookup

    trusted = program_lookup.outside((str(tmp_path),), {"PATH": f"{path_entry}:{_real_git_dir()}"}, str(tmp_path))
    policy = Policy(PermissionMode.DEFAULT, allow=translate(["Bash(git:*)", "Bash(git log)"], deny=False).patterns,
                    program_trusted=trusted)  # fmt: skip
    assert await policy(*bash("git status")) is None  # nothing planted yet: the real git
    _plant(tmp_path / path_entry, "git")
    for command in ("git status", "git log"):  # a prefix rule and an exact one
        refusal = await policy(*bash(command))
        assert refusal is not None and "PATH finds 'git' in a directory the model can write" in refusal, command


def test_a_sessions_rules_hold_to_the_program_its_commands_path_finds(tmp_path: Path) -> None:
    """The same check as a session builds it: the commands' PATH, the working directory a writable root."""
    environ = {"PATH": f"{tmp_path}/.venv/bin:{_real_git_dir()}"}
    prepared = prepare(Options("q", cwd=tmp_path), Locations.nowhere(), agent_env(tmp_path, None, environ))
    assert prepared.program_trusted("git")
    _plant(tmp_path / ".venv" / "bin", "git")
    assert not prepared.program_trusted("git")
