"""The subcommands that are not a session: mcp (list, doctor, import, approve/revoke, login/logout), sessions,
hooks (list, test), batch."""
