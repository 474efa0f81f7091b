"""The Context an architecture runs in: emit events, run children, call models, run steps.

One `RunState` is shared by every session of a run (the event channel, the router, the
budget meter, the journal, the tracer, the usage ledger, the approval policy); each
session gets its own `Context` with its id, its role path and its own step counter.

`Context` is the one object an architecture sees. It is assembled from parts that each do
one job and can be read alone:

- `jeeves._run.steps`: identity, events, journaled steps and progress envelopes (the base);
- `jeeves._run.sessions`: a session's start, end and journal record (the lifecycle, the lease);
- `jeeves._run.model_calls`: routed, budgeted, journaled, traced model calls;
- `jeeves._run.gates`: approval gates, journaled as steps;
- `jeeves._run.state`: what the sessions of one run share, and how a run suspends.

Invariants:
- ids come only from `child_id(parent, role, index)`; nothing here reads a clock or a
  random source to name anything;
- step indices are allocated in program order within a session (`next_step_index`), so
  callers that start steps concurrently allocate the indices first, in a fixed order;
- a journaled step that ran live is recorded with the events it emitted; replayed, it
  re-emits those events marked `replayed=True` and charges no usage or budget.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from contextvars import ContextVar
from typing import Any

import anyio

from jeeves._base.ids import child_id, validate_name
from jeeves._base.validate import short_repr
from jeeves._run.architecture import Architecture, Output
from jeeves._run.gates import Gates
from jeeves._run.model_calls import ModelCalls
from jeeves._run.sessions import Sessions
from jeeves._run.state import RunState, StepResult
from jeeves._run.steering import INJECT_STEP, Intervener, Intervention, Turn, span_event, watchdog_evaluation
from jeeves.budget import Budget
from jeeves.errors import PROGRAM_ERRORS, BudgetExceeded, JournalError, UserTypeError
from jeeves.events import SteeringInjected, WatchdogVerdictEvent
from jeeves.messages import Usage
from jeeves.telemetry.tracer import EventAttributes, Tracer

__all__ = ["SPREADER", "Context", "RunState", "Spreader", "StepResult"]

Spreader = Callable[["Context", Architecture, str, int], Awaitable[bool]]
"""Runs a child session elsewhere (another worker), given its prepared context, the child
its task and index, and returns once it ended there: True when it ran (the session is then
adopted from the journal), False when it cannot leave this process (it runs here)."""

SPREADER: ContextVar[Spreader | None] = ContextVar("jeeves_spreader", default=None)
"""Set by a durable worker around a run it executes, so `ctx.run(..., spread=True)`
children may run on other workers (`jeeves.durable`); unset, every child runs here."""


def check_budget(budget: object) -> Budget | None:
    if budget is None or isinstance(budget, Budget):
        return budget
    raise UserTypeError(
        f"ctx.run(budget=) must be a jeeves.Budget or None, got {short_repr(budget)}; e.g. Budget(max_tokens=2000)."
    )


async def _run_spread(ctx: Context, child: Architecture, task: str, index: int, spreader: Spreader) -> Output:
    """A child run on another worker, then adopted here from what that worker recorded.

    The spreader failing (the queue's database unreachable, a branch that ended without an
    outcome) stops the run as a `JournalError`: no architecture reads it as the child's
    failure, which would be recorded and make the run's record depend on an outage."""
    try:
        ctx._adopted = await spreader(ctx, child, task, index)
    except anyio.get_cancelled_exc_class():
        raise
    except PROGRAM_ERRORS:
        raise
    except Exception as exc:
        raise JournalError(
            f"Session {ctx.session_id!r} could not run on another worker ({type(exc).__name__}: {exc}); the "
            f"run stops here, keeping every step done: fix the cause and resume it."
        ) from exc
    if ctx._slice is None:
        return await ctx.execute(child, task, index=index)
    return await _run_sliced(ctx, child, task, index)


async def _run_sliced(ctx: Context, child: Architecture, task: str, index: int) -> Output:
    """A child run under a budget slice: its Output, or the slice's `BudgetExceeded` (with
    that Output on `error.output`) when the slice stopped one of its steps."""
    output = await ctx.execute(child, task, index=index)
    stopped = ctx.slice_stopped()
    if stopped is not None:
        error = BudgetExceeded(
            str(stopped),
            limit=stopped.limit,
            allowed=stopped.allowed,
            spent=stopped.spent,
            slice_id=stopped.slice_id,
        )
        error.output = output
        raise error
    return output


class Context(Sessions, ModelCalls, Gates):
    """One session's handle on the run. Architectures get one in `run(ctx, task)`."""

    __slots__ = ()

    # -- children ----------------------------------------------------------------------
    def run(
        self,
        child: Architecture,
        task: str,
        *,
        role: str,
        index: int = 0,
        share_route: bool = False,
        intervene: Intervener | None = None,
        budget: Budget | None = None,
        spread: bool = False,
    ) -> Coroutine[Any, Any, Output]:
        """Run `child` as session `{self.session_id}__{role}_{index}` and return its Output.

        The child's events stream into the same run. If the child raises, `session.failed`
        is emitted and the exception propagates, tagged with the child's session id.

        With `share_route=True` the child's model calls route as this session's would
        (the router looks up this session's role path, not the child's), so children
        that must use one model share it (SelfRefine's drafts and feedback). The route is
        still resolved lazily, at the first live call, so a strict replay needs no router.

        `intervene` is called between the child's model turns when the child is an Agent
        (see `jeeves._run.steering`): it may add messages to the agent's conversation or stop it.

        With `budget=` the child runs under its own slice of this session's budget: each limit
        held to what remains above when it starts (its first step, `budget_slice`, records
        the allotment; `budget.sliced` announces it). Its spend counts once, in the slice and
        in every budget above. When the slice stops one of the child's steps, this raises
        `BudgetExceeded` with `slice_id` = the child's session id, even if the child kept a
        partial output (it is on `error.output`); the run's own budget still stops the run.

        With `spread=True` the child may run on another worker when this run executes on
        durable workers that spread (`jeeves worker`, docs/scaling.md): it is queued there,
        this session waits for it to end, then adopts it from the journal (its steps served
        as that worker recorded them, its events emitted and its usage charged here, as if
        it had run here). Elsewhere, and for a child with `intervene=`, it runs here.
        Architectures pass it for branches that run in parallel (Supervisor's delegations,
        PlanExecute's steps).

        Await it as any coroutine (`await ctx.run(...)`): without `budget=` it returns the
        child session's own coroutine, so a nested run keeps one coroutine frame per level
        alive, not two (with `budget=`, one more frame raises the slice's error).
        """
        validate_name(role)
        sid = child_id(self.session_id, role, index)
        ctx = Context(
            self._state,
            sid,
            role=role,
            role_path=(*self.role_path, role),
            parent_id=self.session_id,
            route_as=(self._route_as or self.role_path) if share_route else None,
            intervene=intervene,
            meter=self._meter,
            slice_budget=None if budget is None else check_budget(budget),
            adopted=self._adopted,
        )
        if spread and intervene is None and not self._adopted and self._state.mode != "replay":
            spreader = SPREADER.get()
            if spreader is not None and self._state.journal is not None:
                return _run_spread(ctx, child, task, index, spreader)
        if ctx._slice is None:
            return ctx.execute(child, task, index=index)
        return _run_sliced(ctx, child, task, index)

    @property
    def steered(self) -> bool:
        """Whether a parent attached an intervener to this session (`ctx.run(..., intervene=)`)."""
        return self._intervene is not None

    async def intervention(self, turn: Turn) -> Intervention | None:
        """What this session's intervener (if its parent attached one) asks after `turn`."""
        if self._intervene is None:
            return None
        return await self._intervene(turn)

    async def injected(self, turn: int) -> tuple[str, ...]:
        """A human's messages for this session, taken at the boundary after `turn`.

        Taken from the run's inbox as a journaled `function` step named `inject` (request:
        the turn), made only when there are messages. A replay, or a resume that reaches
        the boundary where the recording took messages, finds that step at this session's
        next index and is served it; the inbox is not read then. Each message is announced
        as `steering.injected` (source `human`) and put on this session's span.
        """
        state = self._state
        served = False
        if state.journal is not None and not (state.fresh and not self._adopted):  # a new run has no step
            record = await state.journal.get_step(self.session_id, self._steps)
            served = record is not None and record.kind == "function" and record.name == INJECT_STEP
        if not served and (state.mode == "replay" or self._adopted or not len(state.inbox)):
            return ()
        messages = state.inbox.take(self.session_id) if not served else ()
        if not served and not messages:
            return ()

        async def take() -> list[str]:
            return list(messages)

        taken, replayed = await self.step("function", INJECT_STEP, {"turn": turn}, take, list[str])
        for text in taken:
            event = SteeringInjected(
                session_id=self.session_id,
                target_session_id=self.session_id,
                cause="human",
                source="human",
                message=text,
                replayed=replayed,
            )
            self.span_event(self.session_id, event)
            await self.emit(event)
        return tuple(taken)

    def span_event(self, session_id: str, event: WatchdogVerdictEvent | SteeringInjected) -> None:
        """Put a verdict or an injected message on session `session_id`'s span, if it is open
        (a watchdog verdict also as a `gen_ai.evaluation.result`, see `jeeves._run.steering`)."""
        span = self._state.spans.get(session_id)
        if span is not None:
            span.add_event(*span_event(event))
            if isinstance(event, WatchdogVerdictEvent):
                span.add_event(*watchdog_evaluation(event, session_id))

    def add_span_event(self, session_id: str, name: str, attributes: EventAttributes) -> None:
        """Put an event on session `session_id`'s span, if it is open (a critic's verdict as a
        `gen_ai.evaluation.result` on the session it judged); a no-op without telemetry."""
        span = self._state.spans.get(session_id)
        if span is not None:
            span.add_event(name, attributes)

    @property
    def tracer(self) -> Tracer:
        """The run's tracer (a no-op unless telemetry is configured)."""
        return self._state.tracer

    def tree_usage(self, session_id: str | None = None) -> Usage:
        """Usage of a session (this one by default) and everything below it.

        Replayed calls count, as in events, so a replay reports the same numbers; what
        the run actually spent is in `RunResult.usage`.
        """
        return self._state.tree_usage(session_id or self.session_id)

    def count_tool_call(self, name: str) -> None:
        """Note that this session called tool `name` (live or replayed); stop conditions read it."""
        self._state.tool_calls.setdefault(self.session_id, []).append(name)

    def tool_calls(self, session_id: str | None = None) -> list[str]:
        """The tools called by a session (this one by default) and everything below it."""
        return self._state.tree_tool_calls(session_id or self.session_id)
