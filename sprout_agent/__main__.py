"""`python -m sprout_agent` runs the CLI."""

from sprout_agent.cli import main

main()
