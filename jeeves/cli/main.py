"""The `jeeves` command.

Each subcommand is a small function taking parsed arguments; `main` dispatches. Commands
run offline unless they are given real model routes. Every subcommand takes its options
and positionals in any order (`jeeves run SPEC --offline TASK`), as a user types them.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import threading
import warnings
from collections.abc import Sequence
from typing import Any, Literal

import anyio

from jeeves.cli import durable as durable_commands
from jeeves.cli.demo import DEFAULT_JOURNAL, run_demo
from jeeves.cli.exits import ExitCode
from jeeves.cli.invocation import command_line
from jeeves.cli.runs import replay_command, runs_command
from jeeves.errors import JournalError, UserError

__all__ = ["main"]


class _CommandParser(argparse.ArgumentParser):
    """A subcommand's parser: options may come before, between or after its positionals.

    Plain argparse stops filling positionals at the first option, so `run SPEC --offline
    TASK` left TASK unrecognized; `parse_known_intermixed_args` collects the options
    first, then the positionals. The subparsers action calls `parse_known_args`, so that is
    where the switch happens; the flag lets the intermixed parse call back into the plain
    one, as it does on some Python versions.
    """

    _intermixing = False

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        if self._intermixing:
            return super().parse_known_args(args, namespace)
        self._intermixing = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._intermixing = False


def _version_line() -> str:
    """`jeeves X.Y.Z`, from the installed package's metadata."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"jeeves {version('jeeves')}"
    except PackageNotFoundError:  # imported from a source tree that was never installed
        return "jeeves (version unknown: not installed; pip install -e . in the checkout)"


class _Version(argparse.Action):
    """`--version`, reading the package metadata only when asked (it scans sys.path)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        sys.stdout.write(_version_line() + "\n")
        parser.exit()


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jeeves", description="Run, stream and replay jeeves architectures."
    )
    parser.add_argument("--version", action=_Version, help="print the version and exit")
    commands = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=_CommandParser
    )
    _add_spec_commands(commands)
    demo = commands.add_parser("demo", help="an offline run with scripted models, shown live")
    demo.add_argument("--json", action="store_true", help="print one JSON event per line")
    demo.add_argument(
        "--journal", metavar="PATH", help="where to record the run (default: .jeeves/demo.jsonl)"
    )
    demo.add_argument(
        "--trace", action="store_true", help="print OpenTelemetry spans to stderr (needs jeeves[otel])"
    )
    serve = commands.add_parser("serve", help="serve runs over HTTP: a live viewer, SSE and AG-UI")
    serve.add_argument("specs", nargs="*", metavar="SPEC", help="spec files to serve (default: the demo)")
    serve.add_argument("--offline", action="store_true", help="answer from each spec's [demo] script")
    serve.add_argument("--host", default="127.0.0.1", help="interface to bind (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port (default: 8000)")
    serve.add_argument(
        "--token",
        default=None,
        help="require this bearer token (default: $JEEVES_TOKEN; generated beyond loopback)",
    )
    serve.add_argument(
        "--cors", action="append", default=[], metavar="ORIGIN", help="allow this browser origin (repeatable)"
    )
    serve.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="answer to this Host name besides localhost (repeatable; '*' for any)",
    )
    serve.add_argument(
        "--max-body", type=int, default=1_000_000, metavar="BYTES", help="largest request body"
    )
    serve.add_argument("--max-runs", type=int, default=8, metavar="N", help="runs going at once (default: 8)")
    serve.add_argument(
        "--shutdown-timeout",
        type=float,
        default=5.0,
        metavar="S",
        help="seconds responses get to end on exit",
    )
    serve.add_argument(
        "--journal",
        metavar="PATH",
        help="record every run here (created if missing) and list its recorded runs in the viewer; "
        "runs waiting at approval gates survive a restart on the same journal",
    )
    serve.add_argument(
        "--database",
        metavar="URL",
        default=None,
        help="list and follow, live, the runs durable workers execute in this database: postgresql://... "
        "or their SQLite journal file (default: $JEEVES_DATABASE when set)",
    )
    view = commands.add_parser("view", help="open a recorded run in the viewer (a local server)")
    view.add_argument("journal", help="a journal file: *.jsonl, or a SQLite file")
    view.add_argument("session", nargs="?", help="the run's root session id (default: the latest run)")
    view.add_argument("--port", type=int, default=0, help="port (default: any free one)")
    view.add_argument("--no-browser", action="store_true", help="print the address only; open no browser")
    runs = commands.add_parser("runs", help="list the runs a journal holds (status, rounds, cost)")
    runs.add_argument(
        "journal",
        nargs="?",
        help=f"a journal file: *.jsonl, or a SQLite file (default: {DEFAULT_JOURNAL}, where the demo records)",
    )
    runs.add_argument("--json", action="store_true", help="print one JSON object per run")
    runs.add_argument(
        "--status",
        choices=[
            "in_progress",
            "paused",
            "awaiting_gate",
            "completed",
            "failed",
            "expired",
            "rejected",
            "cancelled",
        ],
        help="only runs in this state",
    )
    runs.add_argument(
        "--watch", action="store_true", help="follow progress (from the journal) until no run is in progress"
    )
    runs.add_argument("--last", type=int, metavar="N", help="only the latest N runs (default: every run)")
    gates = commands.add_parser("gates", help="list the gates waiting for a decision, with their expiry")
    gates.add_argument("journal", help="a journal file or database URL")
    gates.add_argument("session", nargs="?", help="only this run's gates (default: every run's)")
    for verb in ("approve", "deny"):
        decide = commands.add_parser(verb, help=f"{verb} a suspended run's gate (then `jeeves resume`)")
        decide.add_argument("journal", help="the run's journal file or database URL")
        decide.add_argument("session", help="the run's root session id")
        decide.add_argument("--gate", metavar="ID", help="the gate (SESSION#STEP) when the run has several")
        decide.add_argument("--by", required=True, metavar="NAME", help="who decides (recorded)")
        decide.add_argument("--note", metavar="TEXT", help="why (recorded, shown to the model on a denial)")
    resume = commands.add_parser("resume", help="go on with a suspended, crashed or killed run, shown live")
    resume.add_argument("journal", help="the run's journal file")
    resume.add_argument("session", help="the run's root session id")
    resume.add_argument(
        "--spec",
        metavar="MODULE:ATTR|FILE.toml",
        help="the architecture (default: the spec or module:attr recorded with the run, with its --model routes)",
    )
    resume.add_argument(
        "--approvals",
        metavar="MODULE:ATTR",
        help="the approval policy to enforce (default: the spec's [approvals]; never the journal's copy)",
    )
    resume.add_argument(
        "--offline",
        action="store_true",
        help="go on with the spec's [demo] script, from where the run stopped",
    )
    resume.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="ROLE=MODEL",
        help="route a role to a model (repeatable; wins over the spec's and the run's routes)",
    )
    resume.add_argument("--json", action="store_true", help="print one JSON event per line")
    replay = commands.add_parser("replay", help="replay a recorded run offline and print its event tree")
    replay.add_argument("journal", help="a journal file: *.jsonl, or a SQLite file")
    replay.add_argument(
        "session", nargs="?", help="the run's root session id (see `jeeves runs`); default: the latest run"
    )
    replay.add_argument(
        "--spec",
        metavar="MODULE:ATTR|FILE.toml",
        help="the architecture (or a zero-argument factory), or a spec file, to replay with",
    )
    replay.add_argument("--json", action="store_true", help="print one JSON event per line")
    rejudge = commands.add_parser(
        "rejudge", help="re-derive recorded verdicts with another critic; show changes"
    )
    rejudge.add_argument("journal", help="a journal file: *.jsonl, or a SQLite file")
    rejudge.add_argument("sessions", nargs="*", metavar="SESSION", help="runs to judge (default: every run)")
    rejudge.add_argument(
        "--critic", required=True, metavar="FILE.toml", help="the critic version to judge with"
    )
    rejudge.add_argument("--live", action="store_true", help="call LLM critics' models (default: skip them)")
    rejudge.add_argument("--json", action="store_true", help="print one JSON object per changed verdict")
    durable_commands.add_commands(commands)
    durable_commands.add_db_retry(commands.choices["serve"], commands.choices["run"])
    _add_mcp_commands(commands)
    from jeeves.cli.eval import add_eval_command

    add_eval_command(commands)
    return parser


def _add_mcp_commands(commands: Any) -> None:
    serve = commands.add_parser(
        "mcp", help="MCP: `jeeves mcp serve SPEC...` serves architectures as MCP tools"
    )
    serve.add_argument("verb", choices=["serve"], help="serve: each target as an MCP tool (stdio by default)")
    serve.add_argument("targets", nargs="+", metavar="SPEC|MODULE:ATTR", help="what to serve, one tool each")
    serve.add_argument("--journal", metavar="PATH", help="record every run here; a call resumes its session")
    serve.add_argument(
        "--http", metavar="HOST:PORT", help="serve Streamable HTTP at HOST:PORT instead of stdio"
    )
    serve.add_argument(
        "--token", default=None, help="require this bearer token over HTTP (default: $JEEVES_TOKEN)"
    )
    serve.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="answer to this Host name too (HTTP)",
    )
    serve.add_argument("--offline", action="store_true", help="answer from each spec's [demo] script")
    serve.add_argument(
        "--database",
        metavar="URL",
        default=None,
        help="queue each run for the durable workers on this database (postgresql://... or sqlite:///...) "
        "instead of running it here; tasks outlive this server",
    )


def _add_spec_commands(commands: Any) -> None:
    run = commands.add_parser("run", help="run a spec (architectures/*.toml) on a task, shown live")
    run.add_argument("spec", help="a spec file, e.g. architectures/codegen.toml")
    run.add_argument(
        "task", nargs="?", help="the task; - reads it from stdin (default: the spec's [demo] task)"
    )
    run.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="ROLE=MODEL",
        help="route a role to a model, e.g. critic=openai/gpt-4o (repeatable; wins over the spec's [models])",
    )
    run.add_argument(
        "--journal", metavar="PATH", help="record the run (*.jsonl, or a SQLite file) for replay"
    )
    run.add_argument("--session-id", metavar="ID", help="the root session id (default: a fresh one)")
    run.add_argument("--budget-usd", type=float, metavar="X", help="stop the run once it has spent X dollars")
    run.add_argument("--json", action="store_true", help="print one JSON event per line")
    run.add_argument("--trace", action="store_true", help="print OpenTelemetry spans to stderr")
    run.add_argument(
        "--offline", action="store_true", help="answer from the spec's [demo] script, not real models"
    )
    validate = commands.add_parser("validate", help="check specs and print their outlines")
    validate.add_argument("specs", nargs="+", metavar="SPEC", help="spec files, e.g. architectures/*.toml")
    describe = commands.add_parser(
        "describe", help="print the role paths a spec routes (the keys [models] takes)"
    )
    describe.add_argument("spec", metavar="SPEC", help="a spec file, e.g. architectures/codegen.toml")


def _stdin_task() -> str:
    task = sys.stdin.read()
    if not task.strip():
        example = command_line("run", "SPEC", "-")
        raise UserError(f"TASK is '-' but stdin is empty; pipe the task in, e.g. {example} < task.md.")
    return task


def _utf8_task(task: str | None) -> str | None:
    """`task` if it is text: bytes that are not UTF-8 (read from a file or the command line,
    which Python keeps as lone surrogates) cannot be sent to a model nor journaled."""
    if task is not None:
        try:
            task.encode("utf-8")
        except UnicodeEncodeError as exc:
            byte = ord(task[exc.start]) - 0xDC00 if 0xDC80 <= ord(task[exc.start]) <= 0xDCFF else None
            what = f"byte 0x{byte:02x}" if byte is not None else f"{task[exc.start]!a}"
            raise UserError(
                f"TASK is not UTF-8 text ({what} at character {exc.start}); save or pass the task as UTF-8."
            ) from None
    return task


def _trace() -> None:
    from jeeves.telemetry import configure

    configure(console=True)


def _serve(args: argparse.Namespace) -> int:
    from jeeves.cli.serve import serve_demo  # the server's imports load only for `serve`

    catalog = None
    if args.specs:
        from jeeves.cli.run import spec_catalog

        catalog = spec_catalog(args.specs, offline=bool(args.offline))
        if not args.offline:  # live routes: import litellm in the background while the server starts
            from jeeves.models.litellm import preload

            preload()
    return serve_demo(
        host=args.host,
        port=args.port,
        token=args.token,
        cors=args.cors,
        architectures=catalog,
        allowed_hosts=args.allow_host,
        max_body_bytes=args.max_body,
        max_runs=args.max_runs,
        shutdown_s=args.shutdown_timeout,
        journal=_served_journal(args.journal, must_exist=False),
        database=args.database or os.environ.get(durable_commands.DATABASE_ENV) or None,
    )


def _served_journal(path: str | None, *, must_exist: bool) -> str | None:
    """A journal the server records into and browses; runs of specs in it can be rebuilt (their loader is registered).

    `jeeves serve --journal` creates a missing file on its first run; `jeeves view` only
    browses, so a missing file there is a mistyped path.
    """
    if path is None:
        return None
    if must_exist and not os.path.isfile(path):
        raise UserError(f"{path!r} is not a file; give a journal a run was recorded in.")
    import jeeves.spec  # noqa: F401 - registers the "spec" source, so runs of specs replay

    if os.getcwd() not in sys.path:  # as `jeeves replay`: architectures named module:attr import from here
        sys.path.insert(0, os.getcwd())
    return path


def _view(args: argparse.Namespace) -> int:
    from jeeves.cli.serve import serve_demo
    from jeeves.server.recorded import view_target

    journal = _served_journal(args.journal, must_exist=True)
    assert journal is not None
    session = anyio.run(view_target, journal, args.session)
    return serve_demo(
        host="127.0.0.1",
        port=args.port,
        architectures={},
        journal=journal,
        open_path=f"#journal={session}",
        open_browser=not args.no_browser,
    )


def _spec_command(args: argparse.Namespace) -> int:
    from jeeves.cli.run import RunOptions, describe_command, run_command, validate_command

    if args.command == "describe":
        return anyio.run(describe_command, args.spec)
    if args.command == "validate":
        return max([anyio.run(validate_command, path) for path in args.specs])
    if args.trace:
        _trace()
    options = RunOptions(
        spec=args.spec,
        task=_utf8_task(_stdin_task() if args.task == "-" else args.task),
        models=args.model,
        journal=args.journal,
        session_id=args.session_id,
        budget_usd=args.budget_usd,
        as_json=bool(args.json),
        offline=bool(args.offline),
    )
    return anyio.run(run_command, options)


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    """`warnings.showwarning` for the command: a damaged journal's warning is one `warning:`
    line (its message names the file and the line); any other warning as Python shows it."""
    from jeeves.journal.store import JournalWarning

    shown = (
        f"warning: {message}\n"
        if issubclass(category, JournalWarning)
        else warnings.formatwarning(message, category, filename, lineno, line)
    )
    (file or sys.stderr).write(shown)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `jeeves` console script; returns the exit code."""
    args = _build_parser().parse_args(argv)
    warnings.showwarning = _show_warning
    try:
        return _dispatch(args)
    except (UserError, JournalError) as exc:  # configuration or a damaged journal: one line, no traceback
        sys.stderr.write(f"error: {exc}\n")
        return ExitCode.BAD_INPUT
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        if any(
            t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()
        ):
            # A sync tool still running in a worker thread would hold the exit until it returns;
            # the run is over and its result would be dropped, so leave now.
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(ExitCode.INTERRUPTED)
        return ExitCode.INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`jeeves demo --json | head`): stop quietly, as Unix tools do.
        # Point stdout at /dev/null so the interpreter's final flush cannot fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return ExitCode.READER_GONE


def _demo_journal() -> str:
    """The journal `jeeves runs` reads when given none: the demo's, in the current directory."""
    if not DEFAULT_JOURNAL.is_file():
        raise UserError(
            f"No journal given, and none at {str(DEFAULT_JOURNAL)!r}, where `{command_line('demo')}` records "
            f"in the current directory; run the demo here first, or name one: {command_line('runs', 'JOURNAL')}."
        )
    return str(DEFAULT_JOURNAL)


def _gate_command(args: argparse.Namespace) -> int:
    from jeeves.cli.gates import decide_command, policy_ref, resume_command
    from jeeves.cli.run import resume_target  # registers the "spec" source: runs of specs rebuild

    if args.command == "resume":

        async def go_on() -> int:
            if os.getcwd() not in sys.path:  # as `jeeves replay`: module:attr and spec tools import from here
                sys.path.insert(0, os.getcwd())
            target = await resume_target(
                args.journal, args.session, args.spec, offline=bool(args.offline), models=args.model
            )
            if args.approvals:
                target.approvals = policy_ref(args.approvals)
            return await resume_command(args.journal, args.session, target, as_json=bool(args.json))

        return anyio.run(go_on)
    decision: Literal["approve", "deny"] = "approve" if args.command == "approve" else "deny"

    async def decide() -> int:
        return await decide_command(
            args.journal,
            args.session,
            decision,
            by=args.by,
            note=args.note,
            gate=args.gate,
            wake=durable_commands.wake_after_decision,
        )

    return anyio.run(decide)


def _dispatch(args: argparse.Namespace) -> int:
    durable_commands.configure_db_retry(args)
    if args.command in ("run", "validate", "describe"):
        return _spec_command(args)
    if args.command == "demo":
        if args.trace:
            _trace()
        return anyio.run(run_demo, bool(args.json), args.journal)
    if args.command == "serve":
        return _serve(args)
    if args.command == "view":
        return _view(args)
    if args.command == "runs":
        journal = args.journal or os.environ.get(durable_commands.DATABASE_ENV) or _demo_journal()
        journal = durable_commands.runs_journal(journal)
        return anyio.run(runs_command, journal, bool(args.json), args.status, bool(args.watch), args.last)
    if args.command in ("approve", "deny", "resume"):
        return _gate_command(args)
    if args.command == "gates":
        from jeeves.cli.gates import gates_command

        return anyio.run(gates_command, args.journal, args.session)
    if args.command in durable_commands.COMMANDS:
        return durable_commands.dispatch(args)
    if args.command == "eval":
        from jeeves.cli.eval import eval_command

        return eval_command(args)
    if args.command == "replay":
        return _replay(args)
    if args.command == "mcp":
        return _mcp(args)
    if args.command == "rejudge":
        from jeeves.evals.rejudge import rejudge_command
        from jeeves.spec.critic_version import load_critic_version

        version = load_critic_version(args.critic)
        return anyio.run(
            functools.partial(rejudge_command, as_json=bool(args.json), live=bool(args.live)),
            args.journal,
            args.sessions,
            version,
        )
    raise AssertionError(f"unhandled command {args.command!r}")  # pragma: no cover - argparse rejects it


def _replay(args: argparse.Namespace) -> int:
    from jeeves.cli.eval import is_eval, replay_eval_command
    from jeeves.spec import build, load_spec  # registers the "spec" source: runs of specs rebuild

    if is_eval(args.journal, args.session):  # an eval's id: rebuild its report
        return replay_eval_command(args.journal, args.session, None, sys.stdout)
    spec = build(load_spec(args.spec))[0] if args.spec and args.spec.endswith(".toml") else args.spec
    return anyio.run(replay_command, args.journal, args.session, spec, bool(args.json))


def _mcp(args: argparse.Namespace) -> int:
    from jeeves.mcp.serve import serve_mcp  # the SDK loads only for `jeeves mcp`

    if os.getcwd() not in sys.path:  # module:attr targets import from here, as `jeeves replay`
        sys.path.insert(0, os.getcwd())
    return serve_mcp(
        args.targets,
        journal=args.journal,
        http=args.http,
        token=args.token,
        allowed_hosts=args.allow_host,
        offline=bool(args.offline),
        database=args.database,
    )


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
