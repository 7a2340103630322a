"""What the model sees of a server's tools, as pure rules: API-safe names, results cut in the middle."""

from __future__ import annotations

from sprout_agent.core.tool_names import MAX_TOOL_NAME, model_tool_name


def test_model_tool_names_are_api_safe_and_at_most_64_characters() -> None:
    assert model_tool_name("git", "git_status") == "git__git_status"
    assert model_tool_name("my server", "read file!") == "my_server__read_file_"
    long = model_tool_name("s" * 50, "t" * 50)
    assert len(long) == MAX_TOOL_NAME and long == model_tool_name("s" * 50, "t" * 50)
    assert long != model_tool_name("s" * 50, "t" * 49 + "u")
    for name in (long, model_tool_name("ünï.cødé", "x/y")):
        assert all(c.isascii() and (c.isalnum() or c in "_-") for c in name)


def test_cut_middle_keeps_head_and_tail_and_never_exceeds_the_cap() -> None:
    from sprout_agent.mcp.results import cut_middle

    text = "début " + "€" * 5000 + " fin"
    for cap in (10, 50, 333, 1000, 4096):
        cut = cut_middle(text, cap)
        assert len(cut.encode()) <= cap
        if cap >= 100:
            assert cut.startswith("début") and cut.endswith("fin") and "elided" in cut
    assert cut_middle("short", 100) == "short"
