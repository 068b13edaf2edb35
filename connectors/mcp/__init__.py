"""MCP servers as connectors (docs/mcp.md): each server in ``SWITCHBOARD_MCP_SERVERS`` is
one connector agent whose tools are the server's, kept connected by ``McpRuntime``."""
