"""How a prompt names a file or a server's resource: `@name`, ended by whitespace or sentence punctuation."""

TRAILING = ".,;:!?)]}'\""  # sentence punctuation after a mention is not part of the name
