"""The model side: the only importer of anthropic.

`client.py` (streaming, retries, the fallback model) with `providers.py` (the SDK's Bedrock, Vertex or Foundry client,
and renewing their credentials), `catalog.py` (a model's Models API entry, the known models), `sdk_errors.py` (the SDK's
errors read), `key_helper.py` (the one runner of the credential commands: a key, AWS keys, a login) with
`credentials.py` (renewing them before they expire and after a 401/403), `probe.py` (`doctor`'s one request),
`api_messages.py` our messages as the API's JSON, `reply_stream.py` the reply built from the raw stream events,
`api_errors.py` a failed request in words, `facts.py` each model's window, output cap, thinking and effort (the Models
API, cached), `switch.py` `/model` and `/effort`, `web_tools.py` the API's web search and fetch, `strict_schema.py` a
tool schema in the structured-outputs subset, `rate_gate.py` the file a batch's runs share to back off together,
`silence.py` the notice that a request has gone quiet, `system_prompt.py`, `lazy_sdk.py` the SDK's
re-exporting packages loaded on first use; `cassettes/` --record and --replay, the
model's side of a session as a file. `entra.py`: Foundry's Entra ID token (azure-identity).

Imports: config, trust, core.
"""
