"""The MCP client: the server pool (one owner of every connection), the link to one server, lists, results,
prompts and resources, and the client features servers may use (roots, elicitation, sampling);
`transports/` (stdio, in-process, sdk, http, sse) and `oauth/`. With tools/, the only importer of the mcp SDK
and httpx2; imports config/, trust/ and core/."""
