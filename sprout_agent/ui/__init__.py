"""Faces of the loop: terminal rendering (rich) and REPL input (prompt_toolkit)."""
