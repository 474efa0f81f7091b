"""A small MCP server (the SDK's own) that misbehaves on purpose, for the fault tests only.

`JEEVES_FAULTY_SCHEMA=2` gives `echo` another input schema (a server upgraded between a
recording and its resume)."""

from __future__ import annotations

import fcntl
import json
import os
import stat
import threading

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("faulty")
NEVER = threading.Event()
"""Never set: the calls that must not answer wait on it until the client ends this process."""

if os.environ.get("JEEVES_FAULTY_SCHEMA") == "2":

    @server.tool()
    def echo(text: str, times: int) -> str:
        """Echo text, several times."""
        return text * times

else:

    @server.tool()
    def echo(text: str) -> str:
        """Echo text."""
        return text


@server.tool()
def die() -> str:
    """Exit the server process in the middle of the call."""
    os._exit(3)


@server.tool()
def hang() -> str:
    """Never answer."""
    NEVER.wait()
    return "unreachable"


@server.tool()
def malformed(ctx: Context) -> str:
    """Answer this call with a JSON-RPC response whose result is not a CallToolResult."""
    request_id = int(ctx.request_id) if str(ctx.request_id).isdigit() else ctx.request_id
    response = {"jsonrpc": "2.0", "id": request_id, "result": {"content": "not a list", "isError": "maybe"}}
    os.write(_wire(), (json.dumps(response) + "\n").encode())
    NEVER.wait()
    return "unreachable"


def _wire() -> int:
    """The descriptor the SDK serves the wire on: it moves stdout to a private duplicate (a
    pipe above 2) and points fd 1 at stderr."""
    stderr = os.fstat(2).st_ino
    for fd in range(3, 64):
        try:
            info, flags = os.fstat(fd), fcntl.fcntl(fd, fcntl.F_GETFL)
        except OSError:
            continue
        writable = flags & os.O_ACCMODE == os.O_WRONLY
        if stat.S_ISFIFO(info.st_mode) and writable and info.st_ino != stderr:
            return fd
    return 1


if __name__ == "__main__":
    server.run()
