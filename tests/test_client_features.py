"""What the client offers MCP servers (roots, elicitation, sampling), proven against a real SDK server (MCPServer)
running in-process through the real pool: each test's server tool asks the client, and answers with what came back.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import anyio
import pytest

from sprout_agent.config.files import ServerConfig
from sprout_agent.config.locations import Locations
from sprout_agent.config.options import Options
from sprout_agent.core.events import Event, ServerAsked
from sprout_agent.core.late import Late
from sprout_agent.core.ledger import Ledger
from sprout_agent.core.messages import Usage, user_text
from sprout_agent.core.protocols import Model
from sprout_agent.faces.acp.sessions import AcpSession
from sprout_agent.mcp.client_features import ClientFeatures, Roots, roots_for
from sprout_agent.mcp.elicitation import Answer, Elicitor, FormQuestion, Question, Unattended
from sprout_agent.mcp.pool import ServerPool
from sprout_agent.mcp.sampling import Approve, Sampler, SamplingRequest, always
from sprout_agent.session.prepared import Prepared, prepare
from sprout_agent.session.runtime import open_runtime
from tests.bounds import bounded
from tests.fake_anthropic import FakeAnthropic, tool_use
from tests.fake_anthropic import reply as reply_api
from tests.harness import API_KEY
from tests.loop_doubles import MODEL, ScriptedModel, reply

pytestmark = pytest.mark.anyio


@dataclass
class Asking:
    pool: ServerPool
    events: list[Event]
    features: ClientFeatures

    async def call(self, tool: str, **arguments: object) -> dict[str, Any]:
        spec = next(spec for spec in self.pool.tools() if spec.tool == tool)
        outcome = await self.pool.call(spec, dict(arguments))
        assert not outcome.is_error, outcome
        return json.loads("".join(getattr(block, "text", "") for block in outcome.content))

    def asked(self) -> list[ServerAsked]:
        return [event for event in self.events if isinstance(event, ServerAsked)]


@asynccontextmanager
async def asking(
    cwd: Path, *, elicit: Elicitor | None = None, sampler: Sampler | None = None, events: list[Event] | None = None
) -> AsyncIterator[Asking]:
    events = events if events is not None else []
    features = ClientFeatures(Roots(roots_for(cwd)), events.append, elicit or Unattended(), sampler)
    config = ServerConfig(
        name="asking", command="", transport="in-process", in_process="tests.asking_server", cwd=str(cwd)
    )
    pool = ServerPool(
        [config],
        emit=events.append,
        start_timeout=bounded(20),
        tool_timeout=bounded(20),
        result_max_bytes=50_000,
        child_env=dict,
        client=features,
    )
    with anyio.fail_after(bounded(30)):
        async with pool:
            yield Asking(pool, events, features)


def sampler_with(model: ScriptedModel, events: list[Event], approve: Approve = always, **kw: Any) -> Sampler:
    built: Late[Model] = Late("the session's model")
    built.bind(model)
    cap = kw.pop("cap", 32)
    return Sampler(model=built, ledger=Ledger(MODEL), emit=events.append, approve=approve, max_output_tokens=cap, **kw)


# ---------------------------------------------------------------- roots and declared capabilities


async def test_roots_are_the_working_directory_and_its_git_root_with_claude_codes_capabilities(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    cwd = tmp_path / "pkg"
    cwd.mkdir()
    async with asking(cwd) as a:
        found = await a.call("roots")
    assert found["roots"] == [[cwd.as_uri(), "pkg"], [tmp_path.as_uri(), f"{tmp_path.name} (git root)"]]
    # Claude Code's declaration; no sampling without a way to approve it.
    assert found["declared"] == {"roots": {"listChanged": True}, "elicitation": {"form": {}, "url": {}}}


async def test_a_change_of_roots_reaches_the_server_as_list_changed_and_a_new_listing(tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    async with asking(tmp_path) as a:
        assert (await a.call("roots"))["heard"] == []
        await a.features.roots.change(roots_for(other))
        await a.features.roots.change(roots_for(other))  # the same roots again: nothing to tell
        with anyio.fail_after(bounded(5)):
            while not (found := await a.call("roots"))["heard"]:
                await anyio.lowlevel.checkpoint()
    assert found["heard"] == ["roots/list_changed"]
    assert found["roots"] == [[other.as_uri(), "other"]]


# ---------------------------------------------------------------- elicitation


async def test_a_question_is_declined_with_nobody_to_ask_and_said_with_the_servers_name(tmp_path: Path) -> None:
    async with asking(tmp_path) as a:
        assert await a.call("ask") == {"action": "decline", "content": None}
    assert a.asked() == [ServerAsked("asking", "elicitation", "Who are you?", "decline", "nobody to ask")]


async def test_accept_defaults_answers_with_every_default_of_the_schema(tmp_path: Path) -> None:
    async with asking(tmp_path, elicit=Unattended("accept-defaults")) as a:
        found = await a.call("ask")
    defaults = {"name": "Ada", "age": 36, "score": 0.5, "subscribe": True, "colour": "green"}
    assert found == {"action": "accept", "content": defaults}
    assert a.asked()[0].outcome == "accept"


async def test_accept_defaults_declines_when_a_required_field_has_no_default(tmp_path: Path) -> None:
    async with asking(tmp_path, elicit=Unattended("accept-defaults")) as a:
        assert (await a.call("ask", required_city=True))["action"] == "decline"
    assert "required field has no default" in a.asked()[0].detail


async def test_a_url_is_never_accepted_unattended_even_with_accept_defaults(tmp_path: Path) -> None:
    async with asking(tmp_path, elicit=Unattended("accept-defaults")) as a:
        assert await a.call("visit") == {"action": "decline"}
    assert "never opened unattended" in a.asked()[0].detail


async def test_an_answer_that_fails_the_forms_checks_is_declined_never_sent(tmp_path: Path) -> None:
    async def careless(question: Question) -> Answer:
        assert isinstance(question, FormQuestion)
        return Answer("accept", {"age": 200, "colour": "blue", "extra": "x"})

    async with asking(tmp_path, elicit=careless) as a:
        assert await a.call("ask") == {"action": "decline", "content": None}
    detail = a.asked()[0].detail
    for wrong in ("name: required", "age: must be at most 150", "colour: must be one of red, green", "extra"):
        assert wrong in detail


# ---------------------------------------------------------------- sampling


async def test_sampling_is_refused_headless_unless_allowed(tmp_path: Path) -> None:
    async with asking(tmp_path) as a:
        found = await a.call("sample")
    assert "not supported" in found["error"]


async def test_allowed_sampling_runs_through_the_model_bounded_without_tools_and_counted(tmp_path: Path) -> None:
    events: list[Event] = []
    model = ScriptedModel([reply("hi there", usage=Usage(100, 10))])
    sampler = sampler_with(model, events, cap=32)
    async with asking(tmp_path, sampler=sampler, events=events) as a:
        found = await a.call("sample", max_tokens=50)
        declared = (await a.call("roots"))["declared"]
    assert found == {"text": "hi there", "model": MODEL, "stop_reason": "endTurn"}
    request = model.requests[0]
    assert (request.max_tokens, request.tools, request.system) == (32, (), "Be brief")  # our cap under theirs
    assert [m.text for m in request.messages] == ["Say hi"]
    ledger = sampler._ledger  # pyright: ignore[reportPrivateUsage]
    assert ledger.requests == 1 and ledger.cost == pytest.approx((100 * 3 + 10 * 15) / 1e6)
    assert [(e.kind, e.outcome) for e in a.asked()] == [("sampling", "sampled")]
    assert "sampling" in declared


async def test_sampling_is_refused_once_the_budget_is_spent(tmp_path: Path) -> None:
    events: list[Event] = []
    model = ScriptedModel([])
    sampler = sampler_with(model, events, max_budget_usd=0.0)
    async with asking(tmp_path, sampler=sampler, events=events) as a:
        found = await a.call("sample")
    assert found["code"] == -1 and "budget" in found["error"]
    assert model.requests == []


async def test_sampling_the_person_declines_never_reaches_the_model(tmp_path: Path) -> None:
    events: list[Event] = []
    seen: list[SamplingRequest] = []

    async def no(request: SamplingRequest) -> bool:
        seen.append(request)
        return False

    model = ScriptedModel([])
    async with asking(tmp_path, sampler=sampler_with(model, events, approve=no), events=events) as a:
        found = await a.call("sample")
    assert "declined" in found["error"] and model.requests == []
    assert seen[0].summary() == "1 message(s); the last: 'Say hi'"


async def test_sampling_content_we_cannot_send_validly_is_rejected_before_the_model(tmp_path: Path) -> None:
    events: list[Event] = []
    model = ScriptedModel([])
    async with asking(tmp_path, sampler=sampler_with(model, events), events=events) as a:
        found = await a.call("sample", audio=True)
    assert "audio content is not supported" in found["error"] and model.requests == []


# ---------------------------------------------------------------- the faces' wiring


def prepared_with_asking_server(tmp_path: Path, base_url: str, **options: Any) -> Prepared:
    env = {"ANTHROPIC_API_KEY": API_KEY, "ANTHROPIC_BASE_URL": base_url, "SPROUT_AGENT_BUILTIN_SERVERS": "none"}
    locations = Locations(None, None, tmp_path / "data", None)
    prepared = prepare(Options(prompt="go", cwd=tmp_path, **options), locations, env)
    asking_config = ServerConfig(
        name="asking", command="", transport="in-process", in_process="tests.asking_server", cwd=str(tmp_path)
    )
    return replace(prepared, loaded=replace(prepared.loaded, servers=(asking_config,)))


@pytest.mark.e2e
async def test_headless_allow_sampling_runs_on_the_sessions_model_and_counts_in_its_ledger(tmp_path: Path) -> None:
    steps = [reply_api(tool_use("asking__sample", {"max_tokens": 64})), reply_api("sampled words"), reply_api("done")]
    events: list[Event] = []
    with FakeAnthropic(steps) as fake, anyio.fail_after(bounded(30)):
        prepared = prepared_with_asking_server(tmp_path, fake.base_url, allow_sampling=True)
        async with open_runtime(prepared, events.append) as runtime:
            result = await runtime.agent.run_turn("go")
            ledger = runtime.agent.ledger
        bodies = [r.body for r in fake.requests]
    assert result.text == "done"
    sampled = bodies[1]
    assert (sampled["max_tokens"], sampled.get("tools"), sampled["messages"][0]["content"][0]["text"]) == (
        64,
        None,
        "Say hi",
    )
    assert json.loads(bodies[2]["messages"][-1]["content"][0]["content"][0]["text"])["text"] == "sampled words"
    assert ledger.requests == 3  # the server's model call is on the session's bill
    assert [(e.server, e.outcome) for e in events if isinstance(e, ServerAsked)] == [("asking", "sampled")]


class EditorConnection:
    """What AcpSession needs of the connection: the editor answers each permission question from a script."""

    def __init__(self, *answers: object) -> None:
        self.answers = list(answers)
        self.asked: list[Any] = []

    def notify(self, method: str, params: Any) -> None:
        del method, params

    async def request(self, method: str, params: Any) -> object:
        self.asked.append((method, params))
        return self.answers.pop(0)


async def test_acp_asks_the_editor_before_a_server_samples_and_only_during_a_prompt(tmp_path: Path) -> None:
    prepared = prepared_with_asking_server(tmp_path, "http://127.0.0.1:9")
    allow = {"outcome": {"outcome": "selected", "optionId": "allow_once"}}
    conn = EditorConnection(allow, {"outcome": {"outcome": "cancelled"}})
    session = AcpSession(prepared, conn)  # type: ignore[arg-type]
    request = SamplingRequest("asking", (user_text("hi \x1b[2J"),), "", 20)
    assert not await session.approve_sampling(request)  # no prompt running: nobody to ask
    session.busy = True
    assert await session.approve_sampling(request)
    assert not await session.approve_sampling(request)
    method, params = conn.asked[0]
    assert method == "session/request_permission" and params["toolCall"]["toolCallId"] == "sprout_sampling_1"
    assert "asks to use the model" in params["toolCall"]["title"]
