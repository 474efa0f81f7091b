"""Entry points: `jeeves.run` returns a run's result; `jeeves.stream` hands out its events.

`stream` is an async context manager, not an async generator: it owns the run's task
group and the event channel, so leaving the `async with` block early cancels the whole
tree from the task that entered it, and the caller's next await is untouched (PEP 789).
Errors surface as themselves, never as an ExceptionGroup of one, tagged with the id of
the session that failed: after the last event when iterating, or from `result()`.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Literal

import anyio
from anyio.abc import TaskGroup
from pydantic import BaseModel, ConfigDict, Field

from jeeves._base.ids import new_root_id, validate_name, validate_root_id
from jeeves._base.validate import check_int, check_number, check_str, short_repr
from jeeves._run.channel import EventChannel
from jeeves._run.context import Architecture, Context, Output, RunState, execute
from jeeves._run.lifecycle import Outcome, prepare, set_root_status, supervise, unsupervised
from jeeves.approvals.policy import Approvals, Approver, Decision, PendingGate
from jeeves.budget import Budget, BudgetMeter
from jeeves.errors import BudgetExceeded, RunEnded, UserError, UserTypeError
from jeeves.events import Event
from jeeves.journal.records import Journal, JournalMode
from jeeves.messages import Usage
from jeeves.models.base import ModelClient, Route
from jeeves.models.router import Router
from jeeves.telemetry.tracer import Tracer, default_tracer

__all__ = ["RunResult", "RunStatus", "RunStream", "check_injection", "replay", "resume", "run", "stream"]

RunStatus = Literal["completed", "awaiting_approval", "failed", "expired", "rejected", "cancelled"]

if TYPE_CHECKING:
    from jeeves._run.replay import Attached

ModelLike = str | Route | ModelClient
JournalLike = Journal | str | os.PathLike[str]
ArchitectureRef = str | Mapping[str, Any]


class RunResult(BaseModel):
    """The outcome of a run."""

    model_config = ConfigDict(defer_build=True, arbitrary_types_allowed=True)

    session_id: str
    output: Any = None
    """The root's typed output (None when the budget ran out before any output)."""
    text: str = ""
    stop_reason: str = "completed"
    usage: Usage = Field(default_factory=Usage)
    """What this run spent (replayed steps excluded)."""
    usage_by_role: dict[str, Usage] = Field(default_factory=dict)
    """Live usage per role of the session that made the calls (actor, critic, a worker…)."""
    usage_by_path: dict[str, Usage] = Field(default_factory=dict)
    """Live usage per role path (`lead.writer.critic`, the keys routing matches): where
    `usage_by_role` adds every session named `critic` together, this keeps each apart."""
    usage_by_session: dict[str, Usage] = Field(default_factory=dict)
    """Live usage per session id."""
    detail: Output | None = None
    """The root architecture's own Output (ActorCritic rounds, Supervisor delegations…)."""
    status: RunStatus = "completed"
    """completed; awaiting_approval (suspended at gates: see `pending`); failed; expired (a gate
    or the session TTL ran out); rejected (a gate denied under `deny_ends_run`); cancelled."""
    pending: list[PendingGate] = Field(default_factory=list)
    """With status awaiting_approval: every gate waiting for a decision, in gate-id order."""

    @property
    def cost_usd(self) -> float | None:
        """The run's USD cost; None when any call in it has no known price (then the cost is
        unknown: `usage.cost_usd` holds the priced calls' part, `usage.unpriced_calls` the rest)."""
        return self.usage.cost


_EMPTY_ROUTER = Router()
"""The base of a run given no router (routers never change: one serves every run)."""


def build_router(
    router: Router | None, model: ModelLike | None, models: Mapping[str, ModelLike] | None
) -> Router:
    """The router a run uses: `router`, with `model=` as its default and `models=` overrides."""
    base = router if router is not None else _EMPTY_ROUTER
    if model is not None:
        base = base.override({"default": model})
    if models:
        base = base.override(models)
    return base


def _check_arguments(task: object, router: object, models: object, budget: object, mode: object) -> None:
    """Refuse arguments of `run`/`stream` that would fail later and far away (an event that
    cannot hold a None task, a dict where a Budget belongs)."""
    check_str(task, name="The task")
    if router is not None and not isinstance(router, Router):
        raise UserTypeError(
            f"router= must be a jeeves.Router, got {short_repr(router)}; or pass models={{...}}."
        )
    if models is not None and not isinstance(models, Mapping):
        raise UserTypeError(
            f"models= must map roles to models, got {short_repr(models)}; e.g. models={{'critic': 'openai/gpt-4o'}}."
        )
    if budget is not None and not isinstance(budget, Budget):
        raise UserTypeError(
            f"budget= must be a jeeves.Budget, got {short_repr(budget)}; e.g. Budget(max_usd=1)."
        )
    if mode not in ("record", "replay", "resume"):  # here too, so `stream` refuses it on entry
        raise UserError(
            f"mode={short_repr(mode)} is not a journal mode; use 'record' (resumes too) or 'replay'."
        )


def _check_approvals(
    approvals: object, approver: object, session_ttl_s: object
) -> tuple[Approvals | None, Approver | None]:
    if approvals is not None and not isinstance(approvals, Approvals):
        raise UserTypeError(
            f"approvals= must be a jeeves.approvals.Approvals, got {short_repr(approvals)}; "
            f"e.g. Approvals(auto=('read_only', 'local_write'))."
        )
    if approver is not None and not callable(approver):
        raise UserTypeError(
            f"approver= must be an async function taking a PendingGate and returning a Decision, "
            f"got {short_repr(approver)}."
        )
    if session_ttl_s is not None:
        check_number(session_ttl_s, name="session_ttl_s", minimum=0)
    return approvals, approver


def _root_context(state: RunState, arch: Architecture, session_id: str | None, role: str | None) -> Context:
    if not callable(getattr(arch, "run", None)):  # the one member the kernel calls
        raise UserError(
            f"{arch!r} is not an architecture; pass an Agent, ActorCritic, SelfRefine or Supervisor."
        )
    root_role = validate_name(role or getattr(arch, "role", None) or getattr(arch, "name", "run"))
    sid = validate_root_id(session_id) if session_id is not None else new_root_id()
    return Context(state, sid, role=root_role, role_path=(root_role,), parent_id=None)


def _state(
    *,
    router: Router | None,
    model: ModelLike | None,
    models: Mapping[str, ModelLike] | None,
    budget: Budget | None,
    mode: JournalMode,
    tracer: Tracer | None,
    channel: EventChannel,
    approvals: Approvals | None,
    approver: Approver | None,
    session_ttl_s: float | None,
    progress_s: float | None,
) -> RunState:
    """A run's state from `run`'s / `stream`'s arguments, each checked."""
    from jeeves._run.replay import offline_router  # imported at the first run, not by `import jeeves`

    state = RunState(
        router=offline_router() if mode == "replay" else build_router(router, model, models),
        channel=channel,
        meter=BudgetMeter(budget),
        tracer=tracer if tracer is not None else default_tracer(),
        mode=mode,
    )
    state.approvals, state.approver = _check_approvals(approvals, approver, session_ttl_s)
    if progress_s is not None:
        state.progress_interval_s = check_number(progress_s, name="progress_s", minimum=0)
    return state


def _result(state: RunState, root: Context, output: Output | None, stop_reason: str) -> RunResult:
    # every value is the run's own (typed) bookkeeping or an Output already validated
    return RunResult(
        session_id=root.session_id,
        output=output.value if output else None,
        text=output.text if output else "",
        stop_reason=stop_reason,
        usage=state.tree_usage(root.session_id, live=True),
        usage_by_role=state.usage_by_role(),
        usage_by_path=state.usage_by_role(whole_path=True),
        usage_by_session=state.usage_by_session(),
        detail=output,
    )


def _execute(
    state: RunState,
    root: Context,
    arch: Architecture,
    task: str,
    journal: JournalLike | None,
    architecture_ref: ArchitectureRef | None,
    session_ttl_s: float | None = None,
) -> Coroutine[Any, Any, RunResult]:
    """The run, as one coroutine: with no journal to open, the run's body itself (attaching
    nothing would only keep a generator and its context manager alive for the whole run)."""
    if journal is None and state.mode != "replay":
        from jeeves._run.source import source_of

        state.source = source_of(architecture_ref)  # checked now, as `attach` checks it
        return _body(state, root, arch, task, None, session_ttl_s)
    return _attached(state, root, arch, task, journal, architecture_ref, session_ttl_s)


async def _attached(
    state: RunState,
    root: Context,
    arch: Architecture,
    task: str,
    journal: JournalLike | None,
    architecture_ref: ArchitectureRef | None,
    session_ttl_s: float | None,
) -> RunResult:
    from jeeves._run.replay import attach

    async with attach(
        journal, mode=state.mode, root_id=root.session_id, architecture_ref=architecture_ref
    ) as attached:
        state.journal, state.source = attached.journal, attached.source
        return await _body(state, root, arch, task, attached, session_ttl_s)


async def _body(
    state: RunState,
    root: Context,
    arch: Architecture,
    task: str,
    attached: Attached | None,
    session_ttl_s: float | None,
) -> RunResult:
    recorded = attached is not None and attached.served is None and attached.journal is not None
    existing = attached.root if recorded and attached is not None else None
    if not await prepare(state, root.session_id, session_ttl_s, read=not recorded, existing=existing):
        return _ended(state, root, "expired", "session_ttl")
    try:
        if unsupervised(state):  # nothing to supervise: the root runs alone, awaited here
            outcome = Outcome(output=await execute(root, arch, task))
        else:
            outcome = await supervise(state, root, arch, task)
    except BudgetExceeded:
        if attached is not None:
            await attached.verify(root.session_id, None)
        return _result(state, root, None, "budget")
    except RunEnded as exc:
        return _ended(state, root, exc.status, str(exc))  # type: ignore[arg-type]
    except anyio.get_cancelled_exc_class():
        await set_root_status(state, root.session_id, "cancelled", stop_reason="cancelled")
        raise
    if outcome.suspended:
        result = _ended(state, root, "awaiting_approval", "awaiting_approval")
        result.pending = state.suspension.gates()
        return result
    output = outcome.output
    assert output is not None
    if attached is not None:
        await attached.verify(root.session_id, output.text)
    return _result(state, root, output, output.stop_reason)


def _ended(state: RunState, root: Context, status: RunStatus, reason: str) -> RunResult:
    """The result of a run that stopped without an output: suspended, expired, rejected."""
    result = _result(state, root, None, status if status != "awaiting_approval" else status)
    result.status = status
    result.text = "" if status == "awaiting_approval" else reason
    return result


async def run(
    arch: Architecture,
    task: str,
    *,
    router: Router | None = None,
    model: ModelLike | None = None,
    models: Mapping[str, ModelLike] | None = None,
    session_id: str | None = None,
    role: str | None = None,
    budget: Budget | None = None,
    journal: JournalLike | None = None,
    mode: JournalMode = "record",
    architecture_ref: ArchitectureRef | None = None,
    tracer: Tracer | None = None,
    approvals: Approvals | None = None,
    approver: Approver | None = None,
    session_ttl_s: float | None = None,
    progress_s: float | None = None,
) -> RunResult:
    """Run `arch` on `task` and return its result.

    Args:
        router: Routes roles to models. `model=` sets its default route and `models=`
            overrides routes for this run (`models={"critic": "openai/gpt-4o"}`).
        session_id: The root session id; child ids derive from it. Generated when omitted.
        role: The root's role name (defaults to the architecture's `role` or name).
        budget: Limits shared by the whole tree.
        journal: Records every step; a session id the journal already holds resumes. A
            journal object, or a path: `.jsonl` for a JSONL file, anything else SQLite.
        mode: "record" (default; resumes too) or "replay" (strict: nothing runs live, no
            model route is used, and the replay must use every recorded step).
        architecture_ref: How to rebuild `arch` for `jeeves replay`: an import path
            "module:attr" (an Architecture, or a zero-argument factory in that module), or
            a source mapping a registered loader understands. Stored in the root session
            record; a resumed run given none keeps the recorded one.
        tracer: Span hooks; defaults to the one `jeeves.telemetry.configure` installed.
        approvals: The approval policy (`jeeves.approvals.Approvals`); None gates nothing
            (a resumed run given none keeps the recorded one). See docs/approvals.md.
        approver: A live approver, `async (PendingGate) -> Decision`; None: the run
            suspends at an undecided gate (`RunResult.status == "awaiting_approval"`).
        session_ttl_s: A hard limit on the run's life from its first start, across resumes.
        progress_s: Emit `progress` events at most every `progress_s` seconds (and when a
            gate starts waiting); None (default): none are emitted, and the latest envelope
            is only kept in the journal for `jeeves runs --watch`.
    """
    _check_arguments(task, router, models, budget, mode)
    channel = EventChannel()
    channel.consume = False
    state = _state(
        router=router,
        model=model,
        models=models,
        budget=budget,
        mode=mode,
        tracer=tracer,
        channel=channel,
        approvals=approvals,
        approver=approver,
        session_ttl_s=session_ttl_s,
        progress_s=progress_s,
    )
    root = _root_context(state, arch, session_id, role)
    return await _execute(state, root, arch, task, journal, architecture_ref, session_ttl_s)


def check_injection(root: str, text: object, session_id: object) -> None:
    """Refuse a human's message that no agent of run `root` could take (`RunStream.inject`)."""
    check_str(text, name="The injected message")
    assert isinstance(text, str)
    if not text.strip():
        raise UserError("The injected message is empty; send the text the agent should read.")
    if session_id is not None and (
        not isinstance(session_id, str) or (session_id != root and not session_id.startswith(root + "__"))
    ):
        raise UserError(
            f"Session {session_id!r} is not part of run {root!r}; give one of its sessions "
            f"(such as {root + '__agent_0'!r}) or None for the first agent that takes a turn."
        )


class RunStream:
    """The events of a running run; iterate with `async for`, then `await result()`.

    `inject(text)` sends a human's message into the running agents (see `inject`).
    """

    def __init__(self, channel: EventChannel, session_id: str, state: RunState | None = None) -> None:
        self._channel = channel
        self._state = state
        self.session_id = session_id
        """The root session id."""
        self._result: RunResult | None = None
        self._error: BaseException | None = None
        self._finished = False
        self._finish_waiter: anyio.Event | None = None
        """Built only if `result()` must wait."""

    def __aiter__(self) -> RunStream:
        return self

    async def __anext__(self) -> Event:
        # Buffered events are taken without a wait; otherwise wait for the channel's wake-up.
        channel = self._channel
        while True:
            event = channel.take()
            if event is not None:
                return event
            if channel.closed:
                if self._error is not None:
                    # Keep the error's own cause (a CriticError's critic failure).
                    raise self._error from self._error.__cause__
                raise StopAsyncIteration
            await channel.readable().wait()

    def inject(self, text: str, session_id: str | None = None) -> None:
        """Queue a human's message for an agent of this run; it is applied at that agent's
        next turn boundary (after its current model call and tools), as a user message.

        The step that applies it is journaled (`inject`), so a replay adds the same message
        at the same turn without asking anyone; `steering.injected` (source `human`) is
        emitted when it is applied. A message reaches only an `Agent` (a Goal's agent, an
        ActorCritic's actor, a worker): one no agent takes before the run ends is dropped.

        Args:
            text: The message, as the agent will read it.
            session_id: The agent session it is for (e.g. `"{root}__agent_0"`); None: the
                first agent of the run that reaches a turn boundary.

        Raises:
            UserError: empty text, a session id outside this run, a strict replay (it asks
                no one), or a run that has ended.
        """
        check_injection(self.session_id, text, session_id)
        root = self.session_id
        state = self._state
        if state is None or state.mode == "replay":
            raise UserError(
                f"Run {root!r} is a strict replay, which asks no one: its injected messages come from "
                f"the journal. Resume it (mode='record') to send new ones."
            )
        if self._finished:
            raise UserError(f"Run {root!r} has ended; a message can only reach a running agent.")
        state.inbox.put(text, session_id)

    def _finish(self) -> None:
        """The run has ended (its result or error is set)."""
        self._finished = True
        if self._finish_waiter is not None:
            self._finish_waiter.set()

    async def result(self) -> RunResult:
        """Wait for the run to finish (reading and dropping unread events) and return its result."""
        async for _ in self:
            pass
        if not self._finished:
            self._finish_waiter = anyio.Event()
            await self._finish_waiter.wait()
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result


def _lone(error: BaseException) -> BaseException:
    """A lone exception out of its group (groups of one, nested): callers see the error itself."""
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error


class _Streamed:
    """The run beside its reader: `execute` runs in a task of an anyio task group, its
    result (or error) lands on the handle, the channel closes when it ends, and leaving the
    block early cancels it (`scope`); leaving waits for the task to end."""

    __slots__ = ("_execute", "_group", "_handle", "_prepare", "scope")

    def __init__(
        self,
        handle: RunStream | None,
        execute: Callable[[], Awaitable[RunResult]] | None,
        prepare: Callable[[], tuple[RunStream, Callable[[], Awaitable[RunResult]]]] | None = None,
    ) -> None:
        self.scope = anyio.CancelScope()
        self._group: TaskGroup | None = None
        self._handle = handle
        self._execute = execute
        self._prepare = prepare
        """`stream` prepares its run on entering the block (its state, ids, budget clock)."""

    async def _body(self) -> None:
        handle = self._handle
        assert handle is not None
        with self.scope:
            try:
                execute, self._execute = self._execute, None  # the run's closure, dropped once it runs
                assert execute is not None
                run = execute()
                del execute
                handle._result = await run
            except anyio.get_cancelled_exc_class():
                raise
            except BaseException as exc:  # for the reader (raised on leaving when not an Exception)
                handle._error = exc
            finally:
                handle._channel.close()
                handle._finish()

    async def __aenter__(self) -> RunStream:
        if self._prepare is not None:
            self._handle, self._execute = self._prepare()
            self._prepare = None
        elif self._execute is None:
            raise UserError(
                "this stream was already entered: each `async with jeeves.stream(...)` runs once; "
                "call jeeves.stream(...) again for another run (or jeeves.resume(...) to continue this one)."
            )
        assert self._handle is not None
        self._group = anyio.create_task_group()
        await self._group.__aenter__()
        self._group.start_soon(self._body)
        return self._handle

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        handle = self._handle
        assert handle is not None
        handle._channel.close()
        if not handle._finished:  # left early: cancel the whole tree
            self.scope.cancel()
        assert self._group is not None
        try:
            suppressed = await self._group.__aexit__(*exc_info)
        except BaseExceptionGroup as group:
            error = _lone(group)
            raise error from error.__cause__  # its own cause survives; the group context is dropped
        body_error = exc_info[1]
        if not suppressed and isinstance(body_error, BaseExceptionGroup):
            error = _lone(body_error)
            if error is not body_error:
                raise error from error.__cause__
        if body_error is None and handle._error is not None and not isinstance(handle._error, Exception):
            raise handle._error  # KeyboardInterrupt, SystemExit: not the reader's to swallow
        return suppressed


def stream(
    arch: Architecture,
    task: str,
    *,
    router: Router | None = None,
    model: ModelLike | None = None,
    models: Mapping[str, ModelLike] | None = None,
    session_id: str | None = None,
    role: str | None = None,
    budget: Budget | None = None,
    journal: JournalLike | None = None,
    mode: JournalMode = "record",
    architecture_ref: ArchitectureRef | None = None,
    tracer: Tracer | None = None,
    max_buffer: int = 256,
    approvals: Approvals | None = None,
    approver: Approver | None = None,
    session_ttl_s: float | None = None,
    progress_s: float | None = None,
) -> AbstractAsyncContextManager[RunStream]:
    """Start `arch` on `task` and stream its events.

    ```python
    async with jeeves.stream(agent, "task", router=router) as events:
        async for event in events:
            print(event.type, event.session_id, event.seq)
        result = await events.result()
    ```

    Takes the same arguments as `jeeves.run`, plus `max_buffer`: how many unread events
    the run may get ahead of the reader before it waits (backpressure).
    """

    def prepare() -> tuple[RunStream, Callable[[], Awaitable[RunResult]]]:
        _check_arguments(task, router, models, budget, mode)
        check_int(max_buffer, name="max_buffer", minimum=0)
        channel = EventChannel(max_buffer)
        state = _state(
            router=router,
            model=model,
            models=models,
            budget=budget,
            mode=mode,
            tracer=tracer,
            channel=channel,
            approvals=approvals,
            approver=approver,
            session_ttl_s=session_ttl_s,
            progress_s=progress_s,
        )
        root = _root_context(state, arch, session_id, role)
        handle = RunStream(channel, root.session_id, state)
        return handle, lambda: _execute(state, root, arch, task, journal, architecture_ref, session_ttl_s)

    return _Streamed(None, None, prepare)


def streamed(
    handle: RunStream, execute: Callable[[], Awaitable[RunResult]]
) -> AbstractAsyncContextManager[RunStream]:
    """Run `execute` beside the reader of `handle`: its result (or error) lands on the handle,
    the channel closes when it ends, and leaving early cancels it (`stream`, `jeeves._run.branch`)."""
    return _Streamed(handle, execute)


async def replay(
    arch: Architecture | None,
    journal: JournalLike,
    session_id: str,
    *,
    tracer: Tracer | None = None,
) -> RunResult:
    """Replay recorded run `session_id` from `journal`, offline, and return its result.

    Nothing runs live: every model call and tool call is served from the journal, and no
    model route exists to reach. The events are those of the recording (marked
    `replayed`); the result's usage is zero, since nothing was spent. A step the journal
    lacks, a request that changed, a recorded step left unused, or a session that ends
    otherwise than recorded (status, stop reason, output, rounds) raises `ReplayDivergence`
    naming the session and step; a damaged journal raises `JournalError`.

    Args:
        arch: The architecture that recorded the run, or None to rebuild it from the
            source stored with the run (`architecture_ref=` when it was recorded).
        journal: The journal object, or its path (`.jsonl`, or a SQLite file).
        session_id: The run's root session id (`jeeves runs JOURNAL` lists them).
        tracer: Span hooks, as for `jeeves.run`.
    """
    from jeeves._run.replay import plan_replay
    from jeeves.journal.open import close_journal, open_journal

    store = open_journal(journal, create=False)
    try:
        plan = await plan_replay(store, session_id, arch, strict=True)  # reads the whole run, once
        return await run(
            plan.arch,
            plan.task,
            session_id=session_id,
            role=plan.role,
            journal=plan.journal,
            mode="replay",
            tracer=tracer,
        )
    finally:
        if store is not journal:
            await close_journal(store)


async def resume(
    arch: Architecture | None,
    session_id: str,
    *,
    journal: JournalLike,
    decisions: Mapping[str, Decision] | None = None,
    approvals: Approvals | None = None,
    approver: Approver | None = None,
    router: Router | None = None,
    model: ModelLike | None = None,
    models: Mapping[str, ModelLike] | None = None,
    budget: Budget | None = None,
    tracer: Tracer | None = None,
    session_ttl_s: float | None = None,
    progress_s: float | None = None,
) -> RunResult:
    """Go on with recorded run `session_id`: after it suspended at gates, crashed, or was killed.

    Every recorded step is served (no completed model or tool call runs again); decided
    gates are served their decisions; the rest runs live. Works from any process that can
    open the journal, once the run's own process is gone.

    Args:
        arch: The architecture that recorded the run, or None to rebuild it from the source
            stored with the run (`architecture_ref=`, or the spec a spec run recorded).
        journal: The journal object, or its path.
        decisions: Decisions to record first, by gate id (`SESSION#STEP`) or by run id when
            the run has one pending gate (see `jeeves.approvals.record_decision`).
        approvals: The policy; default: the one recorded with the run.
        approver: A live approver for gates still undecided; without one the run suspends again.
        session_ttl_s: A TTL for a run recorded without one (a recorded TTL is kept).

    The other arguments are those of `jeeves.run`.
    """
    from jeeves._run.replay import plan_replay
    from jeeves.approvals.decide import record_decision
    from jeeves.journal.open import close_journal, open_journal
    from jeeves.journal.unchanged import restored_if_nothing_ran

    store = open_journal(journal, create=False)
    try:
        plan = await plan_replay(store, session_id, arch)
        for target, decision in (decisions or {}).items():
            await record_decision(store, target, decision)
        async with restored_if_nothing_ran(store, session_id):  # a failure before any step: as it was
            return await run(
                plan.arch,
                plan.task,
                session_id=session_id,
                role=plan.role,
                journal=store,
                approvals=approvals,
                approver=approver,
                router=router,
                model=model,
                models=models,
                budget=budget,
                tracer=tracer,
                session_ttl_s=session_ttl_s,
                progress_s=progress_s,
            )
    finally:
        if store is not journal:
            await close_journal(store)
