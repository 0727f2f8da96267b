"""The MCP surface: the server, its tools, and its stdio and HTTP transports."""
