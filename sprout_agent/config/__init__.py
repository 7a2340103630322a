"""Everything decided before anything starts: the options record, settings from the environment and `.env`,
the config files (`.mcp.json`), which project servers may start (consent) and what commands run under (the
sandbox plan), and the `--json-schema` schema with its validator (the one importer of jsonschema). Imports trust/ and
core/ only; nothing here starts a process or opens a connection."""
