"""Journaled steps: the one path every nondeterministic step of a session takes.

`StepsCore` is the base of `jeeves._run.context.Context`: a session's identity, its event
emission and its step counter, and `_journaled`, which serves a recorded step or runs it
live under the budget and records it. The context's other parts (sessions, model calls,
gates) build on it; architectures only ever see the assembled `Context`.

Invariants:
- step indices are allocated in program order within a session (`next_step_index`), so
  callers that start steps concurrently allocate the indices first, in a fixed order;
- a journaled step that ran live is recorded with the events it emitted; replayed, it
  re-emits those events marked `replayed=True` and charges no usage or budget;
- while a run suspends at its gates (`Suspension`), every step counts itself in flight
  from its start to its record, so the runner stops the tree only between steps.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import anyio

from jeeves._base.trusted import trusted
from jeeves._run.state import RunState, StepResult
from jeeves.budget import Budget, BudgetMeter
from jeeves.errors import BudgetExceeded, MissingCredentials, ModelError, ReplayDivergence, UserError
from jeeves.events import BudgetExceededEvent, Event, Progress, SessionStarted
from jeeves.journal.delta import RequestChain, StepKey, plain_key, recorded_request
from jeeves.journal.records import (
    StepRecord,
    decode_error,
    encode_error,
    request_diff,
    served_events,
    served_result,
    step_origin,
)
from jeeves.models.base import Route

if TYPE_CHECKING:
    from jeeves._run.steering import Intervener

__all__ = ["StepKind", "StepsCore", "check_recorded", "diverged", "step_name"]

T = TypeVar("T")
StartFields = tuple[str, str | None, int, str, int, float]
"""A session's own `session.started` fields: architecture, model, index, task, seq, ts."""
_session_started = trusted(SessionStarted)
StepKind = Literal["model", "tool", "function", "gate"]


def tried_again_on_resume(record: StepRecord) -> bool:
    """A model call that failed at the provider (an outage, a rate limit, a bad or missing
    key, after every retry and fallback) is not a completed step, nor is any step the budget
    stopped (refused before it started, or cancelled in flight at a breach or the deadline):
    resuming the run makes it again, so a run stopped by such a failure goes on from there
    once it is fixed (or with a larger budget: a resume's budget is what the original left).
    Every other recorded failure (a tool's or a
    function critic's exception, a step a session's budget slice stopped: its allotment is
    recorded, so it would stop the step again) is an outcome the architecture acted on, and
    is served like a result. A strict replay serves every failure as recorded."""
    if record.error is None:
        return False
    error = decode_error(record.error, f"session {record.session_id!r} step {record.index}")
    return not step_completed(record.kind, error)


def step_completed(kind: str, error: BaseException | None) -> bool:
    """Whether a step that ended with `error` (None: a result) completed: see
    `tried_again_on_resume`, whose steps did not (progress envelopes do not count them)."""
    if error is None:
        return True
    if isinstance(error, BudgetExceeded):
        return error.slice_id is not None
    return not (kind == "model" and isinstance(error, ModelError | MissingCredentials))


def step_name(kind: str, name: str) -> str:
    return f"{kind} {name!r}" if name else f"{kind} call"


def check_recorded(record: StepRecord, session_id: str, kind: str, name: str, fp: str, request: Any) -> None:
    """Refuse a recorded step that is another kind or was asked with another request."""
    if record.kind != kind or record.fingerprint != fp:
        raise diverged(record, session_id, kind, name, record.request, request)


def diverged(
    record: StepRecord, session_id: str, kind: str, name: str, recorded: Any, request: Any
) -> ReplayDivergence:
    """The error for a recorded step asked again with another request (`recorded` and `request`
    whole, for the diff)."""
    return ReplayDivergence(
        f"Session {session_id!r} step {record.index} ({step_name(kind, name)}) differs from the recorded "
        f"{step_name(record.kind, record.name)}; the request changed:\n"
        f"{request_diff(recorded, request)}\n"
        f"Replay with the code, prompts and task that recorded the run, or start a new session id.",
        session_id=session_id,
        step=record.index,
    )


class StepsCore:
    """A session's identity, events and journaled steps (the base of `Context`)."""

    __slots__ = (
        "_adopted",
        "_intervene",
        "_meter",
        "_replayed",
        "_requests",
        "_route",
        "_route_as",
        "_slice",
        "_started",
        "_state",
        "_steps",
        "parent_id",
        "role",
        "role_path",
        "session_id",
    )

    def __init__(
        self,
        state: RunState,
        session_id: str,
        *,
        role: str,
        role_path: tuple[str, ...],
        parent_id: str | None,
        route_as: tuple[str, ...] | None = None,
        intervene: Intervener | None = None,
        meter: BudgetMeter | None = None,
        slice_budget: Budget | None = None,
        adopted: bool = False,
    ) -> None:
        self._state = state
        self._adopted = adopted
        """This session ran on another worker (`jeeves._run.branch`): its steps are served from the
        journal as that worker recorded them, and count as live here (events not marked
        `replayed`, usage and budget charged); a step the record lacks is a divergence."""
        self._intervene = intervene
        self._meter = meter or state.meter
        """The budget this session's steps run under: the run's, or a slice of it."""
        self._slice = slice_budget
        """The slice this session asked for (`Context.run(..., budget=)`), allotted when it starts."""
        self.session_id = session_id
        self.role = role
        self.role_path = role_path
        self.parent_id = parent_id
        self._steps = 0
        self._replayed = 0
        self._requests: RequestChain | None = None
        """This session's model requests so far, which the next one's journal step extends."""
        self._route: Route | None = None
        self._route_as = route_as
        self._started: SessionStarted | StartFields | None = None
        """The session's `session.started`, or only its own fields (built on demand by
        `started`): a bare run keeps no event object per open session."""

    # -- events ------------------------------------------------------------------------
    async def emit(self, event: Event) -> None:
        """Send an event into the run's stream; `seq` and `ts` are stamped here.

        In a strict replay every event is marked `replayed`: nothing in it ran live.
        """
        state = self._state
        if state.mode == "replay" and not event.replayed:  # a served step's events come marked
            event.replayed = True
        if not state.channel.offer(event):  # the buffer is full: wait for the reader
            await state.channel.put(event)

    @property
    def observed(self) -> bool:
        """Whether this run's events reach anyone: a reader (`jeeves.stream`, the server).

        False in `jeeves.run`, whose events nobody reads: an event a step does not record
        (session start/end, `model.completed`, a round, a critique) need not be built
        there; `emit` would stamp and drop it. Events a step records are built either way.
        """
        return self._state.channel.consume

    @property
    def replaying(self) -> bool:
        """Whether this run is a strict replay: every step is served from the journal, and an
        architecture must reach the same ends without deciding anything live (BestOfN does not
        cancel candidates then: each replays up to where its recording stopped)."""
        return self._state.mode == "replay"

    @property
    def started(self) -> SessionStarted:
        """This session's `session.started` event (its role, model, parent…).

        Equal to the event the stream carried (same fields, `seq`, `ts`, fields set); built
        from the session's own fields at the first access when the run kept only those (no
        journal, the default tracer), then kept."""
        started = self._started
        if started is None:
            raise UserError(
                f"Session {self.session_id!r} has not started; use ctx.run(...) to run architectures."
            )
        if not isinstance(started, tuple):
            return started
        architecture, model, index, task, seq, ts = started
        event = _session_started(
            session_id=self.session_id,
            parent_id=self.parent_id,
            role=self.role,
            role_path=list(self.role_path),
            architecture=architecture,
            model=model,
            index=index,
            task=task,
        )
        if self._state.mode == "replay":
            event.replayed = True  # as `emit` marks it (pydantic's setattr: in the fields set too)
        fields = event.__dict__
        fields["seq"], fields["ts"] = seq, ts  # as the channel stamped it
        self._started = event
        return event

    # -- steps -------------------------------------------------------------------------
    def next_step_index(self) -> int:
        """Allocate the next step index of this session. Allocate before starting concurrent steps."""
        index = self._steps
        self._steps += 1
        return index

    async def recorded(self, index: int | None = None) -> StepRecord | None:
        """The journal's record of step `index` of this session (default: the next step, which
        this does not allocate), served or not; None without a journal or a record."""
        journal = self._state.journal
        where = self._steps if index is None else index
        return None if journal is None else await journal.get_step(self.session_id, where)

    async def will_serve(self, index: int | None = None) -> bool:
        """Whether step `index` (default: the next) will be served from the journal, not run: any
        step of a strict replay or of a session adopted from another worker, or a recorded step
        a resume does not try again. A step whose live half needs a resource (an MCP server's
        process) acquires it only when this is False, so replaying never needs the resource."""
        if self._state.mode == "replay" or self._adopted:
            return True
        record = await self.recorded(index)
        return record is not None and not tried_again_on_resume(record)

    @contextmanager
    def waiting_outside(self) -> Iterator[None]:
        """While in this block the step running here does not count as in flight: it waits on
        something outside the run (an MCP server waiting for an elicitation's gate), so a run
        whose gates park suspends instead of waiting for it. Suspending cancels the step, which
        is then not recorded: a resume runs it again."""
        suspension = self._state.suspension
        suspension.leave()
        try:
            yield
        finally:
            suspension.enter()

    async def step(
        self,
        kind: Literal["tool", "function"],
        name: str,
        request: Any,
        run: Callable[[], Awaitable[T]],
        result_type: Any,
        *,
        index: int | None = None,
    ) -> StepResult[T]:
        """Run one nondeterministic step through the journal.

        `request` (JSON-able) is fingerprinted; `result_type` says how the result is
        stored and restored. With a journal holding this step, the recorded result is
        returned (or its recorded exception raised) and `run` is not called.
        """
        step_index = self.next_step_index() if index is None else index
        return await self._journaled(kind, name, step_index, lambda: plain_key(request), run, result_type, [])

    async def _journaled(
        self,
        kind: StepKind,
        name: str,
        index: int,
        payload: Callable[[], StepKey],
        run: Callable[[], Awaitable[T]],
        result_type: Any,
        emitted: list[Event],
    ) -> StepResult[T]:
        state = self._state
        suspension = state.suspension
        suspension.enter()
        try:
            if state.journal is None:  # the common path: run it live, count it, nothing to record
                value = await (run() if self._meter.unlimited else self._live(kind, run, emitted))
                state.completed_steps += 1
                # no journal: the envelope is only an event; a model call's is made once its
                # usage is charged (`_call_recorded`), so it never reports a budget one call stale
                if state.progress_interval_s is not None and kind != "model":
                    await self._completed(index)
                return StepResult(value, False)
            return await self._journaled_step(kind, name, index, payload, run, result_type, emitted)
        finally:
            suspension.leave()

    async def _journaled_step(
        self,
        kind: StepKind,
        name: str,
        index: int,
        payload: Callable[[], StepKey],
        run: Callable[[], Awaitable[T]],
        result_type: Any,
        emitted: list[Event],
    ) -> StepResult[T]:
        state = self._state
        journal = state.journal
        assert journal is not None
        key = payload()
        # a new run has nothing recorded to serve (an adopted session's steps are another worker's)
        fresh = state.fresh and not self._adopted
        record = None if fresh else await journal.get_step(self.session_id, index)
        if record is not None:
            if record.kind != kind or not key.matches(record):
                raise await self._diverged(record, kind, name, key)
            adopted = self._adopted  # set only by a live run's spread child (`Context.run`)
            if state.mode == "replay" or adopted or not tried_again_on_resume(record):
                key.commit()
                if not adopted:
                    self._replayed += 1
                where = step_origin(record, journal)
                for event in served_events(record, where, replayed=not adopted):
                    await self.emit(event)
                if record.error is not None:
                    recorded = decode_error(record.error, where)
                    self._meter.restore(recorded)  # a slice that stopped this step stopped it again
                    if step_completed(kind, recorded):
                        state.completed_steps += 1
                    raise recorded
                state.completed_steps += 1  # a step of this run completed by an earlier attempt
                return StepResult(served_result(record, state.adapter(result_type), where), not adopted)
        elif self._adopted:
            raise self._unadopted(index, step_name(kind, name))
        elif state.mode == "replay":
            raise ReplayDivergence(
                f"Session {self.session_id!r} asked for step {index} ({step_name(kind, name)}), which the journal does not "
                f"hold: the recorded run ended earlier or took another path. Replay with the code that recorded it.",
                session_id=self.session_id,
                step=index,
            )
        error: BaseException | None = None
        try:
            result: T | None = await self._live(kind, run, emitted)
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:
            error, result = exc, None
        with anyio.CancelScope(shield=True):
            await journal.put_step(
                StepRecord(
                    session_id=self.session_id,
                    index=index,
                    kind=kind,
                    name=name,
                    fingerprint=key.fingerprint,
                    request=key.stored,
                    result=None if error else state.adapter(result_type).dump_python(result, mode="json"),
                    error=encode_error(error) if error else None,
                    events=[e.model_dump(mode="json", exclude={"seq", "ts", "replayed"}) for e in emitted],
                )
            )
        key.commit()
        if step_completed(kind, error):
            state.completed_steps += 1
        if kind != "model" or error is not None:  # a model call's envelope waits for its charge
            await self._completed(index)
        if error is not None:
            raise error
        return StepResult(result, False)  # type: ignore[arg-type]

    async def _diverged(self, record: StepRecord, kind: str, name: str, key: StepKey) -> ReplayDivergence:
        """The divergence at a recorded step asked with another request, with both requests whole
        (a model step's record holds what it added: read back through the steps before it)."""
        recorded = record.request
        journal = self._state.journal
        if record.kind == "model" and journal is not None:
            sid = self.session_id
            recorded = await recorded_request(lambda i: journal.get_step(sid, i), record)
        return diverged(record, self.session_id, kind, name, recorded, key.whole())

    def _unadopted(self, index: int, step: str) -> ReplayDivergence:
        """The error for a step an adopted session asks for that its worker did not record."""
        return ReplayDivergence(
            f"Session {self.session_id!r} ran on another worker, whose record lacks step {index} ({step}): "
            f"the workers run different code or specs. Give every worker the same code, then resume the run.",
            session_id=self.session_id,
            step=index,
        )

    async def _live(self, kind: str, run: Callable[[], Awaitable[T]], emitted: list[Event]) -> T:
        """Run a step live under the run's budget (see `BudgetMeter.live`): a step the budget
        refuses or stops raises BudgetExceeded, which the run's first such step announces."""
        try:
            with self._meter.live(model_call=kind == "model"):
                result = await run()
        except BudgetExceeded as exc:
            await self._announce(exc, emitted)
            raise
        return result

    async def _announce(self, exc: BudgetExceeded, emitted: list[Event]) -> None:
        """Emit `budget.exceeded` once per budget (the run's, each slice's), from the first step
        it stopped."""
        meter = self._meter.owning(exc)
        if not meter.announced:
            meter.announced = True
            event = BudgetExceededEvent(
                session_id=self.session_id,
                limit=exc.limit,
                allowed=exc.allowed,
                spent=exc.spent,
                slice_id=exc.slice_id,
            )
            emitted.append(event)
            await self.emit(event)

    # -- progress ----------------------------------------------------------------------
    async def _completed(self, index: int) -> None:
        """Count a step completed live and keep the run's progress envelope (the heartbeat
        records it); with `progress_s` set, emit it as a `progress` event at most once per
        `progress_s` seconds (live only: a replay serves steps and reports no progress).
        The caller has counted the step in `completed_steps`."""
        state = self._state
        event = self._progress(index, None)
        state.progress = event.model_dump(mode="json", exclude={"seq", "ts", "replayed", "type"})
        now = time.monotonic()
        if state.progress_interval_s is None or now - state.last_progress < state.progress_interval_s:
            return
        state.last_progress = now
        await self.emit(event)

    def report_plan(self, total: int, completed: int, current: str | None = None) -> None:
        """Tell the run's progress envelopes where it is in the verified plan it executes:
        `total` steps, `completed` of them done, `current` (a plan step id) in flight."""
        self._state.plan_progress = (total, completed, current)

    def _progress(self, index: int, gate: str | None) -> Progress:
        meter = self._state.meter
        plan = self._state.plan_progress
        b, spent = meter.budget, meter.spent

        def left(allowed: float | None, used: float) -> float | None:
            return None if allowed is None else max(0.0, allowed - used)

        tokens = left(b.max_tokens, spent.total_tokens)
        calls = left(b.max_model_calls, spent.model_calls)
        return Progress(
            session_id=self.session_id,
            step=index,
            completed_steps=self._state.completed_steps,
            tokens_left=None if tokens is None else int(tokens),
            model_calls_left=None if calls is None else int(calls),
            usd_left=left(b.max_usd, spent.cost_usd),
            seconds_left=left(b.deadline_s, meter.elapsed()),
            gate=gate,
            total_steps=plan[0] if plan else None,
            plan_steps_completed=plan[1] if plan else None,
            current_step=plan[2] if plan else None,
        )
