"""`jeeves mcp serve --http HOST:PORT`: the MCP server over Streamable HTTP, behind the same
Host/Origin guard and bearer token as `jeeves serve` (jeeves.server.guard, BearerAuth)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from starlette.middleware import Middleware

from jeeves.errors import UserError
from jeeves.server.app import BearerAuth
from jeeves.server.guard import RequestGuard, host_names
from jeeves.server.serve import access, address, bind, serve

__all__ = ["parse_address", "serve_http"]


def parse_address(value: str) -> tuple[str, int]:
    """`HOST:PORT` (`127.0.0.1:8765`, `[::1]:8765`) as host and port; a UserError otherwise."""
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit():
        raise UserError(f"--http {value!r} is not HOST:PORT; e.g. --http 127.0.0.1:8765.")
    return host.strip("[]"), int(port)


def serve_http(
    server: Any,
    where: str,
    *,
    token: str | None,
    allowed_hosts: Sequence[str],
    max_body_bytes: int = 1_000_000,
) -> int:
    """Serve `server` (an SDK `MCPServer`) at `where` until SIGINT or SIGTERM; a token is generated
    (and printed) when binding beyond loopback without one."""
    host, port = parse_address(where)
    token = token or os.environ.get("JEEVES_TOKEN") or None
    sock = bind(host, port)
    try:
        token, generated, hosts = access(sock, host, token, allowed_hosts)
        app = server.streamable_http_app(host=sock.getsockname()[0])
        middleware = [
            Middleware(
                RequestGuard,
                allowed_hosts=host_names(hosts),
                allowed_origins=(),
                max_body_bytes=max_body_bytes,
            )
        ]
        if token is not None:
            middleware.append(Middleware(BearerAuth, token=token, public=()))
        app.user_middleware[0:0] = middleware
        app.state.token = token
        url = address(sock) + "mcp"
        print(f"jeeves: serving MCP at {url}" + (" (token required)" if token else ""), flush=True)
        if generated:
            print(f"jeeves: generated a token; send `Authorization: Bearer {token}`", flush=True)
        serve(app, sock=sock, log_level="warning")
    finally:
        sock.close()
    return 0
