"""`jeeves mcp serve`: jeeves architectures as MCP tools (see docs/mcp.md)."""
