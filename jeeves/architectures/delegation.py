"""One Supervisor turn: plan its tool calls in call order, run the delegations at once, settle in order.

The order of a supervisor session's events is a pure function of the model's reply, so a
replay (or trio, which starts tasks in another order) yields the same sequence:

1. In call order, before anything runs: each call's `tool.started`, then for a `delegate`
   call its `delegation.started` (with the child id, whose index is allocated here) or
   `delegation.rejected`.
2. Every accepted delegation runs at once in one task group; a worker's failure becomes
   that call's error result and does not touch its siblings.
3. `forward` calls are resolved once the turn's delegations are done, so they may name a
   worker delegated to in the same reply.
4. In call order again, each call's `delegation.completed` (accepted delegations) and
   `tool.completed` are released as soon as the calls before it are settled.

The worker's text, and for `forward` its whole Output, come from what `ctx.run` returned.
On replay the child is run again from its journaled steps, so the same Output comes back
and nothing here depends on state a replay would skip.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
from pydantic import BaseModel, ConfigDict, Field

from jeeves._base.ids import child_id
from jeeves._run.concurrency import run_all
from jeeves._run.context import Architecture, Context, Output
from jeeves._run.gates import approval_action, pass_gate, refusal
from jeeves._run.sessions import tool_span
from jeeves._run.steps import next_index
from jeeves.agent.tools import ToolOutcome
from jeeves.approvals.policy import ApprovalMode
from jeeves.errors import PROGRAM_ERRORS, BudgetExceeded
from jeeves.events import (
    DelegationCompleted,
    DelegationRejected,
    DelegationStarted,
    ToolCompleted,
    ToolStarted,
)
from jeeves.journal.records import error_type_name
from jeeves.messages import ToolCall, Usage

__all__ = ["Delegation", "Ledger", "run_turn", "worker_prompt"]


class Delegation(BaseModel):
    """One delegation a Supervisor made: who did what, what came back, what it cost."""

    model_config = ConfigDict(defer_build=True, arbitrary_types_allowed=True)

    worker: str
    session_id: str
    """The worker's session id: `{supervisor}__{worker}_{index}`."""
    index: int
    """How many delegations to this worker came before this one in the supervisor's run."""
    instructions: str
    """What the supervisor's model asked (the worker's task adds the user's task when shared)."""
    tool_call_id: str = ""
    text: str = ""
    """The worker's output text, or the error message when `is_error`."""
    is_error: bool = False
    stop_reason: str = ""
    """The worker's stop reason, or the error's type name when it raised."""
    usage: Usage = Field(default_factory=Usage)
    """Usage of the worker's session and everything below it."""
    output: Output | None = Field(default=None, repr=False)
    """The worker's own Output (its rounds, its delegations…); None when it raised."""


@dataclass
class Ledger:
    """What one Supervisor run has delegated so far (a fresh one per run)."""

    max_delegations: int
    counts: dict[str, int] = field(default_factory=dict)
    """Accepted delegations per worker: the next child index for that worker."""
    records: list[Delegation] = field(default_factory=list)
    """Every accepted delegation, in the order the indices were allocated."""
    budget_hit: bool = False
    """A worker ran out of budget (it raised, or returned with stop_reason "budget")."""
    budget_errors: dict[str, BudgetExceeded] = field(default_factory=dict)
    """BudgetExceeded raised by workers, by worker session id."""
    delegate_mode: ApprovalMode = "delegated"
    """The approval mode of a delegation: a run's policy may gate or refuse it."""

    def budget_error(self) -> BudgetExceeded | None:
        """The first (in allocation order) BudgetExceeded a worker raised, to re-raise when nothing is left."""
        return next(
            (self.budget_errors[r.session_id] for r in self.records if r.session_id in self.budget_errors),
            None,
        )

    pieces: set[str] = field(default_factory=set)
    """Session ids of delegations made in one reply with others: parts of a split task."""

    def best(self, *, whole: bool = False) -> Delegation | None:
        """The latest delegation (in allocation order) that returned an output; with `whole`,
        only one made alone in its reply (a parallel delegation's output is one piece of
        the answer, not an answer)."""
        return next(
            (
                r
                for r in reversed(self.records)
                if r.output is not None and not (whole and r.session_id in self.pieces)
            ),
            None,
        )


@dataclass
class _Plan:
    call: ToolCall
    kind: Literal["delegate", "forward", "other"]
    worker: str = ""
    error: str | None = None
    """The tool result when the call is refused or malformed."""
    record: Delegation | None = None
    """Set for an accepted delegation."""
    gate: int | None = None
    """The step index of the delegation's approval gate, when the run's policy asks."""
    arguments: dict[str, Any] = field(default_factory=dict)


def worker_prompt(instructions: str, task: str, share_task: bool) -> str:
    """The task a worker receives: the instructions, then (shared) the user's task as context."""
    if not share_task or not task.strip() or task.strip() == instructions.strip():
        return instructions
    return f"{instructions}\n\n---\nThe user's original task, for context (your job is the instructions above):\n{task}"


def _arguments(call: ToolCall, names: Sequence[str]) -> tuple[dict[str, str], str | None]:
    """The call's string arguments, and why they are unusable (None when they are fine)."""
    shape = ", ".join(f'"{n}": "..."' for n in names)
    fix = f"got {call.arguments!r}. Call {call.name} again with {{{shape}}}."
    try:
        raw: Any = json.loads(call.arguments or "{}")
    except ValueError as exc:
        return {}, f"Invalid arguments for {call.name!r}: not JSON ({exc}); {fix}"
    if not isinstance(raw, dict):
        return {}, f"Invalid arguments for {call.name!r}: not a JSON object; {fix}"
    args = {key: value for key, value in raw.items() if isinstance(value, str)}
    missing = [n for n in names if not args.get(n, "").strip()]
    if missing:
        return args, f"Invalid arguments for {call.name!r}: {missing[0]!r} must be a non-empty string; {fix}"
    return args, None


def _plan(call: ToolCall, workers: Mapping[str, Architecture], ledger: Ledger, ctx: Context) -> _Plan:
    """Classify one call and, for an accepted delegation, allocate its child index."""
    valid = ", ".join(workers)
    if call.name not in ("delegate", "forward"):
        return _Plan(call, "other", error=f"Unknown tool {call.name!r}; the tools are: delegate, forward.")
    kind: Literal["delegate", "forward"] = "delegate" if call.name == "delegate" else "forward"
    args, problem = _arguments(call, ["worker", "instructions"] if kind == "delegate" else ["worker"])
    worker = args.get("worker", "")
    if problem is None and worker not in workers:
        problem = f"Unknown worker {worker!r}; the workers are: {valid}."
    if problem is None and kind == "delegate" and len(ledger.records) >= ledger.max_delegations:
        problem = (
            f"Delegation to {worker!r} refused: this supervisor has made all {ledger.max_delegations} "
            f"delegations it may make (max_delegations). Answer with what you have, or forward a worker's output."
        )
    if problem is not None or kind == "forward":
        return _Plan(call, kind, worker=worker, error=problem)
    gated = {"worker": worker, "instructions": args["instructions"]}
    action = approval_action(ctx, "delegate", ledger.delegate_mode, gated)
    if action == "refuse":
        return _Plan(call, kind, worker=worker, error=refusal(ctx, "delegate", ledger.delegate_mode))
    gate = next_index(ctx) if action == "ask" else None
    index = ledger.counts.get(worker, 0)
    ledger.counts[worker] = index + 1
    record = Delegation(
        worker=worker,
        session_id=child_id(ctx.session_id, worker, index),
        index=index,
        instructions=args["instructions"],
        tool_call_id=call.id,
    )
    ledger.records.append(record)
    return _Plan(call, kind, worker=worker, record=record, gate=gate, arguments=gated)


def _resolve_forward(plans: Sequence[_Plan], position: int, ledger: Ledger) -> ToolOutcome:
    """The result of the forward call at `position`: the first valid forward in call order wins."""
    plan = plans[position]
    if plan.error is not None:
        return ToolOutcome(text=plan.error, is_error=True)
    for earlier in plans[:position]:
        if earlier.kind == "forward" and earlier.error is None and forwarded(earlier.worker, ledger)[0]:
            return ToolOutcome(
                text=f"Not forwarded: this reply already forwards {earlier.worker!r}'s output.", is_error=True
            )
    record, problem = forwarded(plan.worker, ledger)
    return ToolOutcome(text=problem, is_error=True) if record is None else ToolOutcome(text=record.text)


def forwarded(worker: str, ledger: Ledger) -> tuple[Delegation | None, str]:
    """The delegation whose output `forward(worker)` hands on, or why there is none."""
    record = next((r for r in reversed(ledger.records) if r.worker == worker), None)
    if record is None:
        return None, f"Nothing to forward: {worker!r} has not been delegated to yet; delegate first."
    if record.output is None:
        return None, (
            f"Nothing to forward: {worker!r}'s latest delegation ({record.session_id}) failed: "
            f"{record.text}. Delegate again or answer yourself."
        )
    return record, ""


async def _delegate(
    ctx: Context, worker: Architecture, record: Delegation, task: str, ledger: Ledger
) -> None:
    """Run one worker and fill in its record; failures become the record's error text."""
    arguments = json.dumps({"worker": record.worker, "instructions": record.instructions})
    with tool_span(ctx, "delegate", record.tool_call_id, arguments) as span:
        span.set_attribute("jeeves.worker", record.worker)
        try:
            output = await ctx.run(worker, task, role=record.worker, index=record.index, spread=True)
        except PROGRAM_ERRORS as exc:
            span.record_error(exc)
            raise
        except Exception as exc:  # cancellation is a BaseException and still tears the turn down
            span.record_error(exc)
            record.is_error, record.stop_reason = True, error_type_name(exc)
            record.text = f"Worker {record.worker!r} failed: {error_type_name(exc)}: {exc}"
            if isinstance(exc, BudgetExceeded):
                ledger.budget_hit = True
                ledger.budget_errors[record.session_id] = exc
        else:
            record.output, record.text, record.stop_reason = output, output.text, output.stop_reason
            ledger.budget_hit = ledger.budget_hit or output.stop_reason == "budget"
    record.usage = ctx.usage(record.session_id)


async def _gated_delegate(ctx: Context, plan: _Plan, worker: Architecture, task: str, ledger: Ledger) -> None:
    """Pass the delegation's gate (when the policy asks), then run the worker."""
    record = plan.record
    assert record is not None
    if plan.gate is not None:
        refused = await pass_gate(
            ctx, "delegate", plan.call.id, plan.arguments, ledger.delegate_mode, index=plan.gate
        )
        if refused is not None:
            record.is_error, record.stop_reason, record.text = True, "denied", refused
            return
    await _delegate(ctx, worker, record, task, ledger)


async def _emit_started(ctx: Context, plan: _Plan) -> None:
    sid, c = ctx.session_id, plan.call
    await ctx.emit(ToolStarted(session_id=sid, tool_call_id=c.id, name=c.name, arguments=c.arguments))
    if plan.record is not None:
        r = plan.record
        await ctx.emit(
            DelegationStarted(
                session_id=sid,
                worker=r.worker,
                child_session_id=r.session_id,
                instructions=r.instructions,
                tool_call_id=c.id,
            )
        )
    elif plan.kind == "delegate":
        await ctx.emit(
            DelegationRejected(session_id=sid, worker=plan.worker, reason=plan.error or "", tool_call_id=c.id)
        )


async def _emit_completed(ctx: Context, plan: _Plan, outcome: ToolOutcome) -> None:
    sid, c = ctx.session_id, plan.call
    if plan.record is not None:
        r = plan.record
        await ctx.emit(
            DelegationCompleted(
                session_id=sid,
                worker=r.worker,
                child_session_id=r.session_id,
                output=r.text,
                is_error=r.is_error,
                usage=r.usage,
                tool_call_id=c.id,
            )
        )
    await ctx.emit(
        ToolCompleted(
            session_id=sid, tool_call_id=c.id, name=c.name, result=outcome.text, is_error=outcome.is_error
        )
    )


async def run_turn(
    ctx: Context,
    calls: Sequence[ToolCall],
    workers: Mapping[str, Architecture],
    ledger: Ledger,
    prompt: Callable[[str], str],
) -> tuple[list[ToolOutcome], Delegation | None]:
    """Run one reply's tool calls; return each call's result (in call order) and what to forward.

    `prompt(instructions)` builds a worker's task. A forward resolves to the first valid
    `forward` call in call order; None when the reply forwards nothing.
    """
    plans = [_plan(c, workers, ledger, ctx) for c in calls]
    accepted = [p.record.session_id for p in plans if p.record is not None]
    if len(accepted) > 1:
        ledger.pieces.update(accepted)
    for plan in plans:
        await _emit_started(ctx, plan)
    pending = sum(1 for p in plans if p.record is not None)
    delegations_done = anyio.Event()
    if not pending:
        delegations_done.set()
    released = [anyio.Event() for _ in plans]

    async def job(position: int) -> ToolOutcome:
        nonlocal pending
        plan = plans[position]
        try:
            if plan.record is not None:
                try:
                    await _gated_delegate(
                        ctx, plan, workers[plan.worker], prompt(plan.record.instructions), ledger
                    )
                finally:
                    pending -= 1
                    if not pending:
                        delegations_done.set()
                outcome = ToolOutcome(text=plan.record.text, is_error=plan.record.is_error)
            elif plan.kind == "forward":
                await delegations_done.wait()
                outcome = _resolve_forward(plans, position, ledger)
            else:
                outcome = ToolOutcome(text=plan.error or "", is_error=True)
            if position:
                await released[position - 1].wait()
            await _emit_completed(ctx, plan, outcome)
            return outcome
        finally:
            released[position].set()

    outcomes = await run_all([functools.partial(job, p) for p in range(len(plans))])
    chosen = next(
        (p.worker for p, o in zip(plans, outcomes, strict=True) if p.kind == "forward" and not o.is_error),
        None,
    )
    return outcomes, (forwarded(chosen, ledger)[0] if chosen is not None else None)
