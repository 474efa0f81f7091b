"""`jeeves gates`, `approve`, `deny` and `resume`: list and decide a suspended run's gates, go on.

Each works from any process that can open the journal, after the run's own process
exited or was killed. `approve` approves exactly the arguments the gate shows (their hash
is taken from the journal); `resume` goes on with the architecture, routes and approval
policy the command line built for it (`jeeves.cli.main` rebuilds a spec run from its spec, with
the `--model` routes the run recorded), serves every recorded step, and shows the run as a
live tree, as `jeeves run` does, then its outcome. An offline script goes on where the run
stopped: every call the journal serves skips the reply it had.

Exit codes (`jeeves.cli.exits`): 0 completed; 1 failed, expired, rejected or cancelled; 2
configuration or journal errors (a resume that fails before any step ran leaves the run
as it was); 3 still awaiting approval (the pending gates are printed); 4 budget spent.

The approval policy `resume` enforces comes from code, never from the journal's copy:
`--approvals MODULE:ATTR` (an `Approvals` object), else the `[approvals]` of the spec
(`--spec FILE.toml`, or the spec file a spec run was started from, read again). A run
recorded under a policy that is given none is refused (`jeeves.approvals.policy.enforced_policy`).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal, TextIO

from jeeves._run.context import Architecture
from jeeves._run.replay import plan_replay, skip_served
from jeeves._run.runner import RunResult, stream
from jeeves._run.source import import_object
from jeeves.approvals.decide import (
    Approvals,
    Decision,
    PendingGate,
    parse_gate_id,
    pending_gates,
    record_decision,
)
from jeeves.cli.exits import ExitCode, exit_code
from jeeves.cli.invocation import command_line
from jeeves.cli.terminal import follow, output_lines, spend_lines
from jeeves.errors import JeevesError, JournalError, MissingCredentials, UserError
from jeeves.journal.open import close_journal, find_run, open_journal, read_runs
from jeeves.journal.records import error_type_name
from jeeves.journal.store import JournalStore
from jeeves.journal.unchanged import restored_if_nothing_ran
from jeeves.models.router import Router
from jeeves.models.testing import ScriptedModel

__all__ = [
    "REFRESH_PER_SECOND",
    "ResumeTarget",
    "decide_command",
    "describe_gate",
    "gate_hints",
    "gates_command",
    "outcome_lines",
    "policy_ref",
    "resume_command",
    "when_expires",
]


REFRESH_PER_SECOND = 9.0
"""How often the live tree of `run` and `resume` redraws. Not 10: the run's suspension
check (`anyio.wait_all_tasks_blocked`, in `Suspension.settled`) polls every 0.1 s and sees
a task woken in the same loop pass as busy, so a ticker of the same period, started in
the same pass, can keep a run at a gate from ever being seen as settled."""


def when_expires(expires_at: float, now: float | None = None) -> str:
    """`2026-11-28T09:00:00Z (in 23 h 59 min)`: an expiry in ISO 8601 (UTC) and the time left
    (`expired 5 min ago` once past), as every command that shows a gate prints it."""
    stamp = datetime.fromtimestamp(expires_at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    left = expires_at - (time.time() if now is None else now)
    return f"{stamp} (in {_span(left)})" if left >= 0 else f"{stamp} (expired {_span(-left)} ago)"


def _span(seconds: float) -> str:
    minutes = int(seconds // 60)
    days, hours, mins = minutes // 1440, minutes % 1440 // 60, minutes % 60
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {mins} min"
    return f"{mins} min" if mins else f"{int(seconds)} s"


def describe_gate(gate: PendingGate, now: float | None = None) -> str:
    """One line: the gate id, the call, its mode and when it expires."""
    expires = "" if gate.expires_at is None else f"  expires {when_expires(gate.expires_at, now)}"
    return f"{gate.gate_id}  {gate.tool}({gate.arguments})  mode={gate.mode}{expires}"


async def decide_command(
    journal: str,
    session_id: str,
    decision: Literal["approve", "deny"],
    *,
    by: str,
    note: str | None = None,
    gate: str | None = None,
    wake: Callable[[str, str], Awaitable[str | None]] | None = None,
) -> int:
    """Record a decision for a gate of run `session_id` (its only pending gate unless `gate`).

    `wake(journal, session_id)`, when given, is called after recording: it resumes a run
    that waits for the decision elsewhere (a durable worker) and returns what to tell the
    user, or None when no run waits (then the user is told to `jeeves resume`)."""
    if not by.strip():
        raise UserError("--by is empty; say who decides, e.g. --by alice.")
    if gate is not None:
        parse_gate_id(gate)  # `#01`, `#١`: not a gate id (one line, exit 2), never an alias of `#1`
    gates = await pending_gates(journal, session_id)
    chosen = [g for g in gates if gate is None or g.gate_id == gate]
    if not chosen:
        where = f"pending gate {gate!r}" if gate else "pending gate"
        raise UserError(
            f"Run {session_id!r} in {journal} has no {where} (decided already, or never reached); "
            f"`{command_line('runs', journal)}` lists runs."
        )
    if len(chosen) > 1:
        lines = "\n".join("  " + describe_gate(g) for g in chosen)
        raise UserError(
            f"Run {session_id!r} has {len(chosen)} pending gates; name one with --gate ID:\n{lines}"
        )
    target = chosen[0]
    made = Decision(decision=decision, by=by, note=note, arguments_hash=target.arguments_hash)
    await record_decision(journal, target.gate_id, made)
    verb = "approved" if decision == "approve" else "denied"
    sys.stdout.write(f"{verb} by {by}: {describe_gate(target)}\n")
    woken = await wake(journal, session_id) if wake is not None else None
    if not woken:
        offline = ["--offline"] if await _recorded_offline(journal, session_id) else []
        woken = f"go on with: {command_line('resume', journal, session_id, *offline)}"
    sys.stdout.write(f"{woken}\n")
    return ExitCode.COMPLETED


async def _recorded_offline(journal: str, session_id: str) -> bool:
    """Whether run `session_id` was recorded playing a spec's `[demo]` script (`jeeves run --offline`)."""
    store = open_journal(journal, create=False)
    try:
        record = await store.get_session(session_id)
    finally:
        await close_journal(store)
    return bool(record is not None and record.source and record.source.get("offline"))


ENDED = frozenset({"completed", "rejected", "expired"})
"""Run states no resume goes on from: no gate of such a run waits for a decision."""


async def gates_command(journal: str, session_id: str | None = None, out: TextIO | None = None) -> int:
    """`jeeves gates`: every gate waiting for a decision in `journal` (of run `session_id`,
    or of every run that can still go on), one line each with its expiry and the command
    that decides it. The journal is opened once; the steps of an ended run are not read."""
    out = out or sys.stdout
    store = open_journal(journal, create=False)
    try:
        return await _list_gates(store, journal, session_id, out)
    finally:
        await close_journal(store)


async def _list_gates(store: JournalStore, journal: str, session_id: str | None, out: TextIO) -> int:
    if session_id is not None and await find_run(store, session_id) is None:
        raise UserError(
            f"{journal} holds no run {session_id!r}; `{command_line('runs', journal)}` lists its runs."
        )
    roots = (
        [session_id]
        if session_id
        else [r.session_id for r in await read_runs(store) if r.status not in ENDED]
    )
    shown = 0
    for root in roots:
        gates = await pending_gates(store, root)
        for gate in gates:
            which = ["--gate", gate.gate_id] if len(gates) > 1 else []
            out.write(f"{describe_gate(gate)}\n")
            out.write(f"  decide with: {command_line('approve', journal, root, '--by', 'NAME', *which)}\n")
        shown += len(gates)
    if not shown:
        out.write("no gate is waiting for a decision\n")
    return ExitCode.COMPLETED


def gate_hints(result: RunResult, journal: str | None, *, offline: bool) -> list[str]:
    """A run suspended at gates: the gates, and how to decide them and go on (a replay would
    only stop at the same gates again)."""
    lines = [f"pending: {describe_gate(gate)}" for gate in result.pending]
    if journal:  # a run without a journal cannot be resumed: its gates are not on record
        root = result.session_id
        which = [["--gate", g.gate_id] for g in result.pending] if len(result.pending) > 1 else [[]]
        for gate in which:
            lines.append(f"decide with: {command_line('approve', journal, root, '--by', 'NAME', *gate)}")
        lines.append("  (or `deny` instead of `approve`)")
        lines.append(
            f"then resume: {command_line('resume', journal, root, *(['--offline'] if offline else []))}"
        )
    return lines


def outcome_lines(result: RunResult, journal: str | None, *, offline: bool) -> list[str]:
    """What `run` and `resume` print after the tree: the output, the stop reason and what
    each role path spent, the journal, then how to go on (gates) or to replay the run."""
    total, *per_path = spend_lines(result.usage, result.usage_by_path)
    lines = [*output_lines(result.text), f"stop reason: {result.stop_reason} · {total}", *per_path]
    if journal:
        lines.append(f"journal: {journal}")
    if result.status == "awaiting_approval":
        lines += gate_hints(result, journal, offline=offline)
    elif journal:
        lines.append(f"replay it: {command_line('replay', journal, result.session_id)}")
    return lines


@dataclass
class ResumeTarget:
    """What a resume runs with: the architecture (None: rebuilt from the source recorded with
    the run), its routes and approval policy, and the offline script to go on with."""

    arch: Architecture | None = None
    router: Router | None = None
    approvals: Approvals | None = None
    scripted: ScriptedModel | None = None
    """The `[demo]` script of an offline resume: the calls the journal serves skip their replies."""
    offline: bool = False
    hints: Sequence[str] = field(default_factory=tuple)
    """`--model` flags to repeat in the commands printed to go on."""


def policy_ref(ref: str) -> Approvals:
    """The `Approvals` object `MODULE:ATTR` names (`jeeves resume --approvals`)."""
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    found = import_object(ref)
    if not isinstance(found, Approvals):
        raise UserError(f"--approvals {ref!r} is {found!r:.80}, not a jeeves.approvals.Approvals policy.")
    return found


async def resume_command(
    journal: str,
    session_id: str,
    target: ResumeTarget | None = None,
    *,
    as_json: bool = False,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Resume run `session_id`, shown as a tree (or one JSON event per line), then its
    outcome; returns the exit code (`jeeves.cli.exits`)."""
    out, err = out or sys.stdout, err or sys.stderr
    target = target or ResumeTarget()
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        store = open_journal(journal, create=False)
    except (UserError, JournalError) as exc:
        err.write(f"error: {exc}\n")
        return ExitCode.BAD_INPUT
    try:
        result = await _resume(store, session_id, target, as_json, out)
    except MissingCredentials as exc:
        again = command_line("resume", journal, session_id, *target.hints, "--offline")
        err.write(
            f"error: {str(exc).rstrip('.')}; or go on offline, from the spec's [demo] script: {again}\n"
        )
        return ExitCode.BAD_INPUT
    except (UserError, JournalError) as exc:
        err.write(f"error: {exc}\n")
        return ExitCode.BAD_INPUT
    except JeevesError as exc:
        err.write(f"error: the run failed: {error_type_name(exc)}: {exc}\n")
        return ExitCode.FAILED
    finally:
        await close_journal(store)
    if not as_json:
        out.write("\n".join(outcome_lines(result, journal, offline=target.offline)) + "\n")
    return exit_code(result.status, result.stop_reason)


async def _resume(
    store: JournalStore, session_id: str, target: ResumeTarget, as_json: bool, out: TextIO
) -> RunResult:
    plan = await plan_replay(store, session_id, target.arch)
    if target.scripted is not None:
        await skip_served(target.scripted, store, session_id)
    async with (
        restored_if_nothing_ran(store, session_id),
        stream(
            plan.arch,
            plan.task,
            session_id=session_id,
            role=plan.role,
            journal=store,
            router=target.router,
            approvals=target.approvals,
        ) as events,
    ):
        await follow(events, as_json=as_json, file=out, refresh_per_second=REFRESH_PER_SECOND)
        return await events.result()
