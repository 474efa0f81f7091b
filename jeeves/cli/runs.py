"""`jeeves runs` and `jeeves replay`: list the runs a journal holds, replay one as an event tree.

Both are offline. `replay` rebuilds the run's architecture from `--spec module:attr` or
from the source recorded with the run (`jeeves.run(..., architecture_ref=...)`), with the
current directory importable as it is for `python -m`, then streams a strict replay and
prints each event indented by its session's depth in the tree.
"""

from __future__ import annotations

import os
import sys
from typing import Any, TextIO

import anyio

from jeeves._run.context import Architecture
from jeeves._run.replay import ReplayPlan, plan_replay
from jeeves._run.runner import RunResult, stream
from jeeves._run.source import resolve_ref
from jeeves.cli.gates import ENDED
from jeeves.cli.invocation import command_line
from jeeves.cli.terminal import spend_lines
from jeeves.errors import JeevesError, JournalError, ReplayDivergence, UserError
from jeeves.events import Event, event_to_json
from jeeves.journal.open import RunSummary, close_journal, list_runs, open_journal
from jeeves.journal.records import Journal
from jeeves.journal.store import JournalStore, latest
from jeeves.messages import Usage, format_cost

__all__ = ["describe_event", "replay_command", "runs_command", "watch_runs"]

_SHOWN: dict[str, tuple[str, ...]] = {
    "session.started": ("role", "architecture", "model", "task"),
    "session.completed": ("stop_reason", "output"),
    "session.failed": ("error_type", "message"),
    "model.completed": ("model", "text", "tool_calls"),
    "model.retrying": ("model", "next_model", "error_type"),
    "tool.started": ("name", "arguments"),
    "tool.completed": ("name", "result", "is_error"),
}
_COMMON = {"type", "session_id", "seq", "ts", "replayed"}


def _excerpt(value: Any, width: int = 70) -> str:
    if isinstance(value, list):
        value = ", ".join(_excerpt(v.get("name", v) if isinstance(v, dict) else v, 30) for v in value)
    text = " ".join(str(value).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _blank(value: Any) -> bool:
    return value is None or value is False or value == "" or value == []


def describe_event(event: Event) -> str | None:
    """One line for the tree: the event's type and its telling fields; None for model deltas."""
    if event.type == "model.delta":
        return None
    data = event.model_dump(mode="json")
    keys = _SHOWN.get(event.type) or tuple(k for k in data if k not in _COMMON)
    fields = " ".join(f"{k}={_excerpt(data[k])}" for k in keys if not _blank(data.get(k)))
    depth = event.session_id.count("__")
    label = event.session_id.rsplit("__", 1)[-1]
    return f"{'  ' * depth}{label}  {event.type}  {fields}".rstrip()


def _fail(error: JeevesError, out: TextIO) -> int:
    out.write(f"error: {error}\n")
    return 2


def _summary_line(run: RunSummary) -> str:
    rounds = "-" if run.rounds is None else str(run.rounds)
    cost = format_cost(run.usage)
    return f"{run.session_id:<24} {run.status:<14} {rounds:>6} {cost:>10}  {_excerpt(run.task, 50)}"


def _progress_line(run: RunSummary) -> str:
    p = run.progress or {}
    gate = f" gate={p['gate']}" if p.get("gate") else ""
    return (
        f"{run.session_id} {run.status} step={p.get('step', '-')} "
        f"completed={p.get('completed_steps', 0)}{gate}"
    )


async def _listed(journal: str, status: str | None, last: int | None) -> list[RunSummary]:
    """The runs `jeeves runs` shows (`_shown`). Only root sessions are read, and with no
    status only the last `last`."""
    return _shown(await list_runs(journal, last=last if status is None else None), status, last)


def _shown(runs: list[RunSummary], status: str | None, last: int | None) -> list[RunSummary]:
    """Of `runs`, those `jeeves runs` shows: those with `status` (when given), the latest
    `last` of them (when given)."""
    return latest([r for r in runs if status is None or r.status == status], last)


async def watch_runs(
    journal: str, status: str | None = None, interval_s: float = 1.0, last: int | None = None
) -> int:
    """Print a line each time a run's status or progress changes, reading the journal (so
    runs of other processes show); return once no run shown is in progress. Each poll after
    the first reads only the runs that can still change (`_Followed`)."""
    seen: dict[str, str] = {}
    followed = _Followed(journal)
    while True:
        try:
            every = await followed.poll(last if status is None else None)
        except JeevesError as exc:
            return _fail(exc, sys.stderr)
        runs = _shown(every, status, last)
        for run in runs:
            line = _progress_line(run)
            if seen.get(run.session_id) != line:
                seen[run.session_id] = line
                sys.stdout.write(line + "\n")
                sys.stdout.flush()
        if not any(r.status == "in_progress" for r in runs):
            return 0
        await anyio.sleep(interval_s)


class _Followed:
    """A journal's runs in the order first recorded, as of the last poll. A run that ended
    for good (`ENDED`) never changes again, and a new run is recorded after every other, so
    a poll rereads only the tail from the first run that can still change: the latest
    `len - i + extra` runs, `extra` doubled until the tail reaches back to that run. The
    journal is opened by each poll (a file store reads what other processes wrote since)."""

    def __init__(self, journal: str) -> None:
        self.journal = journal
        self.runs: list[RunSummary] | None = None

    async def poll(self, first: int | None = None) -> list[RunSummary]:
        """The runs as the journal holds them now; the first poll reads the latest `first`
        (None: every run), later ones the tail from the first that can still change."""
        if self.runs is None:
            self.runs = await list_runs(self.journal, last=first)
            return self.runs
        open_at = next((i for i, run in enumerate(self.runs) if run.status not in ENDED), len(self.runs))
        place = {run.session_id: i for i, run in enumerate(self.runs)}
        extra = 16
        while True:
            want = len(self.runs) - open_at + extra
            tail = await list_runs(self.journal, last=want)
            if len(tail) < want:  # the whole journal
                self.runs = tail
                return tail
            start = place.get(tail[0].session_id)
            if start is not None and start <= open_at:
                self.runs = [*self.runs[:start], *tail]
                return self.runs
            extra *= 2  # more new runs than `extra`: reach further back


async def runs_command(
    journal: str,
    as_json: bool = False,
    status: str | None = None,
    watch: bool = False,
    last: int | None = None,
) -> int:
    """Print the root sessions `journal` holds: id, status, rounds, cost and the task
    (only those with `status`, when given; only the latest `last`, when given); with
    `watch`, follow their progress."""
    if last is not None and last < 1:
        return _fail(UserError(f"--last must be at least 1 run, got {last}."), sys.stderr)
    if watch:
        return await watch_runs(journal, status, last=last)
    try:
        runs = await _listed(journal, status, last)
    except JeevesError as exc:
        return _fail(exc, sys.stderr)
    if as_json:
        for run in runs:
            sys.stdout.write(run.model_dump_json() + "\n")
        return 0
    sys.stdout.write(f"{'SESSION':<24} {'STATUS':<14} {'ROUNDS':>6} {'COST':>10}  TASK\n")
    for run in runs:
        sys.stdout.write(_summary_line(run) + "\n")
    return 0


async def replay_command(
    journal: str, session_id: str | None, spec: str | Architecture | None = None, as_json: bool = False
) -> int:
    """Replay run `session_id` offline and print its events as a tree, then its output.

    `session_id` None replays the journal's latest run (and says so on stderr when the
    journal holds others). `spec` is the architecture to replay with, or its `module:attr`
    path; None rebuilds it from the source recorded with the run.

    Exit codes: 0 replayed; 1 the recorded run failed and its replay failed the same way;
    2 it could not be replayed (no such run, a damaged journal, a divergence).
    """
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        store = open_journal(journal, create=False)
    except JeevesError as exc:
        return _fail(exc, sys.stderr)
    plan: ReplayPlan | None = None
    try:
        session_id = session_id or await _latest_run(store, journal)
        plan = await plan_replay(store, session_id, resolve_ref(spec) if isinstance(spec, str) else spec)
        result, spent = await _print_replay(plan, store, session_id, as_json, sys.stdout)
    except Exception as exc:
        if isinstance(exc, ReplayDivergence | JournalError) or plan is None or plan.record.status != "failed":
            if isinstance(exc, JeevesError):
                return _fail(exc, sys.stderr)
            raise
        sys.stderr.write(f"The recorded run failed, and its replay failed the same way: {exc}\n")
        return 1
    finally:
        await close_journal(store)
    if not as_json:
        total, *per_path = spend_lines(sum(spent.values(), Usage()), spent)
        sys.stdout.write(
            f"\noutput: {result.text}\nstop reason: {result.stop_reason} (replayed offline)\n"
            f"recorded: {total}\n" + "".join(line + "\n" for line in per_path)
        )
    return 0


async def _latest_run(store: JournalStore, journal: str) -> str:
    """The journal's latest run, saying so when it holds others (it reads the latest two)."""
    runs = await list_runs(store, last=2)
    if not runs:
        record = command_line("run", "SPEC", "--journal", journal)
        raise UserError(f"{journal} holds no runs; record one with `{record}`.")
    if len(runs) > 1:
        sys.stderr.write(
            f"Replaying the latest run, {runs[-1].session_id}; the journal holds others "
            f"(`{command_line('runs', journal)}` lists them).\n"
        )
    return runs[-1].session_id


async def _print_replay(
    plan: ReplayPlan, store: Journal, session_id: str, as_json: bool, out: TextIO
) -> tuple[RunResult, dict[str, Usage]]:
    """Replay and print the run; return its result and what its model calls cost when they
    were recorded, per role path (a replay itself spends nothing)."""
    paths: dict[str, str] = {}
    spent: dict[str, Usage] = {}
    async with stream(
        plan.arch, plan.task, session_id=session_id, role=plan.role, journal=store, mode="replay"
    ) as events:
        async for event in events:
            if event.type == "session.started":
                paths[event.session_id] = ".".join(event.role_path)
            elif event.type == "model.completed":
                path = paths.get(event.session_id, event.session_id)
                spent[path] = spent.get(path, Usage()) + event.usage
            line = event_to_json(event) if as_json else describe_event(event)
            if line is not None:
                out.write(line + "\n")
        return await events.result(), spent
