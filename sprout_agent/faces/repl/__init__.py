"""The interactive terminal session: the prompt loop, slash commands, questions to the person (tools, servers'
elicitation and sampling), `/login`, the resumed history. Draws through `faces/terminal/`."""
