"""Journaled steps: the one path every nondeterministic step of a session takes.

`journaled` serves a recorded step or runs it live under the budget and records it; a
model call (`jeeves._run.model_calls`), a tool or function step (`Context.step`) and a
session's budget slice all take it. Gates are steps too, recorded in two halves
(`jeeves._run.gates`).

Invariants:
- step indices are allocated in program order within a session (`next_index`), so
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
from typing import Any, Literal, TypeVar

import anyio

from jeeves._run.state import Reached, Session, StepResult, emit, envelope_of
from jeeves.budget import BudgetMeter
from jeeves.errors import BudgetExceeded, MissingCredentials, ModelError, ReplayDivergence, UserError
from jeeves.events import BudgetExceededEvent, Event, Progress
from jeeves.journal.delta import RequestChain, StepKey, plain_key, recorded_request
from jeeves.journal.records import (
    SessionRecord,
    StepRecord,
    decode_error,
    encode_error,
    live_record,
    request_diff,
    served_events,
    served_result,
    step_origin,
)
from jeeves.messages import ModelRequest

__all__ = [
    "StepKind",
    "check_recorded",
    "diverged",
    "envelope",
    "journaled",
    "next_index",
    "put_whole",
    "reached",
    "recordable",
    "recorded",
    "report_plan",
    "step_name",
    "waiting_outside",
    "will_serve",
]

T = TypeVar("T")
R = TypeVar("R", StepRecord, SessionRecord)
StepKind = Literal["model", "tool", "function", "gate"]
_NOT_EVENT_FIELDS = {"seq", "ts", "replayed"}


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


def recordable(session: Session, index: int, request: Any) -> StepKey:
    """What a journaled step stores as its request, and the fingerprint a later run's request
    must match: the one place a step's request becomes its record. A model request is stored
    as what it adds to the session's previous one, chained to it (`jeeves.journal.delta`), so
    a step's cost does not grow with the conversation; any other request whole."""
    if isinstance(request, ModelRequest):
        if session._requests is None:
            session._requests = RequestChain()
        return session._requests.key(request, index)
    try:
        return plain_key(request)
    except (ValueError, RecursionError):  # JSON cannot hold it: a user's request, not a bug
        raise UserError(
            f"Step {index} of session {session.session_id!r} cannot be journaled: its request holds itself "
            f"or is nested too deeply for JSON. Give ctx.step a JSON-able request (dicts, lists, strings, "
            f"numbers) with no cycle, nested at most a few hundred levels."
        ) from None


# -- indices and records ---------------------------------------------------------------
def next_index(session: Session) -> int:
    """Allocate the next step index of `session`. Allocate before starting concurrent steps."""
    index = session._steps
    session._steps += 1
    return index


async def recorded(session: Session, index: int | None = None) -> StepRecord | None:
    """The journal's record of step `index` of `session` (default: the next step, which this
    does not allocate), served or not; None without a journal or a record."""
    journal = session._state.journal
    where = session._steps if index is None else index
    return None if journal is None else await journal.get_step(session.session_id, where)


async def will_serve(session: Session, index: int | None = None) -> bool:
    """Whether step `index` (default: the next) will be served from the journal, not run: any
    step of a strict replay or of a session adopted from another worker, or a recorded step
    a resume does not try again. A step whose live half needs a resource (an MCP server's
    process) acquires it only when this is False, so replaying never needs the resource."""
    if session._state.mode == "replay" or session._adopted:
        return True
    record = await recorded(session, index)
    return record is not None and not tried_again_on_resume(record)


@contextmanager
def waiting_outside(session: Session) -> Iterator[None]:
    """While in this block the step running here does not count as in flight: it waits on
    something outside the run (an MCP server waiting for an elicitation's gate), so a run
    whose gates park suspends instead of waiting for it. Suspending cancels the step, which
    is then not recorded: a resume runs it again."""
    suspension = session._state.suspension
    suspension.leave()
    try:
        yield
    finally:
        suspension.enter()


# -- the step path ---------------------------------------------------------------------
async def journaled(
    session: Session,
    kind: StepKind,
    name: str,
    index: int,
    request: Callable[[], Any],
    run: Callable[[], Awaitable[T]],
    result_type: Any,
    emitted: list[Event],
) -> StepResult[T]:
    """Step `index` of `session`: served from the journal when it holds it (its events
    re-emitted, its result returned or its error raised; `run` is not called), else run
    live under the budget and, with a journal, recorded with the events in `emitted`.

    `request()` builds the step's JSON-able request (only when a journal needs it)."""
    state = session._state
    state.suspension.enter()
    try:
        journal = state.journal
        if journal is None:
            return await _run(session, kind, name, index, None, run, result_type, emitted)
        key = recordable(session, index, request())
        # a new run has nothing recorded to serve (an adopted session's steps are another worker's)
        fresh = state.fresh and not session._adopted
        record = None if fresh else await journal.get_step(session.session_id, index)
        if record is not None:
            if record.kind != kind or not key.matches(record):
                raise await _diverged(session, record, kind, name, key)
            if state.mode == "replay" or session._adopted or not tried_again_on_resume(record):
                key.commit()
                return await _serve(session, kind, record, result_type)
        elif session._adopted:
            raise unadopted(session, index, step_name(kind, name))
        elif state.mode == "replay":
            raise ReplayDivergence(
                f"Session {session.session_id!r} asked for step {index} ({step_name(kind, name)}), which the journal "
                f"does not hold: the recorded run ended earlier or took another path. Replay with the code that "
                f"recorded it.",
                session_id=session.session_id,
                step=index,
            )
        return await _run(session, kind, name, index, key, run, result_type, emitted)
    finally:
        state.suspension.leave()


async def _diverged(
    session: Session, record: StepRecord, kind: str, name: str, key: StepKey
) -> ReplayDivergence:
    """The divergence at a recorded step asked with another request, with both requests whole
    (a model step's record holds what it added: read back through the steps before it)."""
    recorded = record.request
    journal = session._state.journal
    if record.kind == "model" and journal is not None:
        sid = session.session_id
        recorded = await recorded_request(lambda i: journal.get_step(sid, i), record)
    return diverged(record, session.session_id, kind, name, recorded, key.whole())


async def _serve(session: Session, kind: StepKind, record: StepRecord, result_type: Any) -> StepResult[Any]:
    """A recorded step, served: its events re-emitted, its result returned or its error raised.
    An adopted session's steps count as live here (`Session._adopted`)."""
    state = session._state
    adopted = session._adopted
    if not adopted:
        session._replayed += 1
    where = step_origin(record, state.journal)
    for event in served_events(record, where, replayed=not adopted):
        await emit(session, event)
    if record.error is not None:
        error = decode_error(record.error, where)
        session._meter.restore(error)  # a slice that stopped this step stops it again
        if step_completed(kind, error):
            state.completed_steps += 1
        raise error
    state.completed_steps += 1  # a step of this run completed by an earlier attempt
    return StepResult(served_result(record, state.adapter(result_type), where), not adopted)


async def _run(
    session: Session,
    kind: StepKind,
    name: str,
    index: int,
    record: StepKey | None,
    run: Callable[[], Awaitable[T]],
    result_type: Any,
    emitted: list[Event],
) -> StepResult[T]:
    """A step run live under the budget; with `record` (its stored request and fingerprint)
    written to the journal, result or error, with the events it emitted."""
    state = session._state
    error: BaseException | None = None
    result: T | None = None
    try:
        result = await _live(session, kind, run, emitted)
    except anyio.get_cancelled_exc_class():
        raise
    except Exception as exc:
        if record is None:
            raise
        error = exc
    if record is not None:
        await put_whole(
            state.journal.put_step,  # type: ignore[union-attr]
            live_record(
                result_type,
                session_id=session.session_id,
                index=index,
                kind=kind,
                name=name,
                fingerprint=record.fingerprint,
                request=record.stored,
                result=None if error else result,
                error=encode_error(error) if error else None,
                events=[e.model_dump(mode="json", exclude=_NOT_EVENT_FIELDS) for e in emitted],
            ),
        )
        record.commit()  # a base for the session's next model step only once it is in the journal
    if step_completed(kind, error):
        state.completed_steps += 1
    # a model call's envelope waits for its charge (`model_calls`): it never reports a budget one call stale
    if (kind != "model" or error is not None) and (
        record is not None or state.progress_interval_s is not None
    ):
        if (due := completed(session, index)) is not None:
            await emit(session, due)
    if error is not None:
        try:
            raise error
        finally:
            del error  # its traceback holds this frame: no cycle left through the local
    return StepResult(result, False)  # type: ignore[arg-type]


async def put_whole(put: Callable[[R], Awaitable[None]], record: R) -> None:
    """Write `record` with `put` (a store's `put_step` or `put_session`, or the root's session
    write under its lock) so that a cancelled caller still leaves it recorded whole: a
    cancellation that lands while the write is suspended writes the record again, shielded,
    then goes on. Every such write replaces what the record's key held (a resume re-records a
    step at its key; a session's record is replaced at each write), so the second write leaves
    exactly the record, whatever the interrupted one did. One path for every journal write: a
    write that never suspends (the memory store's; a SQLite child session's, left for the
    next commit) is never cancelled, and pays no cancel scope (an anyio scope is about 25k
    instructions entered and left)."""
    try:
        await put(record)
    except anyio.get_cancelled_exc_class():
        with anyio.CancelScope(shield=True):
            await put(record)
        raise


def unadopted(session: Session, index: int, step: str) -> ReplayDivergence:
    """The error for a step an adopted session asks for that its worker did not record."""
    return ReplayDivergence(
        f"Session {session.session_id!r} ran on another worker, whose record lacks step {index} ({step}): "
        f"the workers run different code or specs. Give every worker the same code, then resume the run.",
        session_id=session.session_id,
        step=index,
    )


async def _live(session: Session, kind: str, run: Callable[[], Awaitable[T]], emitted: list[Event]) -> T:
    """Run a step live under the session's budget (see `BudgetMeter.live`): a step the budget
    refuses or stops raises BudgetExceeded, which the run's first such step announces."""
    meter = session._meter
    if meter.unlimited:  # nothing can refuse or stop it: no budget scope to enter
        return await run()
    try:
        with meter.live(model_call=kind == "model"):
            return await run()
    except BudgetExceeded as exc:
        await _announce(session, exc, emitted)
        raise


async def _announce(session: Session, exc: BudgetExceeded, emitted: list[Event]) -> None:
    """Emit `budget.exceeded` once per budget (the run's, each slice's), from the first step
    it stopped."""
    meter = session._meter.owning(exc)
    if not meter.announced:
        meter.announced = True
        event = BudgetExceededEvent(
            session_id=session.session_id,
            limit=exc.limit,
            allowed=exc.allowed,
            spent=exc.spent,
            slice_id=exc.slice_id,
        )
        emitted.append(event)
        await emit(session, event)


# -- progress --------------------------------------------------------------------------
def completed(session: Session, index: int) -> Progress | None:
    """Keep where the run stands after a step completed live (the heartbeat records its
    progress envelope, `RunState.progress`, built when read); with `progress_s` set, the
    `progress` event to emit now, at most once per `progress_s` seconds (live only: a replay
    serves steps and reports no progress), else None. The caller has counted the step in
    `completed_steps`."""
    state = session._state
    state.reached = reached(session, index)
    if state.progress_interval_s is None:
        return None
    now = time.monotonic()
    if now - state.last_progress < state.progress_interval_s:
        return None
    state.last_progress = now
    return Progress(**state.progress)  # type: ignore[arg-type]


def report_plan(session: Session, total: int, completed: int, current: str | None = None) -> None:
    """Tell the run's progress envelopes where it is in the verified plan it executes:
    `total` steps, `completed` of them done, `current` (a plan step id) in flight."""
    session._state.plan_progress = (total, completed, current)


def progress(session: Session, index: int, gate: str | None) -> Progress:
    """The `progress` event after step `index` of `session` (`gate`: the gate it waits on)."""
    return Progress(**envelope(session, index, gate))


def envelope(session: Session, index: int, gate: str | None) -> dict[str, Any]:
    """The run's progress envelope after step `index` of `session` (`gate`: the gate it waits
    on), as JSON (`jeeves._run.state.envelope_of`)."""
    return envelope_of(reached(session, index), gate)


def reached(session: Session, index: int) -> Reached:
    """Where the run stands now, after step `index` of `session`: what its progress envelope
    reports (`Reached`), read at every journaled step, the envelope built only when read."""
    state = session._state
    meter = state.meter
    return (
        session.session_id,
        index,
        state.completed_steps,
        state.plan_progress,
        None if meter.unlimited else _left(meter),
    )


def _left(meter: BudgetMeter) -> tuple[Any, Any, Any, Any]:
    """What the run's budget has left: tokens, model calls, USD, seconds (None: no limit)."""
    b, spent = meter.budget, meter.spent
    return (
        None if b.max_tokens is None else max(0, b.max_tokens - spent.total_tokens),
        None if b.max_model_calls is None else max(0, b.max_model_calls - spent.model_calls),
        None if b.max_usd is None else max(0.0, b.max_usd - spent.cost_usd),
        None if b.deadline_s is None else max(0.0, b.deadline_s - meter.elapsed()),
    )
