"""Branches: one child session of a run, executed in another process, adoptable by its parent.

A durable worker spreads a run's parallel children (`ctx.run(..., spread=True)`) over the
workers: each child becomes a branch that any worker executes as the very session it is
in the run (same id, parent, role path and route), recording into the run's shared
journal; the parent waits for it to end, then adopts it (see `Context.run`). Nothing here
knows DBOS: `jeeves.durable` queues branches and calls `stream_branch` to execute one.

A branch is described by a `Placement` (JSON-able, so it travels in a queue): where the
session sits in its run, and what the parent's session had left of the run's budget when
it started (the branch runs under it; its spend is charged to the run when adopted).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass
from typing import Any

from jeeves._base.ids import validate_name
from jeeves._run.channel import EventChannel
from jeeves._run.context import Architecture, Context, RunState
from jeeves._run.lifecycle import supervise
from jeeves._run.runner import RunResult, RunStream, build_router, ended, result_of, streamed
from jeeves.approvals.policy import Approvals
from jeeves.budget import Budget, BudgetMeter
from jeeves.errors import BudgetExceeded, RunEnded, UserError
from jeeves.journal.records import Journal
from jeeves.models.router import Router
from jeeves.telemetry.tracer import Tracer, default_tracer

__all__ = ["Placement", "placement_of", "stream_branch"]


@dataclass(frozen=True)
class Placement:
    """Where a branch sits in its run, and what it may spend."""

    session_id: str
    parent_id: str
    role: str
    role_path: tuple[str, ...]
    index: int
    route_as: tuple[str, ...] | None = None
    budget: dict[str, Any] | None = None
    """What the parent session had left of the run's budget (a `Budget` as JSON; None: no limit)."""
    slice: dict[str, Any] | None = None
    """The budget slice the parent asked for the child (`ctx.run(budget=)`), if any."""
    approvals: dict[str, Any] | None = None
    """The run's approval policy (an `Approvals` as JSON), which the branch's gates follow."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Placement:
        try:
            fields = dict(data)
            fields["role_path"] = tuple(fields["role_path"])
            if fields.get("route_as") is not None:
                fields["route_as"] = tuple(fields["route_as"])
            placement = cls(**fields)
        except (KeyError, TypeError) as exc:
            raise UserError(
                f"Branch placement {dict(data)!r} is malformed ({exc}); it was queued by another jeeves "
                f"version: run one version on every worker."
            ) from exc
        for role in placement.role_path:
            validate_name(role)
        return placement


def placement_of(ctx: Context, index: int) -> Placement:
    """The placement of child session `ctx` (prepared by `Context.run`, not yet started)."""
    state = ctx._state
    assert ctx.parent_id is not None
    return Placement(
        session_id=ctx.session_id,
        parent_id=ctx.parent_id,
        role=ctx.role,
        role_path=ctx.role_path,
        index=index,
        route_as=ctx._route_as,
        budget=None if ctx._meter.unlimited else ctx._meter.remaining().model_dump(mode="json"),
        slice=None if ctx._slice is None else ctx._slice.model_dump(mode="json"),
        approvals=None if state.approvals is None else state.approvals.model_dump(mode="json"),
    )


@asynccontextmanager
async def stream_branch(
    arch: Architecture,
    task: str,
    placement: Placement,
    *,
    journal: Journal,
    router: Router | None = None,
    tracer: Tracer | None = None,
    max_buffer: int = 256,
) -> AsyncIterator[RunStream]:
    """Execute `arch` on `task` as the branch session `placement` names, recording into
    `journal` (the run's), and stream its events (as `jeeves.stream` does).

    The result's `status` is "completed", "failed" (the session raised: its record in the
    journal says why, and the adopting parent raises it again), or "awaiting_approval" when
    it stopped at gates nobody decided yet (`pending`): execute it again once they are.
    """
    budget = Budget.model_validate(placement.budget) if placement.budget is not None else None
    channel = EventChannel(max_buffer)
    state = RunState(
        router=build_router(router, None, None),
        channel=channel,
        meter=BudgetMeter(budget),
        tracer=tracer if tracer is not None else default_tracer(),
        mode="record",
    )
    state.journal = journal
    if placement.approvals is not None:
        state.approvals = Approvals.model_validate(placement.approvals)
    branch = Context(
        state,
        placement.session_id,
        role=placement.role,
        role_path=placement.role_path,
        parent_id=placement.parent_id,
        route_as=placement.route_as,
        slice_budget=Budget.model_validate(placement.slice) if placement.slice is not None else None,
    )
    handle = RunStream(channel, placement.session_id, state)
    async with streamed(handle, lambda: _execute(state, branch, arch, task, placement.index)) as events:
        yield events


async def _execute(state: RunState, branch: Context, arch: Architecture, task: str, index: int) -> RunResult:
    try:
        outcome = await supervise(state, branch, arch, task, index=index)
    except BudgetExceeded as exc:
        result = ended(state, branch, "failed", str(exc))
        result.stop_reason = "budget"
        return result
    except RunEnded as exc:
        return ended(state, branch, exc.status, str(exc))  # type: ignore[arg-type]
    except Exception as exc:  # the session's own failure: recorded in its session record
        result = ended(state, branch, "failed", f"{type(exc).__name__}: {exc}")
        result.stop_reason = type(exc).__name__
        return result
    if outcome.suspended:
        result = ended(state, branch, "awaiting_approval", "awaiting_approval")
        result.pending = state.suspension.gates()
        return result
    assert outcome.output is not None
    return result_of(state, branch, outcome.output, outcome.output.stop_reason)
