"""The one reader and writer (trust/opening.py) and everything that opens a path for the model or a repository
through it: the dev tools, skills (through the real `agent` server, in-process), commands and agent definitions.
Named after the attacks: a directory swapped for a symbolic link after it was checked or loaded, and a read of
what the sandbox's deny list hides, through each tool."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from sprout_agent.config.definition_files import load_definitions, places
from sprout_agent.config.definitions import BUILTIN_AGENTS
from sprout_agent.trust import sandbox as _sandbox
from sprout_agent.trust.opening import DenyList, Fixed, Reader, Refused, WriteTarget, write_file
from sprout_agent.trust.write_policy import WritePolicy
from tests.harness import call_tool

if TYPE_CHECKING:
    from mcp import Client

pytestmark = pytest.mark.anyio
KEY = "-----BEGIN OPENSSH PRIVATE KEY----- MATERIAL"
SWAPPED = "the path changed after it was checked"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME with a private key, as the deny list's ~/.ssh."""
    home = tmp_path / "home"
    write(home / ".ssh" / "id_rsa", KEY + "\n")
    monkeypatch.setenv("HOME", str(home))
    return home


def _skill_server(repo: Path, home: Path) -> tuple[Any, list[str]]:
    """The `agent` server over the skills found in `repo` as a session finds them, with the deny list of a session
    whose sandbox is on (~/.ssh hidden)."""
    from sprout_agent.mcp import agent_server
    from tests.test_subagents import unattached

    deny = DenyList.of([str(home / ".ssh")], str(repo))
    found = load_definitions(places(repo, home, None), deny=deny)
    delegator = unattached(BUILTIN_AGENTS, found.skills)
    return agent_server.create_server_in(str(repo), {}, delegator), list(found.notices)


async def _skill(client: Client, **arguments: str) -> tuple[bool, str]:
    return await call_tool(client, "skill", **arguments)


async def test_a_skill_directory_swapped_for_a_link_to_ssh_after_load_is_refused_not_read(
    tmp_path: Path, home: Path
) -> None:
    repo = tmp_path / "repo"
    helper = repo / ".claude" / "skills" / "helper"
    write(helper / "SKILL.md", "---\nname: helper\ndescription: Helps\n---\nUse notes.txt.\n")
    write(helper / "notes.txt", "notes\n")
    from mcp import Client

    server, notices = _skill_server(repo, home)
    assert notices == []
    async with Client(server) as client:
        assert await _skill(client, skill="helper", file="notes.txt") == (False, "notes\n")
        # The model's sandboxed command: `mv helper elsewhere && ln -s ~/.ssh helper`.
        helper.rename(repo / "aside")
        helper.symlink_to(home / ".ssh")
        with_file = await _skill(client, skill="helper", file="id_rsa")
        without_file = await _skill(client, skill="helper")
    for is_error, text in (with_file, without_file):
        assert is_error and SWAPPED in text and "MATERIAL" not in text


async def test_a_skill_directory_replaced_by_another_whose_skill_md_links_to_a_key_is_refused(
    tmp_path: Path, home: Path
) -> None:
    repo = tmp_path / "repo"
    helper = repo / ".claude" / "skills" / "helper"
    write(helper / "SKILL.md", "---\nname: helper\ndescription: Helps\n---\nBody.\n")
    from mcp import Client

    server, _ = _skill_server(repo, home)
    async with Client(server) as client:
        shutil.rmtree(helper)
        helper.mkdir()  # a real directory this time, not a link (it may even get the old one's inode number)
        (helper / "SKILL.md").symlink_to(home / ".ssh" / "id_rsa")
        replaced = await _skill(client, skill="helper")
    assert replaced[0] and "MATERIAL" not in replaced[1]
    assert SWAPPED in replaced[1] or "symbolic link out of helper" in replaced[1]


async def test_a_skill_file_swapped_for_a_link_to_a_key_inside_the_pinned_directory_is_refused(
    tmp_path: Path, home: Path
) -> None:
    repo = tmp_path / "repo"
    helper = repo / ".claude" / "skills" / "helper"
    write(helper / "SKILL.md", "---\nname: helper\ndescription: Helps\n---\nBody.\n")
    from mcp import Client

    server, _ = _skill_server(repo, home)
    async with Client(server) as client:
        (helper / "SKILL.md").unlink()
        (helper / "SKILL.md").symlink_to(home / ".ssh" / "id_rsa")
        (helper / "sub").symlink_to(home / ".ssh")
        answers = [await _skill(client, skill="helper"), await _skill(client, skill="helper", file="sub/id_rsa")]
    for is_error, text in answers:
        assert is_error and "symbolic link out of helper" in text and "MATERIAL" not in text


def test_a_command_or_definition_file_that_is_a_link_to_a_credential_is_not_loaded(tmp_path: Path, home: Path) -> None:
    repo = tmp_path / "repo"
    for kind in ("commands", "agents"):
        (repo / ".claude" / kind).mkdir(parents=True)
        (repo / ".claude" / kind / "x.md").symlink_to(home / ".ssh" / "id_rsa")
    found = load_definitions(places(repo, None, None), deny=DenyList.of([str(home / ".ssh")], str(repo)))
    assert "x" not in {c.name for c in found.commands} | {a.name for a in found.agents}
    assert len(found.notices) == 2 and all("symbolic link out of" in n for n in found.notices)
    assert "MATERIAL" not in json.dumps([c.body for c in found.commands] + [a.prompt for a in found.agents])


def test_a_commands_directory_swapped_for_a_link_after_it_was_pinned_is_not_read_through(
    tmp_path: Path, home: Path
) -> None:
    commands = tmp_path / "repo" / ".claude" / "commands"
    write(commands / "id_rsa", "a command\n")
    pinned = Fixed.pin(str(commands))
    assert pinned.read("id_rsa", 100) == b"a command\n"
    commands.rename(commands.parent / "aside")
    commands.symlink_to(home / ".ssh")  # between the listing and the read, at load
    with pytest.raises(Refused, match=SWAPPED):
        pinned.read("id_rsa", 100)


def test_a_directory_swapped_for_a_link_between_the_readers_check_and_its_open_is_refused(
    tmp_path: Path, home: Path
) -> None:
    reader = Reader(DenyList.of([str(home / ".ssh")], str(tmp_path)))
    write(tmp_path / "work" / "id_rsa", "mine\n")
    real = reader.readable("work/id_rsa", str(tmp_path))  # checked: not hidden
    (tmp_path / "work").rename(tmp_path / "aside")
    (tmp_path / "work").symlink_to(home / ".ssh")
    with pytest.raises(Refused, match=SWAPPED):
        reader.open_file(real)
    with pytest.raises(Refused, match="deny list"):
        reader.readable("work/id_rsa", str(tmp_path))  # resolved again, it is the key: hidden


def test_a_write_through_a_link_in_the_work_tree_is_refused(tmp_path: Path, home: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "to_ssh").symlink_to(home / ".ssh")
    (root / "to_home").symlink_to(home)
    policy = WritePolicy.build(mode="workspace-write", root=str(root), denied=[str(home / ".ssh")])
    for through in ("to_ssh/authorized_keys", "to_home/.bashrc"):
        with pytest.raises(Refused, match="refusing to write"):
            WriteTarget.checked(str(Path(root / through).resolve()), policy)
    target = WriteTarget.checked(str(root / "sub" / "f.txt"), policy)
    (root / "sub").symlink_to(home)  # swapped in after the check: the writer makes no directory through it
    with pytest.raises(Refused, match=SWAPPED):
        write_file(target, b"x")
    assert sorted(p.name for p in home.iterdir()) == [".ssh"] and not (home / ".ssh" / "authorized_keys").exists()


@pytest.mark.skipif(_sandbox.probe() is not None, reason=f"no sandbox here: {_sandbox.probe()}")
@pytest.mark.parametrize("engine", ["rg", "python"])
@pytest.mark.e2e
async def test_a_denied_path_is_refused_through_each_dev_tool(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch, engine: str
) -> None:
    from mcp import Client

    from sprout_agent.tools import dev

    if engine == "python":
        monkeypatch.setenv("SPROUT_DEV_NO_RG", "1")
    root = tmp_path / "repo"
    root.mkdir()
    (root / "key").symlink_to(home / ".ssh" / "id_rsa")  # a link in the work tree to what the deny list hides
    (root / "keys").symlink_to(home / ".ssh")
    key = str(home / ".ssh" / "id_rsa")
    # The write tools may leave the working directory here: only the deny list stands between them and ~/.ssh.
    async with Client(dev.create_server_in(str(root), {"SPROUT_DEV_ALLOW_OUTSIDE": "1"})) as client:
        answers = {
            "read": await call_tool(client, "read", file_path=key),
            "read a link": await call_tool(client, "read", file_path="key"),
            "read through a linked directory": await call_tool(client, "read", file_path="keys/id_rsa"),
            "grep the file": await call_tool(client, "grep", pattern="PRIVATE KEY", path=key),
            "edit": await call_tool(client, "edit", file_path="key", old_string="MATERIAL", new_string="x"),
            "write": await call_tool(client, "write", file_path="keys/id_rsa", content="x"),
        }
        _, tree = await call_tool(client, "grep", pattern="PRIVATE KEY", output_mode="content")
    for name, (is_error, text) in answers.items():
        assert is_error and "MATERIAL" not in text, name
        assert "deny list" in text, (name, text)
    assert "MATERIAL" not in tree  # neither engine follows a link out of the tree it searches
    assert (home / ".ssh" / "id_rsa").read_text() == KEY + "\n"


def test_a_claude_md_linked_to_a_key_is_not_read_into_the_prompt_but_one_linked_to_agents_md_is(
    tmp_path: Path, home: Path
) -> None:
    from sprout_agent.model.system_prompt import build_system_prompt

    repo = tmp_path / "repo"
    write(repo / "sub" / "AGENTS.md", "Run make check.\n")
    (repo / ".git").mkdir()
    (repo / "CLAUDE.md").symlink_to(home / ".ssh" / "id_rsa")  # a cloned repository's, or a command's swap
    (repo / "sub" / "CLAUDE.md").symlink_to("AGENTS.md")  # a common layout: one file for both tools
    prompt = build_system_prompt(repo / "sub", reader=Reader(DenyList.of([str(home / ".ssh")], str(repo))))
    assert "MATERIAL" not in prompt and "not read:" in prompt and "deny list" in prompt
    assert prompt.count("Run make check.") == 2


@pytest.mark.e2e  # the whole attack from the CLI: the model's sandboxed command swaps the directory, then asks
@pytest.mark.skipif(_sandbox.probe() is not None, reason=f"no sandbox here: {_sandbox.probe()}")
def test_the_models_command_swapping_a_skill_for_a_link_to_ssh_gets_it_no_key_from_the_cli(tmp_path: Path) -> None:
    from tests.fake_anthropic import FakeAnthropic, reply, tool_use
    from tests.harness import run_agent

    write(tmp_path / ".ssh" / "id_rsa", KEY + "\n")  # HOME is tmp_path in run_agent
    write(tmp_path / ".claude" / "skills" / "helper" / "SKILL.md", "---\ndescription: Helps\n---\nBody.\n")
    swap = 'mv .claude/skills/helper aside && ln -s "$HOME/.ssh" .claude/skills/helper && echo SWAPPED'
    script = [
        reply(tool_use("dev__bash", {"command": swap}, id="t1")),
        reply(tool_use("dev__read", {"file_path": "~/.ssh/id_rsa"}, id="t2")),
        reply(tool_use("agent__skill", {"skill": "helper", "file": "id_rsa"}, id="t3")),
        reply(tool_use("agent__skill", {"skill": "helper"}, id="t4")),
        reply("done"),
    ]
    env = {"SPROUT_AGENT_BUILTIN_SERVERS": "dev,agent"}
    with FakeAnthropic(script) as fake:
        run = run_agent(tmp_path, ["-p", "go", "--dangerously-skip-permissions"], fake=fake, env=env, timeout=60)
    assert run.code == 0, run.stderr
    results = [request.body["messages"][-1]["content"][0] for request in fake.requests[1:]]
    assert "SWAPPED" in json.dumps(results[0]["content"])
    for result in results[1:]:
        assert result["is_error"] and "MATERIAL" not in json.dumps(result["content"]), result
    assert "deny list" in json.dumps(results[1]["content"])
    assert all(SWAPPED in json.dumps(result["content"]) for result in results[2:])
    assert "MATERIAL" not in run.stdout + run.stderr
