"""The MCP client side: an MCP server's tools inside an Agent (see docs/mcp.md)."""

from jeeves.mcp.client.connection import MCPServerError
from jeeves.mcp.client.modes import annotation_mode, resolve_mode
from jeeves.mcp.client.toolset import ListedTool, MCPServer, MCPTool

__all__ = ["ListedTool", "MCPServer", "MCPServerError", "MCPTool", "annotation_mode", "resolve_mode"]
