"""The subcommands that are not a session: `servers.py` (the `mcp` and `hooks` apps) with `doctor.py` (`mcp list`,
`mcp doctor`, `hooks`), `hooks_test.py` with `command_hooks_test.py`, `consent.py` (`mcp approve`, `revoke`),
`oauth.py` (`mcp login`, `logout`); `sessions_app.py` (the `sessions` app) with `sessions.py` and
`session_rewind.py`; `batch.py`; `warm_doctor.py` (`sprout-agent doctor`: the warm interpreters) with
`provider_doctor.py` (its provider check); `replay.py` (a recorded session re-run against today's tools and hooks).
"""
