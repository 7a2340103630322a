"""ACP on each provider's wire (tests/fake_providers.py): an editor's session on Bedrock, Vertex AI, Foundry or a
gateway that refuses unknown betas runs a tool round through the SDK's own client for that cloud, and its model
picker offers the models as that provider names them. The server runs in this process (tests/test_acp.editor)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.acp_harness import EditorClient, statuses, texts
from tests.fake_anthropic import reply, tool_use
from tests.test_acp import editor, open_session
from tests.test_providers_e2e import HAIKU, wire_for

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]  # the dev server's sandbox probe starts bwrap once


@pytest.mark.parametrize("wire", ["bedrock", "vertex", "foundry", "gateway"])
async def test_an_editor_session_on_each_provider_runs_a_tool_round_and_picks_from_the_providers_model_ids(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wire: str
) -> None:
    from acp import text_block

    (tmp_path / "notes.txt").write_text("alpha\n")
    script = [reply(tool_use("dev__read", {"file_path": "notes.txt"}, id="r")), reply("It says alpha.")]
    fake, env_of = wire_for(wire, script, tmp_path)
    client = EditorClient()
    with fake:
        env = env_of() | {"SPROUT_AGENT_BUILTIN_SERVERS": "dev"}
        async with editor(tmp_path, monkeypatch, None, client, env) as conn:
            session_id = await open_session(conn, tmp_path)
            grown = await client.wait_for(lambda u: u.session_update == "config_option_update")
            result = await conn.prompt(session_id=session_id, prompt=[text_block("what do the notes say?")])
    assert result.stop_reason == "end_turn" and fake.refusals == []
    assert texts(client.of(session_id)) == "It says alpha."
    assert statuses(client.of(session_id), "r")[-1] == "completed"
    (first, second) = (request.body for request in fake.requests)
    assert second["messages"][-1]["content"][0]["tool_use_id"] == "r"  # the round went through the provider
    picker = [option.value for option in grown.config_options[1].options]
    assert HAIKU[wire] in picker and first["model"] in picker  # the provider's own ids, the session's among them
