"""Pages: a recorded session (`sessions export --html`/`--json`: `session_page.py`) and a batch (`batch report`:
`batch_report.py`) as self-contained HTML files, views of the transcripts, which stay the source of truth;
`entries.py` a transcript as the entries a page shows, `charts.py` inline SVG. The only user of markdown-it (which
rich brings). Everything from a transcript is untrusted: escaped, and no script of its own runs.

Imports: faces/terminal, session, batch, core.
"""
