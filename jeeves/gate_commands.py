"""`jeeves approve`, `jeeves deny` and `jeeves resume`: decide a suspended run's gates and go on.

Each works from any process that can open the journal, after the run's own process
exited or was killed. `approve` approves exactly the arguments the gate shows (their hash
is taken from the journal); `resume` rebuilds the architecture from the source recorded
with the run (or `--spec`) and serves every recorded step.

Exit codes of `resume`: 0 completed; 1 failed, expired, rejected or cancelled; 3 still
awaiting approval (the pending gates are printed); 2 configuration or journal errors.

The approval policy `resume` enforces comes from code, never from the journal's copy:
`--approvals MODULE:ATTR` (an `Approvals` object), else the `[approvals]` of the spec
(`--spec FILE.toml`, or the spec file a spec run was started from, read again). A run
recorded under a policy that is given none is refused (`jeeves.gating.enforced_policy`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal

from jeeves.approvals import Approvals, Decision, PendingGate, parse_gate_id, pending_gates, record_decision
from jeeves.architecture import Architecture
from jeeves.errors import UserError
from jeeves.invocation import command_line
from jeeves.models.router import Router
from jeeves.replay.api import close_journal, open_journal
from jeeves.replay.source import import_object, resolve_ref
from jeeves.runner import resume

__all__ = ["decide_command", "describe_gate", "policy_ref", "resume_command"]

SourcePolicy = Callable[[Mapping[str, Any]], Approvals | None]
"""The policy the code a run was recorded from gives (a spec's `[approvals]`), from its source."""


def describe_gate(gate: PendingGate) -> str:
    """One line: the gate id, the call, its mode and when it expires."""
    expires = "" if gate.expires_at is None else f" expires_at={gate.expires_at:.0f}"
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
    sys.stdout.write(f"{verb} {describe_gate(target)} by {by}\n")
    woken = await wake(journal, session_id) if wake is not None else None
    sys.stdout.write(
        f"{woken}\n" if woken else f"go on with: {command_line('resume', journal, session_id)}\n"
    )
    return 0


def policy_ref(ref: str) -> Approvals:
    """The `Approvals` object `MODULE:ATTR` names (`jeeves resume --approvals`)."""
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    found = import_object(ref)
    if not isinstance(found, Approvals):
        raise UserError(f"--approvals {ref!r} is {found!r:.80}, not a jeeves.approvals.Approvals policy.")
    return found


async def _source_policy(journal: str, session_id: str, policy_of: SourcePolicy) -> Approvals | None:
    store = open_journal(journal, create=False)
    try:
        record = await store.get_session(session_id)
    finally:
        await close_journal(store)
    return policy_of(record.source) if record is not None and record.source else None


async def resume_command(
    journal: str,
    session_id: str,
    spec: str | Architecture | None = None,
    router: Router | None = None,
    approvals: Approvals | None = None,
    policy_of: SourcePolicy | None = None,
) -> int:
    """Resume run `session_id` and print its status and output (or its pending gates).

    `approvals` is the policy to enforce; without it, `policy_of(source)` gives the one of
    the code the run was recorded from (the spec file a spec run names), if any."""
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    arch = resolve_ref(spec) if isinstance(spec, str) else spec
    if approvals is None and policy_of is not None:
        approvals = await _source_policy(journal, session_id, policy_of)
    result = await resume(arch, session_id, journal=journal, router=router, approvals=approvals)
    sys.stdout.write(f"status: {result.status}\n")
    if result.status == "awaiting_approval":
        for pending in result.pending:
            sys.stdout.write(f"pending: {describe_gate(pending)}\n")
        sys.stdout.write(f"approve with: {command_line('approve', journal, session_id, '--by', 'NAME')}\n")
        return 3
    sys.stdout.write(f"output: {result.text}\n")
    return 0 if result.status == "completed" else 1
