"""`jeeves mcp serve`: jeeves architectures as MCP tools (see docs/mcp.md).

Each target (a spec file or a `module:attr` reference, as `jeeves worker` takes them) is
one tool; see `jeeves.mcp.serve.tools` for what a call does. Over stdio by default, over
Streamable HTTP with `--http HOST:PORT` (`jeeves.mcp.serve.http`).
"""

from __future__ import annotations

from collections.abc import Sequence

import anyio

from jeeves.durable.targets import load_targets
from jeeves.mcp.serve.tools import ServedRun, build_server, run_id, tool_name

__all__ = ["ServedRun", "run_id", "serve_mcp", "tool_name"]


def serve_mcp(
    targets: Sequence[str],
    *,
    journal: str | None = None,
    http: str | None = None,
    token: str | None = None,
    allowed_hosts: Sequence[str] = (),
    offline: bool = False,
) -> int:
    """Serve `targets` as MCP tools over stdio (default) or Streamable HTTP at `http`."""
    server = build_server(load_targets(list(targets), offline=offline), journal=journal)
    if http is None:
        anyio.run(server.run_stdio_async)
        return 0
    from jeeves.mcp.serve.http import serve_http

    return serve_http(server, http, token=token, allowed_hosts=allowed_hosts)
