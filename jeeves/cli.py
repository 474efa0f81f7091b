"""The `jeeves` command.

Each subcommand is a small function taking parsed arguments; `main` dispatches. Commands
run offline unless they are given real model routes.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import anyio

from jeeves.demo import run_demo
from jeeves.history import replay_command, runs_command

__all__ = ["main"]


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jeeves", description="Run, stream and replay jeeves architectures."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo = commands.add_parser("demo", help="an offline run with scripted models, shown live")
    demo.add_argument("--json", action="store_true", help="print one JSON event per line")
    demo.add_argument(
        "--trace", action="store_true", help="print OpenTelemetry spans to stderr (needs jeeves[otel])"
    )
    serve = commands.add_parser("serve", help="serve runs over HTTP: a live viewer, SSE and AG-UI")
    serve.add_argument("--host", default="127.0.0.1", help="interface to bind (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port (default: 8000)")
    serve.add_argument("--token", default=None, help="require this bearer token (default: $JEEVES_TOKEN)")
    serve.add_argument(
        "--cors", action="append", default=[], metavar="ORIGIN", help="allow this browser origin (repeatable)"
    )
    runs = commands.add_parser("runs", help="list the runs a journal holds (status, rounds, cost)")
    runs.add_argument("journal", help="a journal file: *.jsonl, or a SQLite file")
    runs.add_argument("--json", action="store_true", help="print one JSON object per run")
    replay = commands.add_parser("replay", help="replay a recorded run offline and print its event tree")
    replay.add_argument("journal", help="a journal file: *.jsonl, or a SQLite file")
    replay.add_argument("session", help="the run's root session id (see `jeeves runs`)")
    replay.add_argument(
        "--spec", metavar="MODULE:ATTR", help="the architecture (or a zero-argument factory) to replay with"
    )
    replay.add_argument("--json", action="store_true", help="print one JSON event per line")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `jeeves` console script; returns the exit code."""
    args = _build_parser().parse_args(argv)
    if args.command == "demo":
        if args.trace:
            from jeeves.telemetry import configure

            configure(console=True)
        return anyio.run(run_demo, bool(args.json))
    if args.command == "serve":
        from jeeves.server.serve import serve_demo  # the server's imports load only for `serve`

        return serve_demo(host=args.host, port=args.port, token=args.token, cors=args.cors)
    if args.command == "runs":
        return anyio.run(runs_command, args.journal, bool(args.json))
    if args.command == "replay":
        return anyio.run(replay_command, args.journal, args.session, args.spec, bool(args.json))
    raise AssertionError(f"unhandled command {args.command!r}")  # pragma: no cover - argparse rejects it


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
