"""Everything decided before anything starts: the options record, settings from the environment and `.env`,
the config files (`.mcp.json`), which project servers may start (consent) and what commands run under (the
sandbox plan). Imports trust/ and core/ only; nothing here starts a process or opens a connection."""
