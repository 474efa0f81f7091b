"""The Context an architecture runs in, the Architecture protocol and the Output it returns.

One `RunState` is shared by every session of a run (the event channel, the router, the
budget meter, the journal, the tracer, the usage ledger, the approval policy); each
session gets its own `Context` with its id, its role path and its own step counter.

`Context` is the one object an architecture sees, and its public members are the whole of
what an architecture author uses: `emit`, `run`, `call_model`, `step`, `usage`,
`replaying`, `started`, and the session's `session_id`, `parent_id`, `role` and
`role_path`. What the kernel does with a session (its lifecycle, its journaled steps, its
model calls, its gates) are functions of the kernel module that owns that state, each
taking the session: `jeeves._run.sessions`, `steps`, `model_calls`, `gates`, `state`.

Invariants:
- ids come only from `child_id(parent, role, index)`; nothing here reads a clock or a
  random source to name anything;
- step indices are allocated in program order within a session (`steps.next_index`), so
  callers that start steps concurrently allocate the indices first, in a fixed order;
- a journaled step that ran live is recorded with the events it emitted; replayed, it
  re-emits those events marked `replayed=True` and charges no usage or budget.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Iterable
from contextvars import ContextVar
from typing import (
    Any,
    Literal,
    NamedTuple,
    ParamSpec,
    Protocol,
    Self,
    TypeVar,
    overload,
    runtime_checkable,
)

import anyio
from pydantic import BaseModel, ConfigDict

from jeeves._base.ids import child_id, validate_name
from jeeves._base.validate import short_repr
from jeeves._run import model_calls, sessions
from jeeves._run.state import RunState, Session, StepResult, emit
from jeeves._run.steering import Intervener
from jeeves._run.steps import journaled, next_index
from jeeves.budget import Budget
from jeeves.errors import PROGRAM_ERRORS, BudgetExceeded, JournalError, UserError, UserTypeError
from jeeves.events import Event, SessionStarted
from jeeves.messages import ModelRequest, ModelResponse, Usage
from jeeves.models.base import Route

__all__ = [
    "SPREADER",
    "Architecture",
    "Caller",
    "Context",
    "Output",
    "RunState",
    "Spreader",
    "StepResult",
    "execute",
    "join_callers",
    "model_callers",
]

T = TypeVar("T")
P = ParamSpec("P")


class Output(BaseModel):
    """What an architecture returns to whoever ran it.

    `value` is the typed result (a str, or an instance of an Agent's `output_type`);
    `text` is its text form, which parents put into prompts and events. Architectures
    subclass it to add what they know (rounds and verdicts, delegations).
    """

    model_config = ConfigDict(defer_build=True, arbitrary_types_allowed=True)

    value: Any = None
    text: str = ""
    stop_reason: str = "completed"
    """completed, approved, max_rounds, no_improvement, budget, critic_failed, forwarded…"""

    @classmethod
    def of(
        cls, value: Any, *, text: str | None = None, stop_reason: str = "completed", **fields: Any
    ) -> Self:
        """An Output of `value`: how an architecture returns its answer.

        ```python
        return Output.of(answer)  # text: the answer itself
        return DebateOutput.of(answer, stop_reason="judged", turns=turns)  # a subclass's fields
        ```

        `text` defaults to `value` itself (a str), its JSON (a pydantic model) or `str(value)`;
        `fields` fill a subclass's own fields (rounds, verdicts...).
        """
        if text is None:
            if isinstance(value, str):
                text = value
            elif isinstance(value, BaseModel):
                text = value.model_dump_json()
            else:
                text = str(value)
        return cls(value=value, text=text, stop_reason=stop_reason, **fields)


@runtime_checkable
class Architecture(Protocol):
    """Anything that runs a task in a Context and returns an Output.

    An architecture reports progress with `await ctx.emit(event)` and runs children with
    `await ctx.run(child, task, role=..., index=...)`; it never makes ids, reads clocks or
    draws random numbers itself, so a replay takes the same path.
    """

    name: str
    """The architecture's kind, shown in `session.started` (agent, actor_critic, …)."""

    async def run(self, ctx: Context, task: str) -> Output: ...


def describe_model(arch: object, ctx: Context) -> str | None:
    """The model an architecture calls itself, if it says (Agents do); None otherwise."""
    describe = getattr(arch, "describe_model", None)
    return describe(ctx) if callable(describe) else None


class Context(Session):
    """One session's handle on the run. Architectures get one in `run(ctx, task)`."""

    __slots__ = ()

    @overload
    async def emit(self, event: Event, /) -> None: ...

    @overload
    async def emit(self, event: Callable[P, Event], /, *args: P.args, **fields: P.kwargs) -> None: ...

    async def emit(self, event: Any, /, *args: Any, **fields: Any) -> None:
        """Send an event into the run's stream; `seq` and `ts` are stamped here.

        ```python
        await ctx.emit(RoundStarted(session_id=ctx.session_id, round=r))
        await ctx.emit(RoundStarted, session_id=ctx.session_id, round=r)  # built only if read
        ```

        Given its class (or a function that returns it) and the fields, the event is built
        only when someone reads the run's events: `jeeves.run` reads none, so it never is.
        Both forms emit the same event. In a strict replay every event is marked `replayed`:
        nothing in it ran live.
        """
        await emit(self, event, *args, **fields)

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

        Await it as any coroutine (`await ctx.run(...)`).
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
            return execute(ctx, child, task, index)
        return _run_sliced(ctx, child, task, index)

    def call_model(
        self, request: ModelRequest, *, route: Route | None = None
    ) -> Coroutine[Any, Any, ModelResponse]:
        """One model call for this session: routed (by `route`, else the router's match for
        this session's role path), budgeted, journaled, traced, streamed as events. Await it."""
        return model_calls.call_model(self, request, route)

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
        returned (or its recorded exception raised) and `run` is not called. `index` is a
        step index allocated earlier (`jeeves._run.steps.next_index`), for steps started
        concurrently; by default the next one.
        """
        step_index = next_index(self) if index is None else index
        return await journaled(self, kind, name, step_index, lambda: request, run, result_type, [])

    def usage(self, session_id: str | None = None) -> Usage:
        """Usage of a session (this one by default) and everything below it.

        Replayed calls count, as in events, so a replay reports the same numbers; what
        the run actually spent is in `RunResult.usage`.
        """
        return self._state.tree_usage(session_id or self.session_id)

    @property
    def replaying(self) -> bool:
        """Whether this run is a strict replay: every step is served from the journal, and an
        architecture must reach the same ends without deciding anything live (BestOfN does not
        cancel candidates then: each replays up to where its recording stopped)."""
        return self._state.mode == "replay"

    @property
    def started(self) -> SessionStarted:
        """This session's `session.started` event (its role, model, parent…), as the stream carried it."""
        return sessions.started(self)


async def execute(ctx: Context, arch: Architecture, task: str, index: int = 0) -> Output:
    """Run `arch` as `ctx`'s session: its start, its span, its end and its journal record
    (the runner calls this for the root, `Context.run` for every child)."""
    state = ctx._state
    state.role_paths[ctx.session_id] = ctx.role_path
    setup_error: Exception | None = None
    try:
        if state.journal is not None and state.mode == "replay":
            model = await sessions.recorded_model(ctx)
        else:
            model = describe_model(arch, ctx)
    except Exception as exc:  # no route, a replay missing this session: fail as this session, below
        model, setup_error = None, exc
    # An adopted session's records are its branch worker's (`jeeves._run.branch`): they are
    # already final, and rewriting them (in progress, then ended) would make a parent
    # taken over mid-adoption read the branch as unfinished.
    recorded = state.journal is not None and not ctx._adopted
    await sessions.start(ctx, getattr(arch, "name", type(arch).__name__), model, index, task)
    if recorded:
        await sessions.record(ctx, "in_progress")
    with sessions.span(ctx) as span:
        state.spans[ctx.session_id] = span
        try:
            if setup_error is not None:
                raise setup_error
            if ctx._slice is not None:
                await sessions.allot(ctx, ctx._slice)
            output = await arch.run(ctx, task)
            if not isinstance(output, Output):
                raise UserError(
                    f"{type(arch).__name__}.run returned {output!r}; an architecture must return a jeeves.Output."
                )
        except anyio.get_cancelled_exc_class():
            raise
        except BaseException as exc:
            await sessions.fail(ctx, span, exc, journaled=recorded)
            raise
        finally:
            state.spans.pop(ctx.session_id, None)
            if ctx._replayed:
                span.set_attribute("jeeves.replayed_steps", ctx._replayed)
            if ctx._adopted:  # its work (and its model-call spans) ran on another worker
                span.set_attribute("jeeves.adopted", True)
        sessions.describe_output(span, output, index)
    await sessions.complete(ctx, output, journaled=recorded)
    return output


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
        return await execute(ctx, child, task, index)
    return await _run_sliced(ctx, child, task, index)


async def _run_sliced(ctx: Context, child: Architecture, task: str, index: int) -> Output:
    """A child run under a budget slice: its Output, or the slice's `BudgetExceeded` (with
    that Output on `error.output`) when the slice stopped one of its steps."""
    output = await execute(ctx, child, task, index)
    stopped = sessions.slice_stopped(ctx)
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


RolePath = tuple[str, ...]


class Caller(NamedTuple):
    """A session that calls a model, as an architecture tree would run it.

    `path` is the session's role path (what a ScriptedModel's keys match); `routed` is
    the role path the router resolves for its calls (a child run with `share_route=True`
    resolves its parent's), or None when the session pins its own model.
    """

    path: RolePath
    routed: RolePath | None


def model_callers(node: object, path: RolePath, routed: RolePath | None = None) -> list[Caller] | None:
    """Every session under `node` (run at role path `path`) that calls a model.

    Built-in architectures and critics answer through a `model_callers(path, routed)`
    method, whose answer does not depend on the task: they always run the same kinds
    of children under the same roles. None when some node in the tree does not say
    (an architecture or critic of the user's own), so nothing can be concluded from it.
    `routed` is the path the node's own calls resolve as; unset, `path`.
    """
    method = getattr(node, "model_callers", None)
    if not callable(method):
        return None
    found: list[Caller] | None = method(path, path if routed is None else routed)
    return found


def join_callers(parts: Iterable[list[Caller] | None]) -> list[Caller] | None:
    """The callers of several children together; None if any of them cannot say."""
    joined: list[Caller] = []
    for part in parts:
        if part is None:
            return None
        joined += part
    return joined
