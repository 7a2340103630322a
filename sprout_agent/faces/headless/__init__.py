"""`-p`: a run to completion for scripts: the text/json/stream-json sinks, the SDKs' control protocol over
stdin (interrupt, permission questions, model switch) and the SDK session they drive."""
