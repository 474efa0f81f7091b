"""MCP, both directions: MCP servers' tools in an Agent (`MCPServer`), and jeeves
architectures served as MCP tools (`jeeves mcp serve`, `jeeves.mcp.serve`). See docs/mcp.md."""

from jeeves.mcp.client import MCPServer, MCPServerError, MCPTool, annotation_mode

__all__ = ["MCPServer", "MCPServerError", "MCPTool", "annotation_mode"]
