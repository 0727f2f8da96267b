"""The HTTP plumbing the MCP transport (`surfaces/mcp/http.py`) and the web console
(`surfaces/ui/`) share; neither imports the other, both import this.

asgi.py     the ASGI type aliases, reading a request header, sending a whole answer
access.py   who may connect: loopback hosts, the Host-header check, the token a server needs
listen.py   the listening socket, the uvicorn server that says when it is ready, DEFAULT_HOST
"""
