"""The floor for scripts/bench: a minimal anthropic + mcp agent loop, with nothing of sprout-agent in it.

Usage: python scripts/minimal_loop.py PROMPT SERVER_COMMAND [ARGS...]. ANTHROPIC_BASE_URL and
ANTHROPIC_API_KEY come from the environment; the one server's tools are offered as `fake__<tool>`.
"""

import os
import sys
from typing import Any, cast

import anthropic
import anyio
from anthropic.types import MessageParam, ToolParam
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

PREFIX = "fake__"


async def run(prompt: str, command: str, args: list[str]) -> str:
    params = StdioServerParameters(command=command, args=args, env=dict(os.environ))
    with open(os.devnull, "w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            listed = await session.list_tools()
            tools: list[ToolParam] = [
                {"name": PREFIX + t.name, "description": t.description or "", "input_schema": t.input_schema}
                for t in listed.tools
                if not t.name.startswith("_") and "." not in t.name
            ]
            client = anthropic.AsyncAnthropic(max_retries=0)
            messages: list[MessageParam] = [{"role": "user", "content": prompt}]
            while True:
                async with client.messages.stream(
                    model="claude-sonnet-4-5", max_tokens=4096, messages=messages, tools=tools
                ) as stream:
                    message = await stream.get_final_message()
                # Plain dicts, as a minimal loop would send them; the SDK's TypedDicts do not describe model_dump().
                dumped = cast(Any, [b.model_dump() for b in message.content])
                messages.append({"role": "assistant", "content": dumped})
                uses = [b for b in message.content if b.type == "tool_use"]
                if message.stop_reason != "tool_use" or not uses:
                    return "".join(b.text for b in message.content if b.type == "text")
                results: list[Any] = []
                for use in uses:
                    result = await session.call_tool(use.name.removeprefix(PREFIX), dict(use.input))
                    content = [{"type": "text", "text": c.text} for c in result.content if c.type == "text"]
                    results.append(
                        {
                            "type": "tool_result",
                            "tool_use_id": use.id,
                            "content": content,
                            "is_error": result.is_error,
                        }
                    )
                messages.append({"role": "user", "content": results})


def main() -> None:
    answer = anyio.run(run, sys.argv[1], sys.argv[2], sys.argv[3:])
    print(answer, flush=True)


if __name__ == "__main__":
    main()
