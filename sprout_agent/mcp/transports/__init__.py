"""How a server is reached: a stdio child (our own wire, process group and caps), in-process (the built-in
servers), the Agent SDKs' servers over the control protocol, Streamable HTTP and SSE."""
