"""Entry points: `jeeves.run` returns a run's result; `jeeves.stream` hands out its events.

`stream` is an async context manager, not an async generator: it owns the run's task
group and the event channel, so leaving the `async with` block early cancels the whole
tree from the task that entered it, and the caller's next await is untouched (PEP 789).
Errors surface as themselves, never as an ExceptionGroup of one, tagged with the id of
the session that failed: after the last event when iterating, or from `result()`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Mapping
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Literal, Unpack

import anyio
from anyio.abc import TaskGroup
from pydantic import BaseModel, ConfigDict, Field, FieldSerializationInfo, field_serializer

from jeeves._base.ids import new_root_id, validate_name, validate_root_id
from jeeves._base.validate import check_str
from jeeves._run.channel import EventChannel
from jeeves._run.context import Architecture, Context, Output, RunState, execute
from jeeves._run.lifecycle import Outcome, prepare, set_root_status, supervise, unsupervised
from jeeves._run.options import JournalLike, ModelLike, RunKeywords, RunOptions, options_of
from jeeves._run.routes import check_route_keys
from jeeves.approvals.policy import Decision, PendingGate
from jeeves.budget import BudgetMeter
from jeeves.errors import BudgetExceeded, ReplayDivergence, RunEnded, UserError
from jeeves.events import Event
from jeeves.journal.records import TERMINAL
from jeeves.messages import Usage
from jeeves.models.router import Router
from jeeves.telemetry.tracer import Tracer, default_tracer

__all__ = ["RunResult", "RunStatus", "RunStream", "check_injection", "replay", "resume", "run", "stream"]

RunStatus = Literal["completed", "awaiting_approval", "failed", "expired", "rejected", "cancelled"]

if TYPE_CHECKING:
    from jeeves._run.replay import Attached


class RunResult(BaseModel):
    """The outcome of a run.

    The answer is in one place: `output` (typed) and its text `text`. `detail` is how the root
    reached it: the root's own Output (rounds, delegations, candidates) with its answer moved
    here, so `detail.value` is None and `detail.text` empty, and its JSON has neither.
    """

    model_config = ConfigDict(defer_build=True, arbitrary_types_allowed=True)

    session_id: str
    output: Any = None
    """The answer: the root's typed output (None when the budget ran out before any output)."""
    text: str = ""
    """The answer's text (for a run that ended without one, why it ended)."""
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
    """How the answer was reached: the root architecture's own Output, of its own class
    (`ActorCriticOutput` rounds, `SupervisorOutput` delegations…), without the answer:
    `output` and `text` above hold it, and its `value`/`text` are left empty."""
    status: RunStatus = "completed"
    """completed; awaiting_approval (suspended at gates: see `pending`); failed; expired (a gate
    or the session TTL ran out); rejected (a gate denied under `deny_ends_run`); cancelled."""
    pending: list[PendingGate] = Field(default_factory=list)
    """With status awaiting_approval: every gate waiting for a decision, in gate-id order."""

    @field_serializer("detail")
    def _detail_fields(self, detail: Output | None, info: FieldSerializationInfo) -> dict[str, Any] | None:
        """`detail` as its own class's fields (rounds, delegations...), never the answer again."""
        if detail is None:
            return None
        return detail.model_dump(
            mode=info.mode,
            exclude={"value", "text"},
            by_alias=info.by_alias,
            exclude_unset=info.exclude_unset,
            exclude_defaults=info.exclude_defaults,
            exclude_none=info.exclude_none,
        )

    @property
    def cost_usd(self) -> float | None:
        """The run's USD cost; None when any call in it has no known price (then the cost is
        unknown: `usage.cost_usd` holds the priced calls' part, `usage.unpriced_calls` the rest)."""
        return self.usage.cost


def _without_answer(output: Output) -> Output:
    """The root's Output as `RunResult.detail`: every field of its class but the answer (`value`,
    `text`), which the result holds once, as `output` and `text`."""
    return output.model_copy(update={"value": None, "text": ""})


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


def _root_context(state: RunState, arch: Architecture, session_id: str | None, role: str | None) -> Context:
    if not callable(getattr(arch, "run", None)):  # the one member the kernel calls
        raise UserError(
            f"{arch!r} is not an architecture; pass an Agent, ActorCritic, SelfRefine or Supervisor."
        )
    root_role = validate_name(role or getattr(arch, "role", None) or getattr(arch, "name", "run"))
    sid = validate_root_id(session_id) if session_id is not None else new_root_id()
    return Context(state, sid, role=root_role, role_path=(root_role,), parent_id=None)


def _state(arch: Architecture, options: RunOptions, channel: EventChannel) -> RunState:
    """A run's state from its (already checked) options; `models=` keys checked against `arch`."""
    from jeeves._run.replay import offline_router  # imported at the first run, not by `import jeeves`

    if options.models and options.mode != "replay":
        check_route_keys(arch, options.models, options.role)
    state = RunState(
        router=offline_router()
        if options.mode == "replay"
        else build_router(options.router, options.model, options.models),
        channel=channel,
        meter=BudgetMeter(options.budget),
        tracer=options.tracer if options.tracer is not None else default_tracer(),
        mode=options.mode,
    )
    state.approvals, state.approver = options.approvals, options.approver
    if options.progress_s is not None:
        state.progress_interval_s = options.progress_s
    return state


def result_of(state: RunState, root: Context, output: Output | None, stop_reason: str) -> RunResult:
    """The run's result from its root's output (None: it ended without one) and the run's books."""
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
        detail=_without_answer(output) if output is not None else None,
    )


def _execute(
    state: RunState, root: Context, arch: Architecture, task: str, options: RunOptions
) -> Coroutine[Any, Any, RunResult]:
    """The run, as one coroutine: with no journal to open, the run's body itself (attaching
    nothing would only keep a generator and its context manager alive for the whole run)."""
    if options.journal is None and state.mode != "replay":
        from jeeves._run.source import source_of

        state.source = source_of(options.architecture_ref)  # checked now, as `attach` checks it
        return _body(state, root, arch, task, None, options.session_ttl_s)
    return _attached(state, root, arch, task, options)


async def _attached(
    state: RunState, root: Context, arch: Architecture, task: str, options: RunOptions
) -> RunResult:
    from jeeves._run.replay import attach

    async with attach(
        options.journal, mode=state.mode, root_id=root.session_id, architecture_ref=options.architecture_ref
    ) as attached:
        state.journal, state.source = attached.journal, attached.source
        return await _body(state, root, arch, task, attached, options.session_ttl_s)


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
        return ended(state, root, "expired", "session_ttl")
    try:
        if unsupervised(state):  # nothing to supervise: the root runs alone, awaited here
            outcome = Outcome(output=await execute(root, arch, task))
        else:
            outcome = await supervise(state, root, arch, task)
    except BudgetExceeded:
        if attached is not None:
            await attached.verify(root.session_id, None)
        return result_of(state, root, None, "budget")
    except RunEnded as exc:
        return ended(state, root, exc.status, str(exc))  # type: ignore[arg-type]
    except anyio.get_cancelled_exc_class():
        await set_root_status(state, root.session_id, "cancelled", stop_reason="cancelled")
        raise
    if outcome.suspended:
        result = ended(state, root, "awaiting_approval", "awaiting_approval")
        result.pending = state.suspension.gates()
        return result
    output = outcome.output
    assert output is not None
    if attached is not None:
        await attached.verify(root.session_id, output.text)
    return result_of(state, root, output, output.stop_reason)


def ended(state: RunState, root: Context, status: RunStatus, reason: str) -> RunResult:
    """The result of a run that stopped without an output: suspended, expired, rejected."""
    result = result_of(state, root, None, status if status != "awaiting_approval" else status)
    result.status = status
    result.text = "" if status == "awaiting_approval" else reason
    return result


async def run(
    arch: Architecture, task: str, *, options: RunOptions | None = None, **keywords: Unpack[RunKeywords]
) -> RunResult:
    """Run `arch` on `task` and return its result.

    ```python
    result = await jeeves.run(arch, "task", model="openai/gpt-4o-mini", journal="runs.db")
    result = await jeeves.run(arch, "task", options=RunOptions(model="openai/gpt-4o-mini"))
    ```

    Args:
        options: How to run it (`jeeves.RunOptions`: models, budget, journal, approvals,
            tracer...); keywords given beside it replace its fields.
        **keywords: The fields of `RunOptions`, given one by one.

    Raises:
        UserError: a bad option (named with its value), a `models=` key that no session of
            `arch` looks up (with the keys that would), a task that is not a str.
    """
    check_str(task, name="The task")
    opts = options_of(options, keywords)
    channel = EventChannel()
    channel.consume = False
    state = _state(arch, opts, channel)
    root = _root_context(state, arch, opts.session_id, opts.role)
    return await _execute(state, root, arch, task, opts)


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
    arch: Architecture, task: str, *, options: RunOptions | None = None, **keywords: Unpack[RunKeywords]
) -> AbstractAsyncContextManager[RunStream]:
    """Start `arch` on `task` and stream its events.

    ```python
    async with jeeves.stream(agent, "task", router=router) as events:
        async for event in events:
            print(event.type, event.session_id, event.seq)
        result = await events.result()
    ```

    Takes the same options as `jeeves.run`; `max_buffer` is how many unread events the
    run may get ahead of the reader before it waits (backpressure).
    """
    check_str(task, name="The task")
    opts = options_of(options, keywords)

    def prepare() -> tuple[RunStream, Callable[[], Awaitable[RunResult]]]:
        channel = EventChannel(opts.max_buffer)
        state = _state(arch, opts, channel)
        root = _root_context(state, arch, opts.session_id, opts.role)
        handle = RunStream(channel, root.session_id, state)
        return handle, lambda: _execute(state, root, arch, task, opts)

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
        options = RunOptions(
            session_id=session_id, role=plan.role, journal=plan.journal, mode="replay", tracer=tracer
        )
        try:
            return await run(plan.arch, plan.task, options=options)
        except ReplayDivergence as exc:
            if plan.record.status in TERMINAL:
                raise
            raise ReplayDivergence(  # the record ends where the run stopped: that is why
                f"{str(exc).rstrip('.')}. Run {session_id!r} has not finished (it is {plan.record.status}), so "
                f"its record ends where it stopped: resume it (jeeves resume JOURNAL {session_id}), then replay it.",
                session_id=exc.session_id or session_id,
                step=exc.step,
            ) from None
    finally:
        if store is not journal:
            await close_journal(store)


async def resume(
    arch: Architecture | None,
    session_id: str,
    /,
    *,
    decisions: Mapping[str, Decision] | None = None,
    options: RunOptions | None = None,
    **keywords: Unpack[RunKeywords],
) -> RunResult:
    """Go on with recorded run `session_id`: after it suspended at gates, crashed, or was killed.

    Every recorded step is served (no completed model or tool call runs again); decided
    gates are served their decisions; the rest runs live. Works from any process that can
    open the journal, once the run's own process is gone.

    Args:
        arch: The architecture that recorded the run, or None to rebuild it from the source
            stored with the run (`architecture_ref=`, or the spec a spec run recorded).
        decisions: Decisions to record first, by gate id (`SESSION#STEP`) or by run id when
            the run has one pending gate (see `jeeves.approvals.record_decision`).
        options, **keywords: As for `jeeves.run`; `journal=` is required. `approvals=`
            defaults to the policy recorded with the run; `approver=` decides gates still
            undecided (without one the run suspends again); `session_ttl_s=` sets a TTL for a
            run recorded without one (a recorded TTL is kept).
    """
    from jeeves._run.replay import plan_replay
    from jeeves.approvals.decide import record_decision
    from jeeves.journal.open import close_journal, open_journal
    from jeeves.journal.unchanged import restored_if_nothing_ran

    opts = options_of(options, keywords)
    journal = opts.journal
    if journal is None:
        raise UserError(f"resume({session_id!r}) needs journal=: the journal the run was recorded in.")
    store = open_journal(journal, create=False)
    try:
        plan = await plan_replay(store, session_id, arch)
        for target, decision in (decisions or {}).items():
            await record_decision(store, target, decision)
        async with restored_if_nothing_ran(store, session_id):  # a failure before any step: as it was
            resumed = opts.replace(session_id=session_id, role=plan.role, journal=store, mode="record")
            return await run(plan.arch, plan.task, options=resumed)
    finally:
        if store is not journal:
            await close_journal(store)
