"""`python -m sprout_agent` runs the CLI."""

from sprout_agent.faces.cli.launch import main

main()
