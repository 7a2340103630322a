"""Cassettes (docs/cassettes.md): the model's side of a session recorded once and replayed with no key and no network.

`format.py` the file's lines, read back whole and checked; `compare.py` a request in comparable form and its first
difference from the recorded one; `recorder.py` --record, the SDK's HTTP client with `send` taped; `player.py`
--replay, an HTTP transport answering from the cassette, strict or lenient, each request it serves first checked by
`api_check.py` against `api_rules.py` (with `api_rules_media.py`, `api_rules_strict.py`, `api_rules_web.py`), what the
Messages API refuses, the one copy of those rules (the tests' fake API applies them too); `eventstream.py` Bedrock's
binary event stream as the events it carries, and framed again; `divergence.py` what `sprout-agent replay` reports.
Imported only when a flag or that command asks.

Imports: core, trust.
"""
