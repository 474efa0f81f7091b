"""The `mcp` SDK's client for one `MCPServer` (imported lazily: `import jeeves` needs no `mcp`).

Everything on the wire is the SDK's: `mcp.Client` over `stdio_client` or
`streamable_http_client`. jeeves adds what it must know of the session: that the server's
tool list changed (`notifications/tools/list_changed` on a 2025-era session; a
`subscriptions/listen` stream on a 2026-07-28 one), and the server's requests for input
(elicitation, sampling), answered through the agent session whose call is in flight.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio

from jeeves.errors import UserError
from jeeves.mcp.client.connection import Connection

if TYPE_CHECKING:
    from jeeves.mcp.client.toolset import MCPServer

__all__ = ["open_client"]


def _sdk() -> Any:
    try:
        import mcp
    except ImportError:
        raise UserError(
            "MCP servers need the `mcp` package; install jeeves with its mcp extra: pip install 'jeeves[mcp]'."
        ) from None
    return mcp


@asynccontextmanager
async def _http(url: str, headers: dict[str, str]) -> AsyncIterator[Any]:
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with (
        create_mcp_http_client(headers=headers or None) as http,
        streamable_http_client(url, http_client=http) as streams,
    ):
        yield streams


def _client(server: MCPServer, conn: Connection) -> Any:
    mcp = _sdk()
    from jeeves.mcp.client.asks import elicitation_callback, sampling_callback

    async def on_message(message: Any) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            conn.changed = True
        await anyio.lowlevel.checkpoint()

    if server.transport == "stdio":
        target: Any = mcp.StdioServerParameters(
            command=server.command, args=list(server.args), env=server.env, cwd=server.cwd
        )
    else:
        target = _http(server.url, server.headers)
    return mcp.Client(
        target,
        message_handler=on_message,
        sampling_callback=sampling_callback(conn),
        elicitation_callback=elicitation_callback(conn, server.name),
        client_info=mcp.Implementation(name="jeeves", version="0.1.0"),
    )


@asynccontextmanager
async def open_client(server: MCPServer, conn: Connection) -> AsyncIterator[Any]:
    """An entered `mcp.Client` for `server`, noting tool-list changes on `conn`."""
    async with _client(server, conn) as client:
        tools = getattr(client.server_capabilities, "tools", None)
        if client.protocol_version < "2026" or not getattr(tools, "list_changed", False):
            yield client
            return
        async with anyio.create_task_group() as group:
            group.start_soon(_listen, client, conn)
            try:
                yield client
            finally:
                group.cancel_scope.cancel()


async def _listen(client: Any, conn: Connection) -> None:
    """Follow a 2026-07-28 server's tool-list changes."""
    try:
        async with client.listen(tools_list_changed=True) as subscription:
            async for _event in subscription:
                conn.changed = True
    except anyio.get_cancelled_exc_class():
        raise
    except Exception:
        # Refused, or the connection went: a new connection lists anew (`Connection.client`);
        # a live one that will not say when its list changes is asked at every turn.
        conn.relist = conn.is_open
