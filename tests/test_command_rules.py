"""What a `Bash(prog:*)` rule covers for a program we know (core/command_tables.py): one test per table row (what it
lists is covered, what it does not list is not, a row a rule must name is not covered by the program's rule), the
tables read against git's own `-h` and real git (a value the table takes as the next word, git takes too), and the
generated docs page against the tables. The attacks, through the permission policy, are in test_claude_rules.py.
"""

from __future__ import annotations

import os
import re
import runpy
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from sprout_agent.core.command_rules import Command, Program, uncovered
from sprout_agent.core.command_table_git import DIFF, GIT, LOG
from sprout_agent.core.command_tables import PROGRAMS, program_for

ROOT = Path(__file__).resolve().parent.parent


def rows() -> Iterator[tuple[Program, tuple[str, ...], Command]]:
    for name, program in PROGRAMS.items():
        if name == program.name:
            if program.bare is not None:
                yield program, (), program.bare
            yield from ((program, key, command) for key, command in program.commands.items())


ROWS = [pytest.param(p, k, c, id=" ".join((p.name, *k))) for p, k, c in rows()]


def listed(program: Program, key: tuple[str, ...], command: Command) -> list[str]:
    """A command giving every option the row lists (a value after each that takes one) and an argument."""
    argv = [program.name, *sorted(command.after)[:1], *key]
    for name, kind in command.options.allowed.items():
        argv += [name, "v"] if kind == "=" else [name]
    if command.then is not None:  # `python -m pip` goes on as pip's table
        return [*argv, "list"]
    return argv + (["x"] if re.fullmatch(command.args, "x") else [])


def rule_length(key: tuple[str, ...], command: Command) -> int:
    """How many words the rule that covers the row names: `git` or, for a row a rule must name, `git push`."""
    return 1 + len(key) if command.named_only else 1


@pytest.mark.parametrize(("program", "key", "command"), ROWS)
def test_every_option_a_row_lists_is_covered_by_its_rule(program: Program, key: tuple[str, ...], command: Command):
    argv = listed(program, key, command)
    assert uncovered(program, argv, rule_length(key, command)) is None, argv


@pytest.mark.parametrize(("program", "key", "command"), ROWS)
def test_an_option_a_row_does_not_list_is_not_covered(program: Program, key: tuple[str, ...], command: Command):
    argv = [*listed(program, key, command)[: len(command.after) + 1 + len(key)], "--sprout-not-listed"]
    why = uncovered(program, argv, rule_length(key, command))
    assert why is not None and why.startswith("'--sprout-not-listed'"), why


@pytest.mark.parametrize(("program", "key", "command"), ROWS)
def test_an_option_a_row_knows_and_refuses_is_not_covered_and_says_why(
    program: Program, key: tuple[str, ...], command: Command
):
    for name, (kind, reason) in command.options.refused.items():
        argv = [program.name, *sorted(command.after)[:1], *key, name, *(["v"] if kind == "=" else [])]
        assert uncovered(program, argv, rule_length(key, command)) == f"{name!r} {reason}", argv


@pytest.mark.parametrize(("program", "key", "command"), [r for r in ROWS if r.values[2].named_only])  # type: ignore[union-attr]
def test_a_row_a_rule_must_name_is_not_covered_by_the_programs_rule(
    program: Program, key: tuple[str, ...], command: Command
):
    why = uncovered(program, [program.name, *key], 1)
    assert why is not None and "covered only by a rule that names it" in why, why


@pytest.mark.parametrize("word", ["git", "/usr/bin/git", "python3.12", "pip3", "python", "gmake"])
def test_a_program_is_known_by_its_name_whatever_its_path_or_version(word: str) -> None:
    assert program_for(word) is not None


def test_a_program_not_in_the_tables_is_matched_on_its_words_alone() -> None:
    assert program_for("sed") is None and program_for("gitx") is None


def test_a_rule_that_names_a_subcommand_we_do_not_know_covers_it_on_its_words_alone() -> None:
    assert uncovered(GIT, ["git", "lfs", "pull", "--include", "x"], 2) is None
    assert uncovered(GIT, ["git", "lfs", "pull"], 1) is not None


def test_the_words_of_the_rule_are_the_users_even_an_option_we_refuse() -> None:
    argv = ["git", "-C", "sub", "status", "--short"]
    assert uncovered(GIT, argv, 4) is None
    assert uncovered(GIT, [*argv[:4], "--exec"], 4) is not None


@pytest.mark.e2e
def test_python_m_pip_runs_a_pip_py_in_the_working_directory_so_it_is_covered_only_isolated(tmp_path: Path) -> None:
    (tmp_path / "pip.py").write_text("open('ran', 'w').close()\n")
    for flags, runs in (([], True), (["-I"], False)):
        argv = ["python3", *flags, "-m", "pip", "--version"]
        subprocess.run(argv, cwd=tmp_path, capture_output=True, timeout=60, check=False)
        assert (tmp_path / "ran").exists() == runs, argv
        assert (uncovered(PROGRAMS["python"], argv, 1) is None) == (not runs), argv
        (tmp_path / "ran").unlink(missing_ok=True)


# ---------------------------------------------------------------- the git table against git


def run_git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CEILING_DIRECTORIES": "/"}
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")
    command = ["git", "-c", "core.pager=cat", *args]
    # git prints `-h` on stdout or stderr: both are read as one.
    return subprocess.run(
        command, cwd=cwd, text=True, env=env, timeout=30, check=False, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("repo")
    run_git(path, "init", "-q")
    (path / "a.txt").write_text("a\n")
    run_git(path, "add", "a.txt")
    run_git(path, "commit", "-qm", "one")
    return path


@pytest.mark.e2e
def test_git_mv_plants_a_config_in_the_git_directory_so_only_a_rule_naming_it_covers_it(tmp_path: Path) -> None:
    """git mv renames before it checks the index path: a tracked file the model wrote becomes .git/config, and the
    next covered `git status` runs its core.fsmonitor (no bubblewrap: Landlock or --sandbox off)."""
    run_git(tmp_path, "init", "-q")
    ran = tmp_path / "ran"
    (tmp_path / "cfg").write_text(f'[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "touch {ran}; false"\n')
    run_git(tmp_path, "add", "cfg")
    mv = ["git", "mv", "-f", "cfg", ".git/config"]
    run_git(tmp_path, *mv[1:])
    subprocess.run(["git", "status"], cwd=tmp_path, capture_output=True, timeout=30, check=False)
    assert ran.exists()  # the attack is real: the row must stay out of `Bash(git:*)`
    why = uncovered(GIT, mv, 1)
    assert why is not None and "covered only by a rule that names it" in why, why


@pytest.mark.e2e
def test_git_diff_no_index_reads_a_denied_file_so_no_git_rule_covers_it(tmp_path: Path) -> None:
    """Only bubblewrap hides the deny list from commands: under Landlock or --sandbox off, a covered `git diff
    --no-index` would print ~/.ssh/id_rsa, which dev__read refuses."""
    secret = tmp_path / "id_rsa"
    secret.write_text("SECRET-KEY\n")
    (tmp_path / "repo").mkdir()
    run_git(tmp_path / "repo", "init", "-q")
    argv = ["git", "diff", "--no-index", str(secret), os.devnull]
    assert "SECRET-KEY" in run_git(tmp_path / "repo", *argv[1:]).stdout  # the attack is real
    why = uncovered(GIT, argv, 1)
    assert why is not None and why.startswith("'--no-index' makes git read a file of its choosing"), why


@pytest.mark.parametrize(
    ("words", "refused"),
    [(["blame", "-S", "{secret}", "a.txt"], "-S"), (["grep", "-P", "-f", "{secret}"], "-f")],
    ids=["git_blame_s_prints_a_denied_files_lines", "git_grep_f_prints_a_denied_files_lines"],
)
@pytest.mark.e2e
def test_an_option_that_reads_its_patterns_or_revisions_from_a_file_prints_its_lines_so_no_git_rule_covers_it(
    tmp_path: Path, repo: Path, words: list[str], refused: str
) -> None:
    """`blame -S FILE` and `grep -f FILE` read a file of the command's choosing and quote a line they cannot parse:
    under Landlock or --sandbox off, a covered one would print ~/.ssh/id_rsa's lines, which dev__read refuses."""
    secret = tmp_path / "id_rsa"
    secret.write_text("+SECRET-KEY-LINE\n")  # not a revision, nor a valid regular expression
    argv = ["git", *(w.format(secret=secret) for w in words)]
    assert "SECRET-KEY-LINE" in run_git(repo, *argv[1:]).stdout  # the attack is real (stderr is read too)
    why = uncovered(GIT, argv, 1)
    assert why is not None and why.startswith(f"{refused!r} makes git read a file of its choosing"), why


HELP = re.compile(r"^ {4}(-[\w#])?(?:, )?(--(?:\[no-\])?[\w-]+)?(\S*)(?: (\S+))?", re.MULTILINE)


def help_kinds(text: str) -> dict[str, str]:
    """Options and how they take a value as git's `-h` lists them: `-m, --message <message>` is "=",
    `--stat[=<width>]` "?", `-q, --quiet` ""."""
    found: dict[str, str] = {}
    for short, long, glued, after in HELP.findall(text):
        kind = "?" if glued.startswith("[") else "=" if glued.startswith("=") or after else ""
        names = [n for n in (short, long.replace("[no-]", "")) if n]
        names += ["--no-" + long[7:]] if long.startswith("--[no-]") else []
        found.update(dict.fromkeys(names, kind))
    return found


# Rows whose subcommand answers `-h` with its options (parse-options); the others are checked another way below.
ANSWERS_H = {
    *("status", "commit", "add", "restore", "checkout", "switch", "reset", "rm", "mv", "merge", "cherry-pick"),
    *("revert", "rebase", "clean", "branch", "tag", "ls-files", "ls-tree", "cat-file", "blame", "grep", "describe"),
    *("show-ref", "for-each-ref", "merge-base", "name-rev", "apply", "cherry", "count-objects", "check-ignore"),
    *("remote", "fetch", "pull", "push", "clone", "ls-remote", "config"),
}
# What git 2.39's `-h` does not list, each read in git's source: hidden options, revision options, git 2.46's rows.
BY_HAND = {
    *((("commit",), o) for o in ("--allow-empty", "--allow-empty-message")),  # PARSE_OPT_HIDDEN
    (("blame",), "--no-textconv"),  # a diff option, read by blame's revision setup
    *((("shortlog",), o) for o in ("--all", "--no-merges", "--since", "--until", "--author")),  # revision options
}
NEWER_GIT = {("config", "get"), ("config", "list")}  # git 2.46: `--value`, `--url`, `--type`, `--default` take one


@pytest.mark.e2e
def test_git_takes_the_next_word_as_a_value_exactly_where_the_table_says_so(repo: Path) -> None:
    """A value the table takes as the next word must be one git takes: else the word after it (`-U --ext-diff`)
    would be read by git as an option we never checked. And every option a row lists is one git has, not an
    abbreviation of another (`--exe` is `--exec`)."""
    problems: list[str] = []
    diff_help = help_kinds(run_git(repo.parent, "diff", "--no-index", "-h").stdout)
    for key, row in GIT.commands.items():
        shown = help_kinds(run_git(repo, *key, "-h").stdout) if key[0] in ANSWERS_H else {}
        is_log = row.options.allowed.keys() >= LOG.allowed.keys()  # checked on git log below
        for name, (kind, _) in {
            **{n: (k, None) for n, k in row.options.allowed.items()},
            **row.options.refused,
        }.items():
            if name in shown:
                problems += _mismatch(key, name, kind, shown[name])
            elif name in diff_help and row.options.allowed.keys() >= DIFF.allowed.keys():
                problems += _mismatch(key, name, kind, diff_help[name])
            elif name in row.options.allowed and _unlisted(key, name, shown) and not (is_log and name in LOG.allowed):
                problems.append(f"git {' '.join(key)}: {name} is not in its -h")
    assert problems == [], "\n".join(problems)


def _mismatch(key: tuple[str, ...], name: str, ours: str, git: str) -> list[str]:
    unsafe = (ours == "=" and git != "=") or (ours == "?" and not name.startswith("--") and git == "")
    return [f"git {' '.join(key)}: {name} is {ours!r} here, {git!r} in git"] if unsafe else []


def _unlisted(key: tuple[str, ...], name: str, shown: dict[str, str]) -> bool:
    """An option of a row that answers `-h`, which neither `-h` nor BY_HAND vouches for."""
    checked = key[0] in ANSWERS_H and key not in NEWER_GIT
    return checked and (key, name) not in BY_HAND and not _negation(name, shown)


def _negation(name: str, shown: dict[str, str]) -> bool:
    """parse-options takes `--no-X` for an `--X` it lists, and `--X` for a `--no-X`."""
    return ("--" + name[5:] if name.startswith("--no-") else "--no-" + name[2:]) in shown


@pytest.mark.e2e
def test_every_log_option_the_table_lists_is_one_git_log_takes_as_the_table_reads_it(repo: Path) -> None:
    """log and show read revision options with git's own parser, which `-h` does not list: each is tried on real
    git. One that takes a value must take the next word (`--author zz-not-a-revision` is no revision); none may be
    an abbreviation of a diff option (parse-options expands those)."""
    diff_help = help_kinds(run_git(repo.parent, "diff", "--no-index", "-h").stdout)
    problems: list[str] = []
    for name, kind in LOG.allowed.items():
        if name in diff_help:
            continue
        if name != "--skip" and any(other.startswith(name) and other != name for other in diff_help):
            problems.append(f"{name} abbreviates a diff option")  # --skip: read exactly, before diff's --skip-to
        # A value taken only glued may be one git needs (`--format=%h`): tried glued.
        word = f"{name}=1" if kind == "?" else name
        run = run_git(repo, "log", "-1", word, "zz-not-a-revision" if kind == "=" else "HEAD")
        if "unrecognized argument" in run.stdout or (kind == "=" and "argument 'zz-not-a-revision'" in run.stdout):
            problems.append(f"git log {name}: {run.stdout.strip()[:120]}")
    assert problems == [], "\n".join(problems)


# ---------------------------------------------------------------- the page


def test_the_docs_page_lists_what_each_rule_covers_as_the_tables_say() -> None:
    render = runpy.run_path(str(ROOT / "scripts" / "command_rules_doc.py"))["render"]
    assert (ROOT / "docs" / "command-rules.md").read_text() == render(), (
        "docs/command-rules.md differs from the tables: run python scripts/command_rules_doc.py --write"
    )
