"""What a typed or piped prompt becomes: piped stdin attached, `@path` files attached (bounded), Tab candidates."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sprout_agent.core.errors import UsageError
from sprout_agent.faces.cli.stdin_prompt import STDIN_MAX_BYTES, attach_stdin, read_piped
from sprout_agent.faces.slash_commands import names_for
from sprout_agent.faces.terminal.prompt_attach import (
    FILE_MAX_BYTES,
    attach_mentions,
    command_candidates,
    file_candidates,
)


def test_piped_text_follows_the_prompt_inside_a_stdin_element() -> None:
    assert attach_stdin("explain this", "line 1\nline 2") == "explain this\n\n<stdin>\nline 1\nline 2\n</stdin>"


def test_a_pipe_with_data_is_read_and_a_silent_open_pipe_is_not_waited_on() -> None:
    read_end, write_end = os.pipe()
    with os.fdopen(read_end, "rb") as reader:
        silent = read_piped(reader, wait=False)  # nobody writes, nobody closes: a harness's open stdin
        assert silent.text is None and silent.note is not None and "not attached" in silent.note
        os.write(write_end, "log ✓\n".encode())
        os.close(write_end)
        assert read_piped(reader, wait=False).text == "log ✓\n"


def test_piped_stdin_over_the_bound_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    (tmp_path / "big").write_bytes(b"x" * (STDIN_MAX_BYTES + 1))  # `< file` is read at once, without a grace
    (tmp_path / "latin1").write_bytes(b"caf\xe9")
    with (tmp_path / "big").open("rb") as big, pytest.raises(UsageError, match="stdin is over 512 KiB"):
        read_piped(big, wait=False)
    with (tmp_path / "latin1").open("rb") as latin1, pytest.raises(UsageError, match="not UTF-8"):
        read_piped(latin1, wait=True)


def test_a_mentioned_file_is_attached_after_the_prompt_with_its_path(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    attached = attach_mentions("fix @src/calc.py, please", tmp_path)
    assert attached.text == (
        'fix @src/calc.py, please\n\n<file path="src/calc.py">\ndef add(a, b):\n    return a - b\n</file>'
    )
    assert attached.notes == ()


def test_mentions_that_cannot_be_attached_say_why_and_stay_plain_text(tmp_path: Path) -> None:
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01\x02")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("[core]\n")
    (tmp_path / "dir").mkdir()
    outside = tmp_path.parent / "outside-secret.txt"
    outside.write_text("secret")
    (tmp_path / "link.txt").symlink_to(outside)
    prompt = "a @missing.py b @blob.bin c @.git/config d @dir e @../outside-secret.txt f @link.txt user@example.com"
    attached = attach_mentions(prompt, tmp_path)
    assert attached.text == prompt  # nothing attached; an e-mail address is no mention
    assert attached.notes == (
        "@missing.py: not attached (no such file)",
        "@blob.bin: not attached (binary)",
        "@.git/config: not attached (inside .git)",
        "@dir: not attached (a directory)",
        "@../outside-secret.txt: not attached (outside the working directory)",
        "@link.txt: not attached (outside the working directory)",
    )


def test_a_large_mentioned_file_is_clipped_with_a_marker_for_the_model_and_a_note(tmp_path: Path) -> None:
    (tmp_path / "big.log").write_text("y" * (FILE_MAX_BYTES + 10))
    attached = attach_mentions("@big.log", tmp_path)
    assert f"[clipped: the first 256 KiB of {FILE_MAX_BYTES + 10} bytes]\n</file>" in attached.text
    assert len(attached.text) < FILE_MAX_BYTES + 200
    assert attached.notes == ("@big.log: clipped to its first 256 KiB",)


def test_tab_candidates_list_one_directory_level_without_git_or_hidden_files(tmp_path: Path) -> None:
    for name in ("calc.py", "cache.txt", ".env", "other.py"):
        (tmp_path / name).write_text("")
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "c1.txt").write_text("")
    (tmp_path / ".git").mkdir()
    assert file_candidates("ca", tmp_path) == ["cache.txt", "calc.py", "cases/"]
    assert file_candidates("cases/", tmp_path) == ["cases/c1.txt"]
    assert file_candidates("", tmp_path) == ["cache.txt", "calc.py", "cases/", "other.py"]
    assert file_candidates(".", tmp_path) == [".env"]
    assert file_candidates("../", tmp_path) == []  # nothing outside the working directory


def test_tab_candidates_for_slash_commands() -> None:
    assert command_candidates("/c", names_for("repl")) == ["/clear", "/compact", "/context", "/cost"]
    assert command_candidates("/mo", names_for("repl")) == ["/model"]


def test_a_fifo_swapped_in_for_a_mentioned_file_is_not_attached_and_never_holds_the_prompt(tmp_path: Path) -> None:
    """Between the check that `@notes.txt` is a file and its read, a repository's process may put a FIFO there:
    the read goes through the one reader (a regular file only, opened without blocking), so nothing waits."""
    import threading

    from sprout_agent.faces.terminal import prompt_attach
    from tests.bounds import bounded

    fifo = tmp_path / "notes.txt"
    os.mkfifo(fifo)
    found: list[tuple[str | None, str | None]] = []
    reading = threading.Thread(target=lambda: found.append(prompt_attach._read(fifo, "notes.txt")), daemon=True)  # pyright: ignore[reportPrivateUsage]
    reading.start()
    reading.join(bounded(10))
    assert found, "the read of a FIFO blocked"
    ((body, note),) = found
    assert body is None and note is not None and note.startswith("@notes.txt: not attached (")
