"""`-p`: a run to completion for scripts: the text/json/stream-json sinks and the run itself; with
`--input-format stream-json` it drives the SDKs' control protocol (`faces/sdk/`)."""
