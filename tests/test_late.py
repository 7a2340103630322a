"""core/late.py: the composition root's late-bound handle (the session's model for sampling and the subagents,
the session's agent for the `agent` server), and what its users do before it is bound."""

from __future__ import annotations

from pathlib import Path

import pytest

from sprout_agent.config.definitions import BUILTIN_AGENTS
from sprout_agent.core.events import Event
from sprout_agent.core.late import Late, NotBound
from sprout_agent.core.ledger import Ledger
from sprout_agent.core.protocols import Model
from sprout_agent.mcp.sampling import Sampler, always
from tests.loop_doubles import MODEL, ScriptedModel, build_loop, reply
from tests.test_client_features import asking
from tests.test_subagents import unattached

pytestmark = pytest.mark.anyio


def test_a_handle_refuses_use_before_its_bind_and_a_second_bind() -> None:
    handle: Late[str] = Late("the session's model")
    assert not handle.bound
    with pytest.raises(NotBound, match="the session's model is not ready yet"):
        handle.get()
    handle.bind("first")
    assert handle.bound and handle.get() == "first"
    with pytest.raises(RuntimeError, match="the session's model is bound already"):
        handle.bind("second")  # a second session's model must never serve the first one's servers
    assert handle.get() == "first"


async def test_a_servers_sampling_request_before_the_model_is_built_is_refused_not_run(tmp_path: Path) -> None:
    events: list[Event] = []
    model = ScriptedModel([reply("never")])
    unbuilt: Late[Model] = Late("the session's model")  # the runtime's handle, before anthropic has loaded
    sampler = Sampler(model=unbuilt, ledger=Ledger(MODEL), emit=events.append, approve=always, max_output_tokens=32)
    async with asking(tmp_path, sampler=sampler, events=events) as a:
        found = await a.call("sample")
        unbuilt.bind(model)
        after = await a.call("sample")
    assert "the model is not ready yet" in found["error"] and after["text"] == "never"
    assert [(e.kind, e.outcome) for e in a.asked()] == [("sampling", "refused"), ("sampling", "sampled")]
    assert len(model.requests) == 1


async def test_a_task_call_before_the_sessions_agent_exists_is_refused() -> None:
    delegator = unattached(BUILTIN_AGENTS)
    outcome = await delegator.run_task("toolu_1", {"prompt": "look around"})
    assert outcome.is_error and "subagents are not available in this session" in str(outcome.content)


async def test_a_system_prompt_given_after_start_is_sent_and_measured_for_compaction() -> None:
    loop = build_loop([reply("ok")], system="short")
    loop.agent.use_system_prompt("x" * 4000)  # an SDK's `initialize` after the session started
    # What every request carries is measured as if the prompt had been given at construction (compaction's due).
    assert loop.agent.fixed_tokens == build_loop([], system="x" * 4000).agent.fixed_tokens > 1000
    await loop.turn()
    assert loop.model.requests[0].system == "x" * 4000
