"""A session's life: `prepared` (everything decided from the options, the session to resume included),
`runtime` (one async context manager owns the servers, the model client and the agent; `server_pool`,
`model_building` and `assembly` build them, each given its collaborators at construction), the transcript store
and the session index. Imports mcp/, model/, config/, trust/ and core/."""
