"""A Python MCP server with its SDK's tracing on, for tests/test_telemetry_e2e.py: `python tests/traced_mcp_server.py`.

The mcp SDK's low-level server opens a span per request, parented by the W3C trace context the client puts in the
request's `_meta`; here the OpenTelemetry SDK exports each span at once over OTLP/HTTP to
OTEL_EXPORTER_OTLP_ENDPOINT (the test's receiver). Tools: `work` -> "worked"; `refuse` -> a JSON-RPC error whose
message is $REFUSAL (as a server's error may quote the credential it was given).
"""

from __future__ import annotations

import os
from typing import Any

import anyio
from mcp import MCPError
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.types import CallToolResult, ListToolsResult, TextContent, Tool
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor


async def main() -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": "traced-mcp-server"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(timeout=5)))
    trace.set_tracer_provider(provider)

    async def on_list_tools(ctx: Any, params: Any) -> ListToolsResult:
        tools = [Tool(name=name, description=name, input_schema={"type": "object"}) for name in ("work", "refuse")]
        return ListToolsResult(tools=tools)

    async def on_call_tool(ctx: Any, params: Any) -> CallToolResult:
        if params.name == "refuse":
            raise MCPError(1, os.environ.get("REFUSAL", "refused"))
        return CallToolResult(content=[TextContent(type="text", text="worked")])

    server = Server("traced", on_list_tools=on_list_tools, on_call_tool=on_call_tool)
    try:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
    finally:
        provider.shutdown()


if __name__ == "__main__":
    anyio.run(main)
