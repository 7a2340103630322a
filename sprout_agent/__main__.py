"""`python -m sprout_agent` runs the CLI."""

from sprout_agent.launch import main

main()
