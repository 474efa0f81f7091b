"""`[[mcp]]` tables: MCP servers a spec's agents may use (`mcp_servers = ["filesystem"]` in an agent table).

```toml
[[mcp]]
name = "filesystem"
command = ["npx", "-y", "@modelcontextprotocol/server-filesystem", "./repo"]
modes = { write_file = "destructive", read_text_file = "read_only" }
```
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from jeeves.approvals.policy import ApprovalMode
from jeeves.mcp.client import MCPServer
from jeeves.spec.parts import Name, SpecModel

__all__ = ["MCPServerSpec", "build_servers"]


class MCPServerSpec(SpecModel):
    """`[[mcp]]`: one MCP server (jeeves.mcp.MCPServer); give `command` (stdio) or `url` (Streamable HTTP)."""

    name: Name
    """The server's name: agents list it in their `mcp_servers`; it prefixes its tools on a name collision."""
    command: list[str] = Field(default_factory=list)
    """The command that starts the server (stdio), as a list: `["uvx", "mcp-server-git"]`."""
    url: str = ""
    """The server's Streamable HTTP endpoint, `http://127.0.0.1:8765/mcp` (instead of `command`)."""
    env: dict[str, str] = Field(default_factory=dict)
    """Environment variables for the command (never written to the journal)."""
    cwd: str = ""
    """The command's working directory, relative to the spec file; unset, the current one."""
    headers: dict[str, str] = Field(default_factory=dict)
    """HTTP headers sent with every request to `url` (an `Authorization`, say)."""
    mode: ApprovalMode | None = None
    """Every tool of the server gets this approval mode, whatever its annotations say."""
    modes: dict[str, ApprovalMode] = Field(default_factory=dict)
    """Tool name or glob → approval mode; wins over `mode` and the annotations."""
    unannotated: ApprovalMode = "destructive"
    """The approval mode of a tool the server gives no annotations."""
    timeout_s: float = Field(default=60.0, gt=0)
    """How long one tool call may take before the model reads a timeout."""
    max_result_chars: int = Field(default=20_000, ge=100)
    """A longer tool result is cut, with a notice the model reads."""
    resources: bool = False
    """Also offer `{name}_read_resource(uri)` and `{name}_get_prompt(name, arguments)` (read_only tools)."""

    @model_validator(mode="after")
    def _one_transport(self) -> MCPServerSpec:
        if bool(self.command) == bool(self.url):
            raise ValueError(
                f"[[mcp]] {self.name!r} needs either command = [...] (stdio) or url = '...' (HTTP)"
            )
        return self


def build_servers(specs: list[MCPServerSpec], base: Path | None) -> dict[str, MCPServer]:
    """One MCPServer per `[[mcp]]` table, by name (relative `cwd`s resolve beside the spec)."""
    servers: dict[str, MCPServer] = {}
    for spec in specs:
        if spec.name in servers:
            raise ValueError(f"two [[mcp]] tables are named {spec.name!r}; rename one")
        options: dict[str, Any] = {
            "name": spec.name,
            "mode": spec.mode,
            "modes": spec.modes,
            "unannotated": spec.unannotated,
            "timeout_s": spec.timeout_s,
            "max_result_chars": spec.max_result_chars,
            "resources": spec.resources,
        }
        if spec.url:
            servers[spec.name] = MCPServer.http(spec.url, headers=spec.headers, **options)
            continue
        cwd = None if not spec.cwd else (base / spec.cwd if base is not None else Path(spec.cwd))
        servers[spec.name] = MCPServer.stdio(
            spec.command[0], *spec.command[1:], env=spec.env or None, cwd=cwd, **options
        )
    return servers
