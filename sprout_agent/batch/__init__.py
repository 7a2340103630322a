"""`sprout-agent batch`: one `sprout-agent -p` subprocess per task line, on this machine or on an engine the user
already runs (array jobs, Ray); never a scheduler, queue or wire protocol of our own. docs/batch.md."""
