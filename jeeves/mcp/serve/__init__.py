"""`jeeves mcp serve`: jeeves architectures as MCP tools (see docs/mcp.md).

Each target (a spec file or a `module:attr` reference, as `jeeves worker` takes them) is
one tool; see `jeeves.mcp.serve.tools` for what a call does. Over stdio by default, over
Streamable HTTP with `--http HOST:PORT` (`jeeves.mcp.serve.http`). With `--database`, the
runs are queued for the `jeeves worker`s on that database (`jeeves.mcp.serve.durable`).
"""

from __future__ import annotations

from collections.abc import Sequence

import anyio

from jeeves.durable.targets import load_targets, target_name
from jeeves.journal.open import check_journal
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
    database: str | None = None,
) -> int:
    """Serve `targets` as MCP tools over stdio (default) or Streamable HTTP at `http`; with
    `database`, their runs are executed by the durable workers on it."""
    durable = None
    if database is not None:
        from jeeves.durable.worker import database_from_env, journal_for
        from jeeves.mcp.serve.durable import DurableQueue

        database = database_from_env(database)
        journal = journal_for(database, journal)  # where the workers record: the runs' state
        durable = DurableQueue(database, {tool_name(target_name(t)): t for t in targets})
    server = build_server(load_targets(list(targets), offline=offline), journal=journal, durable=durable)
    if journal is not None:  # a bad journal is one line now, not every tool call's failure
        anyio.run(check_journal, journal)
    if http is None:
        anyio.run(server.run_stdio_async)
        return 0
    from jeeves.mcp.serve.http import serve_http

    return serve_http(server, http, token=token, allowed_hosts=allowed_hosts)
