"""The stream-json prompt queue (faces/sdk/prompt_queue.py) under a writer that runs ahead of the turns: bounded
in bytes in memory, spilled to disk, stdin held back beyond both, nothing dropped or reordered, and never a wedge:
a request of ours is answered even when its answer comes behind a full queue. In-process, with the real `Control`
reading lines from a stream the test writes, and small bounds (the e2e test measures the real ones)."""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import anyio
import pytest
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from tests.bounds import bounded

if TYPE_CHECKING:  # they load mcp (stdio_wire): imported where used (tests/conftest.py)
    from sprout_agent.faces.sdk.control import Control
    from sprout_agent.faces.sdk.prompt_queue import PromptQueue
    from sprout_agent.mcp.transports.framing import Oversized

pytestmark = pytest.mark.anyio
PROMPT_BYTES = 1000  # what each test prompt's line costs queued in memory, at most (its bytes and the queue's own)


def user_line(number: int) -> bytes:
    text = f"prompt {number} " + "x" * (PROMPT_BYTES - 160)
    return json.dumps({"type": "user", "message": {"role": "user", "content": text}}).encode()


class Stdin:
    """The lines the test writes, and how many of them the reader has taken so far."""

    def __init__(self) -> None:
        self.send: MemoryObjectSendStream[bytes | Oversized]
        self._receive: MemoryObjectReceiveStream[bytes | Oversized]
        self.send, self._receive = anyio.create_memory_object_stream(0)  # a write waits for a read
        self.taken = 0

    async def lines(self) -> AsyncIterator[bytes | Oversized]:
        receive: MemoryObjectReceiveStream[bytes | Oversized] = self._receive
        async with receive:
            async for line in receive:
                self.taken += 1
                yield line


def control_with(queue: PromptQueue, handlers: dict[str, object] | None = None) -> tuple[Control, io.StringIO]:
    from sprout_agent.faces.sdk.control import Control, LineWriter

    out = io.StringIO()
    return Control(LineWriter(out), handlers or {}, queue=queue), out  # type: ignore[arg-type]


def bounded_queue(memory_prompts: int, spool_prompts: int) -> PromptQueue:
    from sprout_agent.faces.sdk.prompt_queue import PromptQueue

    return PromptQueue(memory_bytes=memory_prompts * PROMPT_BYTES, spool_bytes=spool_prompts * PROMPT_BYTES)


async def texts(control: Control, count: int) -> list[str]:
    from sprout_agent.faces.sdk.control import Skipped, prompts_of

    got: list[str] = []
    async for queued in prompts_of(control):
        assert not isinstance(queued, Skipped)
        got.append(queued[0].split(" x")[0])
        if len(got) == count:
            break
    return got


async def test_ten_big_prompts_written_during_a_turn_stay_under_the_memory_bound_in_order() -> None:
    # Every line read was kept parsed, unbounded: ten 15 MiB prompts during a turn took about 800 MB.
    queue = bounded_queue(3, 100)
    control, _ = control_with(queue)
    stdin = Stdin()
    peak = 0
    with anyio.fail_after(bounded(10)):
        async with anyio.create_task_group() as group:
            group.start_soon(control.run, stdin.lines())
            async with stdin.send:
                for number in range(10):
                    await stdin.send.send(user_line(number))
                    peak = max(peak, queue.in_memory)  # the lines before this one are queued
            got = await texts(control, 10)
    assert got == [f"prompt {n}" for n in range(10)]  # none dropped, none reordered
    assert peak <= 3 * PROMPT_BYTES  # the rest waited on disk
    assert queue.queued_bytes == 0


async def test_a_writer_that_fills_memory_and_spool_is_held_back_until_a_turn_takes_a_prompt() -> None:
    queue = bounded_queue(2, 2)
    control, _ = control_with(queue)
    stdin = Stdin()
    got: list[str] = []
    with anyio.fail_after(bounded(10)):
        async with anyio.create_task_group() as group:
            group.start_soon(control.run, stdin.lines())

            async def write_all() -> None:
                async with stdin.send:
                    for number in range(8):
                        await stdin.send.send(user_line(number))

            group.start_soon(write_all)
            await anyio.wait_all_tasks_blocked()
            held = stdin.taken  # the reader stopped reading: the writer waits (in a real pipe, blocks)
            assert queue.full and held < 8
            got += await texts(control, 1)
            await anyio.wait_all_tasks_blocked()
            assert stdin.taken == held + 1  # one taken, one more read
            got += await texts(control, 7)
    assert got == [f"prompt {n}" for n in range(8)]


async def test_a_can_use_tool_answer_behind_a_full_queue_still_arrives_and_nothing_is_lost() -> None:
    # Holding stdin while the queue is full would wedge a turn that waits for the SDK's answer: the SDK writes its
    # lines one after another, so the answer is in the pipe behind the prompts we would not read.
    queue = bounded_queue(2, 1)
    control, _ = control_with(queue)
    stdin = Stdin()
    answers: list[dict[str, object]] = []
    answer = {"type": "control_response", "response": {"subtype": "success", "request_id": "sprout_1"}}
    with anyio.fail_after(bounded(10)):
        async with anyio.create_task_group() as group:
            group.start_soon(control.run, stdin.lines())
            for number in range(4):
                await stdin.send.send(user_line(number))
            await anyio.wait_all_tasks_blocked()
            assert queue.full  # the reader is held back now: a fifth line would wait

            async def ask() -> None:
                answers.append(await control.request("can_use_tool", {"tool_name": "Bash"}, timeout=bounded(10)))

            group.start_soon(ask)
            async with stdin.send:
                for number in range(4, 7):  # more prompts, then the answer, as a single writer sends them
                    await stdin.send.send(user_line(number))
                await stdin.send.send(json.dumps(answer).encode())
                await stdin.send.send(user_line(7))
            got = await texts(control, 8)
    assert answers == [{}]
    assert got == [f"prompt {n}" for n in range(8)]
    assert queue.in_memory <= 2 * PROMPT_BYTES  # what ran past the bound went to disk


async def test_an_interrupt_behind_queued_prompts_is_answered_while_they_wait() -> None:
    interrupted: list[dict[str, object]] = []

    async def interrupt(request: dict[str, object]) -> dict[str, object]:
        interrupted.append(request)
        return {}

    queue = bounded_queue(2, 50)
    control, out = control_with(queue, {"interrupt": interrupt})
    stdin = Stdin()
    request = {"type": "control_request", "request_id": "int_1", "request": {"subtype": "interrupt"}}
    with anyio.fail_after(bounded(10)):
        async with anyio.create_task_group() as group:
            group.start_soon(control.run, stdin.lines())
            async with stdin.send:
                for number in range(10):
                    await stdin.send.send(user_line(number))
                await stdin.send.send(json.dumps(request).encode())
            await anyio.wait_all_tasks_blocked()
            assert interrupted and queue.queued_bytes > 8 * PROMPT_BYTES  # answered; no prompt was taken yet
            got = await texts(control, 10)
    assert got == [f"prompt {n}" for n in range(10)]
    responses = [json.loads(line)["response"] for line in out.getvalue().splitlines()]
    assert responses == [{"subtype": "success", "request_id": "int_1", "response": {}}]


async def test_a_skipped_line_keeps_its_place_among_spilled_prompts() -> None:
    from sprout_agent.faces.sdk.control import Skipped, prompts_of
    from sprout_agent.mcp.transports.framing import MAX_MESSAGE_BYTES, Oversized

    queue = bounded_queue(1, 50)
    control, _ = control_with(queue)
    stdin = Stdin()
    over = Oversized(MAX_MESSAGE_BYTES + 1, b'{"type": "user", "text": "xx', b'xx"}')
    with anyio.fail_after(bounded(10)):
        async with anyio.create_task_group() as group:
            group.start_soon(control.run, stdin.lines())
            async with stdin.send:
                for line in (user_line(0), user_line(1), over, user_line(2)):
                    await stdin.send.send(line)
            got = [queued async for queued in prompts_of(control)]
    kinds = [queued.reason[:12] if isinstance(queued, Skipped) else queued[0][:8] for queued in got]
    assert kinds == ["prompt 0", "prompt 1", "stdin line 3", "prompt 2"]


async def test_a_prompt_the_spool_file_cannot_take_ends_the_reading_with_that_error_not_a_silent_drop() -> None:
    # A full disk, here a file size limit: the line cannot wait anywhere, so the run ends there (exit 2) after the
    # turns before it, as a bad line would, rather than losing it or crashing the reader.
    import resource
    import signal

    from sprout_agent.core.errors import UsageError
    from sprout_agent.faces.sdk.control import Skipped, prompts_of

    queue = bounded_queue(2, 50)
    control, _ = control_with(queue)
    stdin = Stdin()
    got: list[str] = []
    limits = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write then fails with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (3 * PROMPT_BYTES, limits[1]))  # the file takes three lines
    try:
        with anyio.fail_after(bounded(10)):
            async with anyio.create_task_group() as group:
                group.start_soon(control.run, stdin.lines())
                async with stdin.send:
                    for number in range(6):  # two in memory, three in the file, and the sixth it cannot take
                        await stdin.send.send(user_line(number))
                with pytest.raises(UsageError, match="stdin line 6: could not queue it: File too large"):
                    async for queued in prompts_of(control):
                        assert not isinstance(queued, Skipped)
                        got.append(queued[0].split(" x")[0])
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, limits)
        signal.signal(signal.SIGXFSZ, previous)
    assert got == [f"prompt {n}" for n in range(5)]


def control_request(number: int, pad: int = 0) -> bytes:
    request = {"subtype": "mcp_status", "pad": "x" * pad}
    return json.dumps({"type": "control_request", "request_id": f"r{number}", "request": request}).encode()


async def test_a_flood_of_control_requests_that_wait_is_bounded_and_the_rest_are_refused_at_once() -> None:
    """Attack B: each control request was answered by a task of its own holding the whole request, unbounded: forty
    8 MB `mcp_status` lines sent while the servers started took 340 MB. Now at most a few wait (in number and bytes);
    the others get an error answer at once, stdin is still read, and a freed slot takes the next request."""
    from sprout_agent.faces.sdk.control import Control, LineWriter
    from sprout_agent.faces.sdk.prompt_queue import PromptQueue

    started = anyio.Event()
    release = anyio.Event()
    handled: list[int] = []

    async def mcp_status(request: dict[str, object]) -> dict[str, object]:
        handled.append(len(str(request["pad"])))
        started.set()
        await release.wait()  # as a request that comes while the servers start waits for them
        return {"mcpServers": []}

    out = io.StringIO()
    control = Control(LineWriter(out), {"mcp_status": mcp_status}, queue=PromptQueue(), waiting=(4, 10_000))
    stdin = Stdin()
    with anyio.fail_after(bounded(10)):
        async with anyio.create_task_group() as group:
            group.start_soon(control.run, stdin.lines())
            async with stdin.send:
                for number in range(20):
                    await stdin.send.send(control_request(number, pad=1000))
                await stdin.send.send(control_request(20, pad=9_000))  # over the bytes left: refused
                await anyio.wait_all_tasks_blocked()
                assert len(handled) == 4
                release.set()
                await anyio.wait_all_tasks_blocked()
                await stdin.send.send(control_request(21, pad=9_000))  # the slots are free again
    answers = {r["response"]["request_id"]: r["response"] for r in map(json.loads, out.getvalue().splitlines())}
    assert sorted(answers) == sorted(f"r{n}" for n in range(22))  # every request answered, none dropped
    ok = sorted(int(i[1:]) for i, a in answers.items() if a["subtype"] == "success")
    assert ok == [0, 1, 2, 3, 21] and handled == [1000] * 4 + [9000]
    assert all("too many control requests" in answers[f"r{n}"]["error"] for n in range(4, 21))
