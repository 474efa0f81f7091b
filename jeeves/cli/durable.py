"""`jeeves worker` and `jeeves submit`: the command-line side of durable runs.

`jeeves.cli.main` registers these with `add_commands` and hands their parsed arguments to
`dispatch`; everything else lives here, so the CLI module stays a list of commands.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import signal
import sys
import threading
from typing import Any

import anyio

from jeeves.approvals.decide import APPROVAL_MODES, Approvals
from jeeves.cli.exits import ExitCode, exit_code
from jeeves.cli.invocation import command_line
from jeeves.durable.submit import WORKER_TIMEOUT_S, submit, wait, wake
from jeeves.durable.worker import DATABASE_ENV, Worker
from jeeves.errors import UserError
from jeeves.journal.postgres import is_database_url
from jeeves.journal.retry import DEFAULT_DB_RETRY_S, configure

__all__ = [
    "COMMANDS",
    "DATABASE_ENV",
    "add_commands",
    "add_db_retry",
    "configure_db_retry",
    "dispatch",
    "runs_journal",
    "wake_after_decision",
]

COMMANDS = ("worker", "submit")


def add_commands(commands: Any) -> None:
    """Add `worker` and `submit` to the `jeeves` subcommands."""
    database = {"metavar": "URL", "help": f"the shared database (default: ${DATABASE_ENV})"}
    worker = commands.add_parser(
        "worker", help="execute submitted runs from the shared database (DBOS queues)"
    )
    worker.add_argument(
        "targets", nargs="+", metavar="SPEC", help="spec files or module:attr references to serve"
    )
    worker.add_argument("--database", **database)
    worker.add_argument("--journal", metavar="URL|PATH", help="where runs record (default: the database)")
    worker.add_argument(
        "--concurrency", type=int, default=10, metavar="N", help="runs at once here (default: 10)"
    )
    worker.add_argument(
        "--global-concurrency",
        type=int,
        default=None,
        metavar="N",
        help="runs at once per target, all workers",
    )
    worker.add_argument("--worker-id", default=None, metavar="ID", help="this worker's id (default: unique)")
    worker.add_argument(
        "--heartbeat", type=float, default=5.0, metavar="S", help="seconds between heartbeats"
    )
    worker.add_argument(
        "--takeover-after", type=float, default=30.0, metavar="S", help="take over workers silent this long"
    )
    worker.add_argument("--poll", type=float, default=1.0, metavar="S", help="seconds between queue polls")
    worker.add_argument("--offline", action="store_true", help="answer from each spec's [demo] script")
    add_db_retry(worker)
    worker.add_argument(
        "--spread",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="hand a run's parallel children to any worker (default: on with PostgreSQL)",
    )
    worker.add_argument(
        "--ask",
        action="append",
        choices=APPROVAL_MODES,
        metavar="MODE",
        help="gate tools of this approval mode (repeatable) in targets without [approvals]",
    )
    sub = commands.add_parser("submit", help="queue a run for the workers; prints its session id")
    sub.add_argument(
        "target", metavar="SPEC", help="the spec file or module:attr reference, as workers name it"
    )
    sub.add_argument("task", help="the task")
    sub.add_argument("--session-id", default=None, metavar="ID", help="the run's root session id")
    sub.add_argument("--database", **database)
    sub.add_argument("--wait", action="store_true", help="wait for the run to end and print its output")
    sub.add_argument(
        "--worker-timeout",
        type=float,
        default=WORKER_TIMEOUT_S,
        metavar="S",
        help=f"refuse a target no worker serves after this long (default: {WORKER_TIMEOUT_S:g})",
    )


def add_db_retry(*parsers: argparse.ArgumentParser) -> None:
    """Add `--db-retry-s` to commands that use a database (worker, serve, run)."""
    for parser in parsers:
        parser.add_argument(
            "--db-retry-s",
            type=float,
            default=None,
            metavar="S",
            help=f"wait out a database fault this long before failing (default: {DEFAULT_DB_RETRY_S:g})",
        )


def configure_db_retry(args: argparse.Namespace) -> None:
    """Apply `--db-retry-s` (or `$JEEVES_DB_RETRY_S`) for this process."""
    configure(getattr(args, "db_retry_s", None))


def dispatch(args: argparse.Namespace) -> int:
    if args.command == "worker":
        return _worker(args)
    return anyio.run(_submit, args)


def _worker(args: argparse.Namespace) -> int:
    worker = Worker(
        args.targets,
        database=args.database,
        journal=args.journal,
        concurrency=args.concurrency,
        global_concurrency=args.global_concurrency,
        worker_id=args.worker_id,
        heartbeat_s=args.heartbeat,
        takeover_after_s=args.takeover_after,
        polling_interval_s=args.poll,
        offline=bool(args.offline),
        approvals=Approvals(ask=tuple(args.ask)) if args.ask else None,
        spread=args.spread,
    )
    if not args.offline and any(target.endswith(".toml") for target in args.targets):
        from jeeves.models.litellm import preload  # a spec's live routes call litellm: load it now

        preload()  # so a fresh standby takes a run over as fast as a warm worker

    async def main() -> None:
        ready = anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(_stop_on_signal, tg.cancel_scope)
            tg.start_soon(lambda: worker.run(ready=ready))
            await ready.wait()
            print(f"jeeves worker {worker.worker_id} ready: {', '.join(worker.targets)}", flush=True)

    try:
        anyio.run(main, backend="asyncio")
    except BaseExceptionGroup as group:  # a worker that cannot start says why in one line, not a group
        if len(group.exceptions) != 1:
            raise
        raise group.exceptions[0]  # noqa: B904 (its own cause is kept)
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        # A cancelled run left a blocking call in a worker thread (a sync tool, a socket read);
        # its run is handed over and nothing will read its result, so do not wait for it.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    return 0


async def _stop_on_signal(scope: anyio.CancelScope) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for _ in signals:
            sys.stderr.write("jeeves worker: stopping; runs in flight go to the other workers\n")
            scope.cancel()
            return


async def _submit(args: argparse.Namespace) -> int:
    session_id = await submit(
        args.target,
        args.task,
        session_id=args.session_id,
        database=args.database,
        worker_timeout_s=args.worker_timeout,
    )
    print(session_id, flush=True)
    if not args.wait:
        return 0
    outcome = await wait(session_id, database=args.database)
    code = exit_code(str(outcome.get("status")), outcome.get("stop_reason"))  # as `run` and `resume`
    if code == ExitCode.AWAITING_APPROVAL:
        gates = ", ".join(outcome.get("pending", []))
        sys.stderr.write(f"the run is awaiting approval of gate(s) {gates}; see `jeeves approve`\n")
        return code
    if code == ExitCode.FAILED:
        sys.stderr.write(f"error: the run failed: {outcome.get('error')}\n")
        return code
    print(outcome.get("text", ""), flush=True)
    return code


def runs_journal(value: str) -> str:
    """The journal `jeeves runs` reads for `value` (an argument or `$JEEVES_DATABASE`): a
    `sqlite:///path` URL is the file at `path`; DBOS's own SQLite file, which holds no runs,
    is refused with a line naming the workers' journal."""
    if not value.startswith("sqlite:///"):
        return value
    path = value.removeprefix("sqlite:///")
    if _is_dbos_file(path):
        raise UserError(
            f"{value!r} is DBOS's database, which holds no runs; on SQLite the runs are in the workers' "
            f"journal: give it, e.g. `jeeves runs runs.db` (the file given to `jeeves worker --journal`)."
        )
    return path


def _is_dbos_file(path: str) -> bool:
    import sqlite3

    if not os.path.isfile(path):
        return False
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
            tables = {
                str(name) for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            }
    except sqlite3.DatabaseError:
        return False
    return "workflow_status" in tables and "jeeves_journal" not in tables


async def wake_after_decision(journal: str, session_id: str) -> str | None:
    """After `jeeves approve/deny` recorded a decision: when the journal is a database where
    the run waits on a durable worker, wake it and say so; else None."""
    if not is_database_url(journal) or importlib.util.find_spec("dbos") is None:
        return None
    if not await wake(session_id, database=journal):
        return None
    return f"the run resumes on a worker; follow it with: {command_line('runs', journal)}"
