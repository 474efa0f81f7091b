"""The Context an architecture runs in: emit events, run children, call models, run steps.

One `RunState` is shared by every session of a run (the event channel, the router, the
budget meter, the journal, the tracer, the usage ledger); each session gets its own
`Context` with its id, its role path and its own step counter.

Invariants:
- ids come only from `child_id(parent, role, index)`; nothing here reads a clock or a
  random source to name anything;
- step indices are allocated in program order within a session (`next_step_index`), so
  callers that start steps concurrently allocate the indices first, in a fixed order;
- a journaled step that ran live is recorded with the events it emitted; replayed, it
  re-emits those events marked `replayed=True` and charges no usage or budget.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, NamedTuple, TypeVar

import anyio
from pydantic import BaseModel, ConfigDict, TypeAdapter

from jeeves.architecture import Architecture, Output, describe_model
from jeeves.budget import BudgetMeter
from jeeves.channel import EventChannel
from jeeves.errors import (
    PROGRAM_ERRORS,
    BudgetExceeded,
    MissingCredentials,
    ModelError,
    ReplayDivergence,
    UserError,
    tag_session,
)
from jeeves.events import (
    BudgetExceededEvent,
    Event,
    ModelCompleted,
    ModelDelta,
    ModelRetrying,
    SessionCompleted,
    SessionFailed,
    SessionStarted,
)
from jeeves.hooks import NullTracer, Tracer
from jeeves.ids import child_id, validate_name
from jeeves.journal import (
    Journal,
    JournalMode,
    SessionRecord,
    StepRecord,
    decode_error,
    encode_error,
    error_type_name,
    fingerprint,
    request_diff,
    served_events,
    served_result,
    step_origin,
)
from jeeves.messages import ModelRequest, ModelResponse, Usage, UsageTally
from jeeves.models.base import Route
from jeeves.models.fallback import complete_with_fallbacks
from jeeves.models.router import Router
from jeeves.redact import scrub, scrub_error
from jeeves.steering import Intervener, Intervention, Turn
from jeeves.usage_tree import book

__all__ = ["Context", "RunState", "StepResult"]

T = TypeVar("T")


class StepResult(NamedTuple, Generic[T]):
    value: T
    replayed: bool


class _ModelStep(BaseModel):
    model_config = ConfigDict(defer_build=True)
    response: ModelResponse
    fallback: bool = False


@dataclass
class RunState:
    """What every session of one run shares."""

    router: Router
    channel: EventChannel = field(default_factory=EventChannel)
    meter: BudgetMeter = field(default_factory=BudgetMeter)
    tracer: Tracer = field(default_factory=NullTracer)
    journal: Journal | None = None
    mode: JournalMode = "record"
    usage: dict[str, UsageTally] = field(default_factory=dict)
    """Per session: every model call's usage, replayed ones included (what events report)."""
    live_usage: dict[str, UsageTally] = field(default_factory=dict)
    """Per session: live calls only (what this run spent)."""
    role_paths: dict[str, tuple[str, ...]] = field(default_factory=dict)
    tool_calls: dict[str, list[str]] = field(default_factory=dict)
    """Per session: the names of the tools it called, in order (replayed calls included)."""
    budget_announced: bool = False
    source: dict[str, Any] | None = None
    """How to rebuild the root architecture; stored in the root's session record."""
    _adapters: dict[Any, TypeAdapter[Any]] = field(default_factory=dict)
    _tree: dict[str, UsageTally] = field(default_factory=dict)
    _live_tree: dict[str, UsageTally] = field(default_factory=dict)
    """Per session: its usage plus everything below it, kept as calls are booked (see usage_tree)."""

    def adapter(self, tp: Any) -> TypeAdapter[Any]:
        adapter = self._adapters.get(tp)
        if adapter is None:
            adapter = self._adapters[tp] = TypeAdapter(tp)
        return adapter

    def add_usage(self, session_id: str, usage: Usage, *, live: bool) -> None:
        """Book one model call's usage; live calls also count against the budget."""
        book(self.usage, self._tree, session_id, usage)
        if live:
            book(self.live_usage, self._live_tree, session_id, usage)
            self.meter.charge(usage)

    def tree_usage(self, session_id: str, *, live: bool = False) -> Usage:
        """Usage of a session and everything below it (kept as calls are booked: O(1))."""
        tally = (self._live_tree if live else self._tree).get(session_id)
        return tally.snapshot() if tally is not None else Usage()

    def tree_tool_calls(self, session_id: str) -> list[str]:
        """The tools called by a session and everything below it (each session's in order)."""
        prefix = session_id + "__"
        return [
            name
            for sid, names in self.tool_calls.items()
            if sid == session_id or sid.startswith(prefix)
            for name in names
        ]

    def usage_by_role(self, *, whole_path: bool = False) -> dict[str, Usage]:
        """Live usage summed per role (the role of the session that made the calls), or,
        with `whole_path`, per role path (`lead.writer.critic`)."""
        out: dict[str, UsageTally] = {}
        for sid, tally in self.live_usage.items():
            path = self.role_paths.get(sid, ("?",))
            out.setdefault(".".join(path) if whole_path else path[-1], UsageTally()).add(tally)
        return {role: tally.snapshot() for role, tally in out.items()}

    def usage_by_session(self) -> dict[str, Usage]:
        """Live usage per session id."""
        return {sid: tally.snapshot() for sid, tally in self.live_usage.items()}


def _tried_again_on_resume(record: StepRecord) -> bool:
    """A model call that failed at the provider (an outage, a rate limit, a bad or missing
    key, after every retry and fallback) is not a completed step, nor is any step the budget
    stopped (refused before it started, or cancelled in flight at a breach or the deadline):
    resuming the run makes it again, so a run stopped by such a failure goes on from there
    once it is fixed (or with a fresh budget). Every other recorded failure (a tool's or a
    function critic's exception) is an outcome the architecture acted on, and is served
    like a result. A strict replay serves every failure as recorded."""
    if record.error is None:
        return False
    error = decode_error(record.error, f"session {record.session_id!r} step {record.index}")
    if isinstance(error, BudgetExceeded):
        return True
    return record.kind == "model" and isinstance(error, ModelError | MissingCredentials)


def _step_name(kind: str, name: str) -> str:
    return f"{kind} {name!r}" if name else f"{kind} call"


def _rounds(output: Output | None) -> int | None:
    """The rounds an Output reports (an int, or a sequence of rounds), if it has a `rounds` field."""
    rounds = getattr(output, "rounds", None)
    if isinstance(rounds, int) and not isinstance(rounds, bool):
        return rounds
    return len(rounds) if isinstance(rounds, list | tuple) else None


class Context:
    """One session's handle on the run. Architectures get one in `run(ctx, task)`."""

    __slots__ = (
        "_replayed",
        "_intervene",
        "_route",
        "_route_as",
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
    ) -> None:
        self._state = state
        self._intervene = intervene
        self.session_id = session_id
        self.role = role
        self.role_path = role_path
        self.parent_id = parent_id
        self._steps = 0
        self._replayed = 0
        self._route: Route | None = None
        self._route_as = route_as
        self._started: SessionStarted | None = None

    # -- events ------------------------------------------------------------------------
    async def emit(self, event: Event) -> None:
        """Send an event into the run's stream; `seq` and `ts` are stamped here.

        In a strict replay every event is marked `replayed`: nothing in it ran live.
        """
        if self._state.mode == "replay":
            event.replayed = True
        await self._state.channel.put(event)

    @property
    def started(self) -> SessionStarted:
        """This session's `session.started` event (its role, model, parent…)."""
        if self._started is None:
            raise UserError(
                f"Session {self.session_id!r} has not started; use ctx.run(...) to run architectures."
            )
        return self._started

    # -- children ----------------------------------------------------------------------
    async def run(
        self,
        child: Architecture,
        task: str,
        *,
        role: str,
        index: int = 0,
        share_route: bool = False,
        intervene: Intervener | None = None,
    ) -> Output:
        """Run `child` as session `{self.session_id}__{role}_{index}` and return its Output.

        The child's events stream into the same run. If the child raises, `session.failed`
        is emitted and the exception propagates, tagged with the child's session id.

        With `share_route=True` the child's model calls route as this session's would
        (the router looks up this session's role path, not the child's), so children
        that must use one model share it (SelfRefine's drafts and feedback). The route is
        still resolved lazily, at the first live call, so a strict replay needs no router.

        `intervene` is called between the child's model turns when the child is an Agent
        (see `jeeves.steering`): it may add messages to the agent's conversation or stop it.
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
        )
        return await ctx.execute(child, task, index=index)

    @property
    def steered(self) -> bool:
        """Whether a parent attached an intervener to this session (`ctx.run(..., intervene=)`)."""
        return self._intervene is not None

    async def intervention(self, turn: Turn) -> Intervention | None:
        """What this session's intervener (if its parent attached one) asks after `turn`."""
        if self._intervene is None:
            return None
        return await self._intervene(turn)

    async def execute(self, arch: Architecture, task: str, *, index: int = 0) -> Output:
        """Run `arch` as this context's session (the runner calls this for the root)."""
        state = self._state
        state.role_paths[self.session_id] = self.role_path
        setup_error: Exception | None = None
        try:
            model = await self._session_model(arch)
        except Exception as exc:  # no route, a replay missing this session: fail as this session, below
            model, setup_error = None, exc
        started = SessionStarted(
            session_id=self.session_id,
            parent_id=self.parent_id,
            role=self.role,
            role_path=list(self.role_path),
            architecture=getattr(arch, "name", type(arch).__name__),
            model=model,
            index=index,
            task=task,
        )
        self._started = started
        await self.emit(started)
        await self._record_session(started, "running")
        with state.tracer.session(started) as span:
            try:
                if setup_error is not None:
                    raise setup_error
                output = await arch.run(self, task)
                if not isinstance(output, Output):
                    raise UserError(
                        f"{type(arch).__name__}.run returned {output!r}; an architecture must return a jeeves.Output."
                    )
            except anyio.get_cancelled_exc_class():
                raise
            except BaseException as exc:
                tag_session(exc, self.session_id)
                span.record_error(exc)
                usage = state.tree_usage(self.session_id)
                await self.emit(
                    SessionFailed(
                        session_id=self.session_id,
                        error_type=error_type_name(exc),
                        message=str(exc),
                        usage=usage,
                    )
                )
                await self._record_session(started, "failed", error=exc)
                raise
            finally:
                if self._replayed:
                    span.set_attribute("jeeves.replayed_steps", self._replayed)
            usage = state.tree_usage(self.session_id)
            span.set_attribute("jeeves.stop_reason", output.stop_reason)
            score = getattr(output.value, "score", None)
            if isinstance(score, int | float) and not isinstance(score, bool):
                span.set_attribute("jeeves.critic.score", float(score))
                span.set_attribute("jeeves.round", index)
        await self.emit(
            SessionCompleted(
                session_id=self.session_id, output=output.text, stop_reason=output.stop_reason, usage=usage
            )
        )
        await self._record_session(started, "completed", output=output)
        return output

    async def _session_model(self, arch: Architecture) -> str | None:
        if self._state.journal is not None and self._state.mode == "replay":
            record = await self._state.journal.get_session(self.session_id)
            if record is None:
                raise ReplayDivergence(
                    f"Replay reached session {self.session_id!r}, which the journal does not hold: the architecture "
                    f"or the task differs from the recorded run. Replay the run with the code that recorded it.",
                    session_id=self.session_id,
                    step=-1,
                )
            return record.model
        return describe_model(arch, self)

    async def _record_session(
        self,
        started: SessionStarted,
        status: Literal["running", "completed", "failed"],
        *,
        output: Output | None = None,
        error: BaseException | None = None,
    ) -> None:
        journal = self._state.journal
        if journal is None or (self._state.mode == "replay" and isinstance(error, PROGRAM_ERRORS)):
            return  # a strict replay's journal compares each outcome with the recorded one, except
            # when the code or the journal is wrong: that error says more than a comparison
        with anyio.CancelScope(shield=True):
            await journal.put_session(
                SessionRecord(
                    session_id=self.session_id,
                    parent_id=self.parent_id,
                    role=self.role,
                    architecture=started.architecture,
                    model=started.model,
                    task=started.task,
                    status=status,
                    stop_reason=output.stop_reason if output else (error_type_name(error) if error else None),
                    output=output.text if output else (str(error) if error else None),
                    usage=self._state.tree_usage(self.session_id).model_dump(),
                    rounds=_rounds(output),
                    source=self._state.source if self.parent_id is None else None,
                )
            )

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

    # -- routing -----------------------------------------------------------------------
    def route(self) -> Route:
        """This session's route: the router's match for its role path (cached).

        A child run with `share_route=True` resolves its parent's role path instead.
        """
        if self._route is None:
            self._route = self._state.router.resolve(self._route_as or self.role_path)
        return self._route

    # -- steps -------------------------------------------------------------------------
    def next_step_index(self) -> int:
        """Allocate the next step index of this session. Allocate before starting concurrent steps."""
        index = self._steps
        self._steps += 1
        return index

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
        return await self._journaled(kind, name, step_index, lambda: request, run, result_type, [])

    async def _journaled(
        self,
        kind: Literal["model", "tool", "function"],
        name: str,
        index: int,
        payload: Callable[[], Any],
        run: Callable[[], Awaitable[T]],
        result_type: Any,
        emitted: list[Event],
    ) -> StepResult[T]:
        state = self._state
        journal = state.journal
        if journal is None:
            return StepResult(await self._live(kind, run, emitted), False)
        request = payload()
        fp = fingerprint(request)
        record = await journal.get_step(self.session_id, index)
        if record is not None:
            if record.kind != kind or record.fingerprint != fp:
                raise ReplayDivergence(
                    f"Session {self.session_id!r} step {index} ({_step_name(kind, name)}) differs from the recorded "
                    f"{_step_name(record.kind, record.name)}; the request changed:\n"
                    f"{request_diff(record.request, request)}\n"
                    f"Replay with the code, prompts and task that recorded the run, or start a new session id.",
                    session_id=self.session_id,
                    step=index,
                )
            if state.mode == "replay" or not _tried_again_on_resume(record):
                self._replayed += 1
                where = step_origin(record, journal)
                for event in served_events(record, where):
                    event.replayed = True
                    await self.emit(event)
                if record.error is not None:
                    raise decode_error(record.error, where)
                return StepResult(served_result(record, state.adapter(result_type), where), True)
        elif state.mode == "replay":
            raise ReplayDivergence(
                f"Session {self.session_id!r} asked for step {index} ({_step_name(kind, name)}), which the journal does not "
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
                    fingerprint=fp,
                    request=request,
                    result=None if error else state.adapter(result_type).dump_python(result, mode="json"),
                    error=encode_error(error) if error else None,
                    events=[e.model_dump(mode="json", exclude={"seq", "ts", "replayed"}) for e in emitted],
                )
            )
        if error is not None:
            raise error
        return StepResult(result, False)  # type: ignore[arg-type]

    async def _live(self, kind: str, run: Callable[[], Awaitable[T]], emitted: list[Event]) -> T:
        """Run a step live under the run's budget (see `BudgetMeter.live`): a step the budget
        refuses or stops raises BudgetExceeded, which the run's first such step announces."""
        try:
            with self._state.meter.live(model_call=kind == "model"):
                result = await run()
        except BudgetExceeded as exc:
            await self._announce(exc, emitted)
            raise
        return result

    # -- model calls -------------------------------------------------------------------
    async def call_model(self, request: ModelRequest, *, route: Route | None = None) -> ModelResponse:
        """One model call for this session: routed, budgeted, journaled, traced, streamed as events."""
        state = self._state
        index = self.next_step_index()
        request.session_id = self.session_id
        request.role_path = self.role_path
        emitted: list[Event] = []

        async def live() -> _ModelStep:
            return await self._call_live(route or self.route(), request, emitted, index)

        step, replayed = await self._journaled(
            "model", "", index, request.fingerprint_payload, live, _ModelStep, emitted
        )
        response = step.response
        state.add_usage(self.session_id, response.usage, live=not replayed)
        await self.emit(
            ModelCompleted(
                session_id=self.session_id,
                text=response.text,
                tool_calls=response.tool_calls,
                usage=response.usage,
                model=response.model,
                fallback=step.fallback,
                step=index,
                replayed=replayed,
            )
        )
        return response

    async def _announce(self, exc: BudgetExceeded, emitted: list[Event]) -> None:
        """Emit `budget.exceeded` once per run, from the first step the budget stopped."""
        state = self._state
        if not state.budget_announced:
            state.budget_announced = True
            event = BudgetExceededEvent(
                session_id=self.session_id, limit=exc.limit, allowed=exc.allowed, spent=exc.spent
            )
            emitted.append(event)
            await self.emit(event)

    async def _call_live(
        self, route: Route, request: ModelRequest, emitted: list[Event], index: int
    ) -> _ModelStep:
        state = self._state
        client = state.router.client_for(route)
        live_request = request  # built for this call by its caller: route settings are filled in place
        live_request.model = route.model
        if route.params:
            live_request.params = {**route.params, **request.params}

        async def on_delta(text: str) -> None:
            event = ModelDelta(session_id=self.session_id, text=text, step=index)
            emitted.append(event)
            await self.emit(event)

        async def on_retry(
            model: str, next_model: str, attempt: int, error: ModelError, delay: float
        ) -> None:
            event = ModelRetrying(
                session_id=self.session_id,
                model=model,
                next_model=next_model,
                attempt=attempt,
                error_type=type(error).__name__,
                message=scrub(str(error), live_request.params),
                delay_s=delay,
            )
            emitted.append(event)
            await self.emit(event)

        with state.tracer.model_call(self.started, live_request) as span:
            try:
                response, fallback = await complete_with_fallbacks(
                    client, route, live_request, on_delta=on_delta, on_retry=on_retry
                )
            except BaseException as exc:
                scrub_error(exc, live_request.params)  # a provider's message may quote the key it was sent
                span.record_error(exc)
                raise
            span.record_response(response)
        if response.usage.model_calls == 0:  # clients that report tokens only: every live call counts once
            response.usage = response.usage.model_copy(update={"model_calls": 1})
        return _ModelStep(response=response, fallback=fallback)
