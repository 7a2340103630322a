"""Pages: a recorded session (`sessions export --html`/`--json`) and a batch (`batch report`) as self-contained
HTML files, views of the transcripts, which stay the source of truth. Imports session and below; the only user of
markdown-it (which rich brings). Everything from a transcript is untrusted: escaped, and no script of its own runs.
"""
