"""Everything decided before anything starts; nothing here starts a process or opens a connection.

`options.py` (`Options`, one field per flag), `settings.py` and `env_vars.py` (the environment variables, one table;
`.env.example` is generated from it), `provider.py` (which provider answers: Claude Code's variables, each
provider's features and model ids), `dotenv_file.py` and `guarded_env.py` (a project's `.env`, and the names it
may not set), `sources.py` (which config files a run reads), `files.py` (the `mcpServers` JSON parsed, expanded and
checked into `server_config.py`'s types, plus the built-in servers) with `compat.py`, `remote.py`, `expansion.py`
and `server_names.py`; `consent.py` (which project servers may start); `claude_settings.py` and
`applied_settings.py` (Claude Code's settings files, read and applied) with `local_settings.py` (an "always"
answer written to `.claude/settings.local.json`); `sandboxing.py` (the sandbox plan);
`mcp_import.py` (`mcp import claude`); `locations.py` (every user directory: the one module that asks
platformdirs); `output_schema.py` (the `--json-schema` schema and its validator: the one importer of jsonschema);
`definitions.py` and `definition_files.py` (agents, skills and commands kept in Markdown) with `skill_reading.py`;
`output_styles.py` (the settings' `outputStyle`); `credential_commands.py` (the commands that fetch or refresh
the provider's credentials: apiKeyHelper, awsAuthRefresh, awsCredentialExport, gcpAuthRefresh).

Imports: trust, core.
"""
