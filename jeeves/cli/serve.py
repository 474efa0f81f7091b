"""`jeeves serve` and `jeeves view`: a catalog (default: the offline demo) behind the app.

The server itself (`jeeves.server`) knows nothing of the demo or the command line: this
module picks the catalog, checks the database, binds, prints the address and serves.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import anyio

from jeeves.approvals.decide import Approvals
from jeeves.cli.demo import demo_architecture, demo_router
from jeeves.errors import UserError
from jeeves.journal.open import check_journal
from jeeves.journal.postgres import display_url
from jeeves.server.app import create_app
from jeeves.server.catalog import ArchitectureLike
from jeeves.server.followed import DatabaseRuns
from jeeves.server.serve import access, address, bind, serve

__all__ = ["demo_architectures", "serve_demo"]


def demo_architectures() -> dict[str, ArchitectureLike]:
    """The offline demo catalog `jeeves serve` starts with (scripted models, no keys needed)."""
    return {"demo": lambda: (demo_architecture(), demo_router())}


def serve_demo(
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    token: str | None = None,
    cors: Sequence[str] = (),
    architectures: Mapping[str, ArchitectureLike] | None = None,
    allowed_hosts: Sequence[str] = (),
    max_body_bytes: int = 1_000_000,
    max_runs: int = 8,
    shutdown_s: int = 5,
    journal: str | os.PathLike[str] | None = None,
    database: str | None = None,
    approvals: Approvals | None = None,
    open_path: str = "",
    open_browser: bool = False,
) -> int:
    """`jeeves serve` and `jeeves view`: `architectures` (default: the demo) behind the viewer, SSE and AG-UI endpoints.

    Beyond loopback without a token (`--token`, `$JEEVES_TOKEN`) it generates one and prints
    it in the page's address; the `--host` given (unless a wildcard) is answered to as a Host.
    With `journal` every run is recorded there, the viewer lists and opens its recorded
    runs, and runs left waiting at gates when the server stopped (or was killed) are held
    again at start; `approvals` is the policy of runs whose catalog entry brings none (a
    served spec's `[approvals]` comes with it). `open_path` (a fragment such as
    `#journal=ID`) is appended to the printed address, which `open_browser` opens.
    With `database` (a `postgresql://` URL or a SQLite journal) the runs durable workers
    execute there are listed and followed live; it is checked before the server starts.
    """
    if shutdown_s < 0:
        raise UserError(f"--shutdown-timeout must be >= 0 seconds, got {shutdown_s!r}.")
    token = token or os.environ.get("JEEVES_TOKEN") or None
    catalog = architectures if architectures is not None else demo_architectures()
    if database is not None:
        anyio.run(_check_database, database)
    if journal is not None:
        anyio.run(check_journal, journal)  # the runs waiting at gates are restored from it
    sock = bind(host, port)
    try:
        token, generated, hosts = access(sock, host, token, allowed_hosts)
        app = create_app(
            catalog,
            token=token,
            cors_origins=cors,
            allowed_hosts=hosts,
            max_body_bytes=max_body_bytes,
            max_runs=max_runs,
            journal=journal,
            database=database,
            approvals=approvals,
        )
        where = address(sock)
        serving = ", ".join(catalog) or "the viewer"
        print(f"jeeves: serving {serving} at {where}" + (" (token required)" if token else ""), flush=True)
        if generated:
            print(f"jeeves: generated a token for this server; open {where}#token={token}", flush=True)
        if database is not None:
            print(f"jeeves: following the runs in {display_url(database)}", flush=True)
        if open_path:
            print(f"jeeves: open {where}{open_path}", flush=True)
        if open_browser:
            import webbrowser

            webbrowser.open(where + open_path)
        serve(app, log_level="info", shutdown_s=shutdown_s, sock=sock)
    finally:
        sock.close()
    return 0


async def _check_database(database: str) -> None:
    """Reach `database` and read its event log once (a JournalError or UserError naming it,
    password masked, when it cannot)."""
    runs = DatabaseRuns(database)
    try:
        await runs.open()
    finally:
        await runs.aclose()
