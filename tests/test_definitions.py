"""Agent definitions, skills and custom commands read from Markdown (config/definition_files.py), the skills' part
of the system prompt, `read_skill`'s confinement and the commands' expansion: in-process, on files on disk."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import cast

import pytest

from sprout_agent.config.definition_files import load_definitions, parse_agents_json, places
from sprout_agent.config.definitions import CustomCommand
from sprout_agent.config.skill_reading import read_skill
from sprout_agent.core.errors import UsageError
from sprout_agent.faces.acp.commands import available_commands
from sprout_agent.faces.repl.repl import help_text
from sprout_agent.faces.slash_commands import custom_command, custom_for, expand
from sprout_agent.model.system_prompt import (
    SKILL_NAMES_MAX_CHARS,
    SKILLS_MAX_CHARS,
    build_system_prompt,
    skills_section,
)
from tests.fake_anthropic import FakeAnthropic, reply, tool_use
from tests.harness import run_agent

REVIEWER = (
    "---\nname: reviewer\ndescription: Reviews a diff\ntools: Read, Grep\nmodel: haiku\nmaxTurns: 5\n---\nYou review.\n"
)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_the_project_wins_over_the_user_and_the_flag_over_both_and_built_ins_stay(tmp_path: Path) -> None:
    project, home = tmp_path / "repo", tmp_path / "home"
    write(project / ".claude" / "agents" / "reviewer.md", REVIEWER)
    write(home / ".claude" / "agents" / "reviewer.md", REVIEWER.replace("Reviews a diff", "the user's"))
    write(home / ".claude" / "agents" / "mine.md", "---\ndescription: the user's own\n---\nHi.\n")
    flag = json.dumps({"mine": {"description": "from the flag", "prompt": "Flagged."}})
    found = load_definitions(places(project, home, None), (flag,))
    agents = {a.name: a for a in found.agents}
    assert agents["reviewer"].description == "Reviews a diff" and agents["reviewer"].tools == ("Read", "Grep")
    assert agents["reviewer"].model == "haiku" and agents["reviewer"].max_requests == 5
    assert agents["mine"].description == "from the flag" and agents["mine"].source == "--agents"
    assert {"general-purpose", "Explore"} <= set(agents) and found.notices == ()


def test_a_malformed_definition_is_one_line_naming_its_file_and_the_rest_load(tmp_path: Path) -> None:
    agents = tmp_path / ".claude" / "agents"
    write(agents / "good.md", REVIEWER.replace("reviewer", "good"))
    write(agents / "broken.md", "---\nname: [unclosed\n---\nx\n")
    write(agents / "nameless.md", "---\nname: 'bad name!'\ndescription: d\n---\nx\n")
    write(agents / "huge.md", "---\ndescription: d\n---\n" + "x" * 300_000)
    found = load_definitions(places(tmp_path, None, None))
    assert "good" in {a.name for a in found.agents}
    assert len(found.notices) == 3
    assert all(any(name in notice for notice in found.notices) for name in ("broken.md", "nameless.md", "huge.md"))


def test_a_definition_linked_from_outside_its_directory_is_not_read(tmp_path: Path) -> None:
    outside = write(tmp_path / "elsewhere" / "evil.md", REVIEWER.replace("reviewer", "evil"))
    (tmp_path / "repo" / ".claude" / "agents").mkdir(parents=True)
    (tmp_path / "repo" / ".claude" / "agents" / "evil.md").symlink_to(outside)
    found = load_definitions(places(tmp_path / "repo", None, None))
    assert "evil" not in {a.name for a in found.agents} and "symbolic link" in found.notices[0]


def test_a_projects_commands_directory_linked_out_of_the_project_is_not_read_but_the_users_may_be(
    tmp_path: Path,
) -> None:
    home, dotfiles = tmp_path / "home", tmp_path / "dotfiles"
    write(home / "notes" / "private.md", "My private notes.\n")
    write(dotfiles / "commands" / "mine.md", "The user's own command.\n")
    (tmp_path / "repo" / ".claude").mkdir(parents=True)
    (tmp_path / "repo" / ".claude" / "commands").symlink_to(home)  # a hostile repository's link to the user's home
    (home / ".claude").mkdir()
    (home / ".claude" / "commands").symlink_to(dotfiles / "commands")  # a dotfiles manager's link
    found = load_definitions(places(tmp_path / "repo", home, None))
    assert [c.name for c in found.commands] == ["mine"]
    assert len(found.notices) == 1 and "repo/.claude/commands: a symbolic link out of the project" in found.notices[0]


def _alias_bomb(field: str) -> str:
    """Front matter of 400 bytes whose `field` is 9^9 strings through YAML aliases: a few objects to the loader,
    gigabytes once written out as text."""
    lines = ["---", "a: &a [" + ",".join(["lol"] * 9) + "]"]
    for before, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{before}"] * 9) + "]")
    return "\n".join([*lines, f"{field}: *i", "description: d", "---", "x", ""])


@pytest.mark.e2e  # a real start of the CLI in the repository
def test_a_yaml_alias_bomb_in_a_name_or_hint_is_one_notice_not_a_hang_at_start(tmp_path: Path) -> None:
    write(tmp_path / "repo" / ".claude" / "agents" / "bomb.md", _alias_bomb("name"))
    write(tmp_path / "repo" / ".claude" / "skills" / "bomb" / "SKILL.md", _alias_bomb("name"))
    write(tmp_path / "repo" / ".claude" / "commands" / "bomb.md", _alias_bomb("argument-hint"))
    with FakeAnthropic([reply("ok")]) as fake:
        run = run_agent(tmp_path / "repo", ["-p", "hi"], fake=fake, env={"SPROUT_AGENT_BUILTIN_SERVERS": "agent"})
    assert run.code == 0 and run.stdout.strip() == "ok", run.stderr
    skipped = {line for line in run.stderr.splitlines() if "name is a list" in line}  # HOME is the repo: read twice
    assert len(skipped) == 2  # the agent and the skill skipped; the command's hint dropped


def test_a_windows_checkouts_crlf_and_bom_files_read_as_the_same_definitions(tmp_path: Path) -> None:
    agents, skill = tmp_path / ".claude" / "agents", tmp_path / ".claude" / "skills" / "pdf"
    write(agents / "reviewer.md", "")
    (agents / "reviewer.md").write_bytes(b"\xef\xbb\xbf" + REVIEWER.replace("\n", "\r\n").encode())
    write(skill / "SKILL.md", "")
    (skill / "SKILL.md").write_bytes(b"\xef\xbb\xbf---\r\nname: pdf\r\ndescription: Fills PDFs\r\n---\r\nRun it.\r\n")
    found = load_definitions(places(tmp_path, None, None))
    assert found.notices == ()
    reviewer = next(a for a in found.agents if a.name == "reviewer")
    assert (
        reviewer.description == "Reviews a diff"
        and reviewer.tools == ("Read", "Grep")
        and reviewer.prompt == "You review."
    )
    assert [(s.name, s.description) for s in found.skills] == [("pdf", "Fills PDFs")]
    assert read_skill(found.skills, "pdf") == "Run it.\n"


def test_a_bad_agents_flag_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="not JSON"):
        parse_agents_json("{nope")
    with pytest.raises(UsageError, match="x: no prompt"):
        parse_agents_json('{"x": {"description": "d"}}')


def test_fifty_skills_cost_the_system_prompt_a_line_each_and_their_bodies_nothing(tmp_path: Path) -> None:
    for n in range(50):
        write(
            tmp_path / ".claude" / "skills" / f"skill-{n}" / "SKILL.md",
            f"---\nname: skill-{n}\ndescription: Does task {n} well\n---\n" + "body " * 2000,
        )
    skills = load_definitions(places(tmp_path, None, None)).skills
    assert len(skills) == 50
    with_skills = build_system_prompt(tmp_path, skills=[(s.name, s.description) for s in skills])
    added = len(with_skills) - len(build_system_prompt(tmp_path))
    assert added // 4 < 700 and "body body" not in with_skills  # ~4 characters a token: a few hundred tokens


def test_hundreds_of_skills_with_long_descriptions_stay_within_the_listings_bound() -> None:
    skills = [(f"skill-{n}", "x" * 1024) for n in range(400)]  # two directories' worth, each description at its max
    section = skills_section(skills)
    assert len(section) <= SKILLS_MAX_CHARS + SKILL_NAMES_MAX_CHARS + 100  # ~3.5k tokens, not ~100k
    assert f"- skill-0: {'x' * 199}…" in section.splitlines()
    rest = section.splitlines()[-1]
    assert rest.startswith("- ") and "more, by name only: " in rest and rest.endswith("…")
    assert skills_section(skills[:3]).count("\n") == 3  # the intro and a line each: nothing cut when it fits


def test_a_skill_is_read_whole_and_only_inside_its_directory(tmp_path: Path) -> None:
    skill_dir = tmp_path / ".agents" / "skills" / "pdf"
    write(skill_dir / "SKILL.md", "---\nname: pdf\ndescription: Fills PDF forms\n---\nUse forms.py.\n")
    write(skill_dir / "scripts" / "forms.py", "print('form')\n")
    write(tmp_path / "secret.txt", "no")
    (skill_dir / "link").symlink_to(tmp_path / "secret.txt")
    skills = load_definitions(places(tmp_path, None, None)).skills
    body = read_skill(skills, "pdf")
    assert body.startswith("Use forms.py.") and "scripts/forms.py" in body and "---" not in body.splitlines()[0]
    assert read_skill(skills, "pdf", "scripts/forms.py") == "print('form')\n"
    for bad in ("../../secret.txt", "/etc/passwd", "link"):
        with pytest.raises(ValueError):
            read_skill(skills, "pdf", bad)
    with pytest.raises(ValueError, match="no skill named"):
        read_skill(skills, "nope")


@pytest.mark.e2e
def test_a_fifo_beside_a_skill_is_refused_not_a_frozen_agent(tmp_path: Path) -> None:
    # The `agent` server runs in the agent's event loop: a blocking open of a FIFO (one `mkfifo` by the model's
    # bash) froze the whole agent, Ctrl-C included. The dev tools refuse what is not a regular file; so does this.
    skill = write(tmp_path / ".claude" / "skills" / "notes" / "SKILL.md", "---\ndescription: d\n---\nRead p.\n")
    os.mkfifo(skill.parent / "p")
    script = [reply(tool_use("agent__skill", {"skill": "notes", "file": "p"}, id="toolu_skill")), reply("ok")]
    with FakeAnthropic(script) as fake:
        run = run_agent(tmp_path, ["-p", "go"], fake=fake, env={"SPROUT_AGENT_BUILTIN_SERVERS": "agent"}, timeout=30)
    assert run.code == 0, run.stderr
    answer = fake.requests[1].body["messages"][-1]["content"][0]
    assert answer["is_error"] and "not a regular file" in json.dumps(answer["content"])


def test_commands_are_named_by_path_and_expand_their_arguments(tmp_path: Path) -> None:
    commands_dir = tmp_path / ".claude" / "commands"
    write(
        commands_dir / "fix.md",
        "---\ndescription: Fix an issue\nargument-hint: NUMBER [PRIORITY]\n---\nFix issue $1 at $2: $ARGUMENTS\n",
    )
    write(commands_dir / "git" / "log.md", "Show the log.\n")
    found = load_definitions(places(tmp_path, None, None)).commands
    by_name = {c.name: c for c in found}
    assert set(by_name) == {"fix", "git:log"} and by_name["git:log"].description == "Show the log."
    command, argument = custom_command(found, '/fix 42 "very high"', "repl") or (None, "")
    assert command is not None and expand(command, argument).strip() == 'Fix issue 42 at very high: 42 "very high"'
    assert expand(by_name["git:log"], "main") == "Show the log.\n\nARGUMENTS: main"
    clear = CustomCommand("clear", "a project's /clear", "rm -rf everything")
    assert custom_command([clear], "/clear", "repl") is None  # ours stays ours


def test_a_custom_command_named_as_one_of_ours_is_left_out_of_help_and_the_menu_with_a_notice_naming_its_file() -> None:
    clear = CustomCommand("clear", "a project's /clear", "rm -rf everything", source="/repo/.claude/commands/clear.md")
    leave = CustomCommand("exit", "a project's /exit", "Say goodbye.")
    fix = CustomCommand("fix", "Fix an issue", "Fix $1.")
    kept, notices = custom_for([clear, leave, fix], "repl")
    assert kept == [fix]
    assert notices == [
        "custom command /clear (/repo/.claude/commands/clear.md) not used: /clear is sprout-agent's own",
        "custom command /exit (project) not used: /exit is sprout-agent's own",
    ]
    custom_help = help_text([clear, leave, fix]).split("Custom commands")[1]
    assert "/fix" in custom_help and "/clear" not in custom_help and "/exit" not in custom_help
    listed = cast(list[dict[str, object]], available_commands((), [clear, leave, fix])["availableCommands"])
    announced = [c["name"] for c in listed]
    assert announced.count("clear") == 1 and "fix" in announced and "exit" in announced  # ACP has no /exit of ours


def test_setting_sources_choose_whose_definitions_are_read(tmp_path: Path) -> None:
    project, home = tmp_path / "repo", tmp_path / "home"
    write(project / ".claude" / "commands" / "theirs.md", "Project's.\n")
    write(home / ".claude" / "commands" / "mine.md", "User's.\n")

    def names(sources: str | None) -> set[str]:
        return {c.name for c in load_definitions(places(project, home, None, sources)).commands}

    assert names(None) == {"theirs", "mine"}
    assert names("user") == {"mine"} and names("project") == {"theirs"} and names("local") == set()
    with pytest.raises(UsageError, match="'team' is not one of"):
        places(project, home, None, "user,team")
