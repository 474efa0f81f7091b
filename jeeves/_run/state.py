"""What every session of one run shares (`RunState`), and how a run without an approver
stops at its gates (`Suspension`).

Part of the context (`jeeves._run.context`); architectures never see this module.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, NamedTuple, ParamSpec, TypeVar, overload

import anyio
from pydantic import TypeAdapter

from jeeves._base.cache import kept
from jeeves._run.channel import EventChannel
from jeeves._run.steering import Inbox, Intervener
from jeeves._run.usage_tree import book
from jeeves.approvals.policy import Approvals, Approver, PendingGate
from jeeves.budget import Budget, BudgetMeter
from jeeves.errors import UserError
from jeeves.events import Event, SessionStarted
from jeeves.journal.delta import RequestChain
from jeeves.journal.records import Journal, JournalMode
from jeeves.messages import Usage, UsageTally
from jeeves.models.base import Route
from jeeves.models.router import Router
from jeeves.telemetry.tracer import NullTracer, SpanHandle, Tracer, is_null

__all__ = [
    "Reached",
    "RunState",
    "Session",
    "Start",
    "Stamp",
    "StepResult",
    "Suspension",
    "count_tool_call",
    "envelope_of",
    "emit",
    "lease_owner",
    "run_journal",
    "sent_unread",
    "tool_calls",
    "type_adapter",
]

T = TypeVar("T")
P = ParamSpec("P")
Stamp = tuple[int, float]
"""The `seq` and `ts` an event took."""


@dataclass(slots=True)
class Start:
    """What a session started with (`jeeves._run.sessions.start`): its `session.started` is
    built from it when first needed, which in a run nobody reads may be never."""

    architecture: Any
    model: Any
    index: int
    task: Any
    stamp: Stamp | None = None
    """The `seq` and `ts` its `session.started` took unbuilt (`emit`); None: built and sent."""


class StepResult(NamedTuple, Generic[T]):
    value: T
    replayed: bool


_OWNER: dict[int, str] = {}


def lease_owner() -> str:
    """This process, as a lease names it: `host:pid` (looked up once per process)."""
    pid = os.getpid()
    owner = _OWNER.get(pid)
    if owner is None:
        import socket  # on first lease only: `import jeeves` does not load it (bench (d))

        owner = _OWNER[pid] = f"{socket.gethostname()}:{pid}"
    return owner


class Suspension:
    """Stops a run with no approver cleanly when it reaches undecided gates.

    The rule (siblings finish, they are not cancelled mid-step): a gate with no approver
    records itself as pending and parks. Every other branch goes on until it, too, parks at
    a gate, or ends, or waits on a parked branch (a parent waiting for its children). When
    nothing is in flight (no step between its start and its record, no journal write) and
    every task is blocked, the runner cancels the tree: what it cancels is only waiting, so
    nothing completed is lost or repeated, and every gate the branches reach is in
    `pending`.
    """

    __slots__ = ("_changed", "_requested", "ended", "in_flight", "pending", "watched")

    def __init__(self) -> None:
        self.pending: dict[str, PendingGate] = {}
        self.in_flight = 0
        self.watched = False
        """Whether the runner watches for suspension (a run with an approval policy)."""
        self.ended = False
        """Whether the run's root returned or raised (`end`): there is nothing left to watch."""
        self._requested: anyio.Event | None = None
        self._changed: anyio.Event | None = None

    @property
    def requested(self) -> anyio.Event:
        """Set when a gate parks: the run is asked to suspend (built on first use); set by
        `end` too, to wake the watcher."""
        if self._requested is None:
            self._requested = anyio.Event()
        return self._requested

    def enter(self) -> None:
        self.in_flight += 1

    def leave(self) -> None:
        self.in_flight -= 1
        if self._changed is not None:
            self._changed.set()

    def end(self) -> None:
        """The run's root returned or raised: wake the watcher (`settled`), which then returns
        False. Ending by itself, not by a cancellation, the watcher leaves no cancelled task
        whose traceback would hold its frames, and through them the run, in a reference cycle."""
        self.ended = True
        self.requested.set()
        if self._changed is not None:
            self._changed.set()

    async def park(self, gate: PendingGate | None = None) -> None:
        """Wait here until the runner cancels the tree (never returns)."""
        if not self.watched:
            where = f" at gate {gate.gate_id} ({gate.tool!r})" if gate is not None else ""
            raise UserError(
                f"The run reached an undecided gate{where} but has no approval policy, so nothing "
                f"suspends it; pass approvals=Approvals(...) to jeeves.run, or an approver=."
            )
        if gate is not None:
            self.pending[gate.gate_id] = gate
            self.requested.set()
        await anyio.sleep_forever()

    async def settled(self) -> bool:
        """True once the run was asked to suspend and nothing is left in flight; False once
        the run ended (`end`) first."""
        await self.requested.wait()
        while not self.ended:
            if self.in_flight:
                self._changed = anyio.Event()
                await self._changed.wait()
                continue
            await anyio.wait_all_tasks_blocked()
            if not self.in_flight and not self.ended:
                return True
        return False

    def gates(self) -> list[PendingGate]:
        return sorted(self.pending.values(), key=lambda g: (g.session_id, g.step))


_ADAPTERS: dict[Any, TypeAdapter[Any]] = {}
MAX_ADAPTERS = 512
"""How many result types `type_adapter` keeps; past that, the oldest is dropped (a program
that makes types at run time does not grow the cache without bound)."""


def type_adapter(tp: Any) -> TypeAdapter[Any]:
    """The pydantic adapter of result type `tp`, built at its first use in this process and
    kept: a run's steps ask for the same few types in every run, and building one costs
    far more than a step served from a journal. Thread-safe enough: two threads missing at
    once each build an equal adapter, and either is kept."""
    return kept(_ADAPTERS, tp, TypeAdapter, MAX_ADAPTERS)


Reached = tuple[str, int, int, "tuple[int, int, str | None] | None", "tuple[Any, Any, Any, Any] | None"]
"""What a progress envelope reports after a step (`jeeves._run.steps.reached`): the session id,
the step's index, the steps completed, the plan's progress, and what the run's budget has left
(tokens, model calls, USD, seconds; None when it limits nothing)."""
_NOTHING_LEFT_TO_COUNT = (None, None, None, None)


def envelope_of(reached: Reached, gate: str | None) -> dict[str, Any]:
    """The progress envelope of `reached` (`gate`: the gate the run waits on), as JSON: a
    `Progress` event's fields without `seq`, `ts`, `replayed` and `type`, in its order, as the
    event would dump them."""
    session_id, step, completed, plan, left = reached
    tokens, calls, usd, seconds = _NOTHING_LEFT_TO_COUNT if left is None else left
    return {
        "session_id": session_id,
        "step": step,
        "completed_steps": completed,
        "tokens_left": tokens,
        "model_calls_left": calls,
        "usd_left": usd,
        "seconds_left": seconds,
        "gate": gate,
        "total_steps": plan[0] if plan else None,
        "plan_steps_completed": plan[1] if plan else None,
        "current_step": plan[2] if plan else None,
    }


@dataclass
class RunState:
    """What every session of one run shares."""

    router: Router
    channel: EventChannel = field(default_factory=EventChannel)
    meter: BudgetMeter = field(default_factory=BudgetMeter)
    tracer: Tracer = field(default_factory=NullTracer)
    journal: Journal | None = None
    mode: JournalMode = "record"
    fresh: bool = False
    """The journal held no record of this run when it started (a new root id, not a resume):
    its steps are not looked up, as none can be recorded (the root's record is written
    before any step)."""
    usage: dict[str, UsageTally] = field(default_factory=dict)
    """Per session: every model call's usage, replayed ones included (what events report)."""
    live_usage: dict[str, UsageTally] = field(default_factory=dict)
    """Per session: live calls only (what this run spent); kept only with a journal (without
    one every call is live: read `_live_books()`)."""
    role_paths: dict[str, tuple[str, ...]] = field(default_factory=dict)
    tool_calls: dict[str, list[str]] = field(default_factory=dict)
    """Per session: the names of the tools it called, in order (replayed calls included)."""
    inbox: Inbox = field(default_factory=Inbox)
    """A human's messages waiting for an agent's turn boundary (`RunStream.inject`)."""
    spans: dict[str, SpanHandle] = field(default_factory=dict)
    """The open session span of each running session, for span events."""
    source: dict[str, Any] | None = None
    """How to rebuild the root architecture; stored in the root's session record."""
    approvals: Approvals | None = None
    """The run's approval policy; None: nothing is gated."""
    approver: Approver | None = None
    """The live approver; None: the run suspends at an undecided gate."""
    suspension: Suspension = field(default_factory=Suspension)
    completed_steps: int = 0
    """Steps the run has completed: live in this process, or recorded by an earlier attempt
    and served on resume (progress envelopes report it)."""
    plan_progress: tuple[int, int, str | None] | None = None
    """(total, completed, current step) of the verified plan being executed, when an
    architecture knows one (`Context.report_plan`); None: no plan."""
    progress_interval_s: float | None = None
    """Emit `progress` events at most this often (seconds); None: keep the envelope for the
    journal only, and emit no events (the default: a replay's events stay the recorded ones)."""
    last_progress: float = field(default_factory=time.monotonic)
    reached: Reached | None = None
    """Where the run stood when its last step completed live (`jeeves._run.steps.completed`):
    the values its progress envelope reports, kept as they were then, the envelope built from
    them only when read (`progress`)."""
    _progress: dict[str, Any] | None = None
    owner: str = field(default_factory=lease_owner)
    lease_renewed_at: float | None = None
    created_at: float | None = None
    expires_at: float | None = None
    """The session TTL's end (wall clock), kept in the root's record across resumes."""
    _root_lock: anyio.Lock | None = None
    _tree: dict[str, UsageTally] = field(default_factory=dict)
    _live_tree: dict[str, UsageTally] = field(default_factory=dict)
    _served: bool = False
    """Per session: its usage plus everything below it, kept as calls are booked (see usage_tree)."""

    traced: bool = field(init=False)
    """Whether the run's tracer records anything (decided once: the default one does not)."""

    def __post_init__(self) -> None:
        self.traced = not is_null(self.tracer)

    @property
    def progress(self) -> dict[str, Any] | None:
        """The last progress envelope, as JSON (the heartbeat writes it into the root's record):
        a gate's, a resumed run's last one, or the one after the last step completed live,
        built now from what the run reported then (`reached`)."""
        if self.reached is not None:
            self._progress, self.reached = envelope_of(self.reached, None), None
        return self._progress

    @progress.setter
    def progress(self, value: dict[str, Any] | None) -> None:
        self._progress, self.reached = value, None

    @property
    def reads_deltas(self) -> bool:
        """Whether a model's streamed text is wanted: the run's events are read (`jeeves.stream`)
        or recorded (a journal). Otherwise a call uses the provider's non-streaming endpoint."""
        return self.channel.consume or self.journal is not None

    @property
    def root_lock(self) -> anyio.Lock:
        """Serialises writes of the root's session record (the context's and the heartbeat's);
        built at the first write (a run without a journal never takes it)."""
        if self._root_lock is None:
            self._root_lock = anyio.Lock()
        return self._root_lock

    def adapter(self, tp: Any) -> TypeAdapter[Any]:
        """The JSON adapter of a step's result type (`type_adapter`: built once per process)."""
        return type_adapter(tp)

    def add_usage(
        self, session_id: str, usage: Usage, *, live: bool, meter: BudgetMeter | None = None
    ) -> None:
        """Book one model call's usage; live calls also count against the session's budget
        (`meter`, the run's by default, which a slice forwards to).

        A call a resume serves was spent by an earlier attempt of this run, so it counts
        against the budget too (`charge`): what is left is the original budget minus what the
        journal shows was used, across any number of resumes, and a kill cannot refill it. A
        strict replay spends nothing, so its served calls count only against slices (see
        `BudgetMeter.charge_served`). Neither goes into the live books (`RunResult.usage`:
        what this process spent).

        Until a call is served every call is live, so the live books are the others and are
        not kept twice (`_live_books`): they part at the first call served."""
        meter = meter or self.meter
        if live:
            book(self.usage, self._tree, session_id, usage)
            if self._served:
                book(self.live_usage, self._live_tree, session_id, usage)
            meter.charge(usage)
            return
        if not self._served:  # the first call served: the live books part from the others here
            self._served = True
            self.live_usage, self._live_tree = _copied(self.usage), _copied(self._tree)
        book(self.usage, self._tree, session_id, usage)
        if self.mode == "replay":
            meter.charge_served(usage)
        else:
            meter.charge(usage)

    def _live_books(self) -> tuple[dict[str, UsageTally], dict[str, UsageTally]]:
        """The live usage per session and per subtree (the only books until a call is served)."""
        if not self._served:
            return self.usage, self._tree
        return self.live_usage, self._live_tree

    def tree_usage(self, session_id: str, *, live: bool = False) -> Usage:
        """Usage of a session and everything below it (kept as calls are booked: O(1))."""
        tally = (self._live_books()[1] if live else self._tree).get(session_id)
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
        for sid, tally in self._live_books()[0].items():
            path = self.role_paths.get(sid, ("?",))
            out.setdefault(".".join(path) if whole_path else path[-1], UsageTally()).add(tally)
        return {role: tally.snapshot() for role, tally in out.items()}

    def usage_by_session(self) -> dict[str, Usage]:
        """Live usage per session id."""
        return {sid: tally.snapshot() for sid, tally in self._live_books()[0].items()}


class Session:
    """What one session of a run holds: its identity, its step counter, the budget its steps
    run under. `jeeves._run.context.Context` is a Session with the methods an architecture
    calls; the kernel's functions (`jeeves._run.steps`, `sessions`, `model_calls`, `gates`)
    take the Session they work on."""

    __slots__ = (
        "_adopted",
        "_intervene",
        "_meter",
        "_replayed",
        "_requests",
        "_route",
        "_route_as",
        "_slice",
        "_start",
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
        self._requests: RequestChain | None = None
        """This session's model requests so far, which the next one's journal step extends."""
        self._meter = meter or state.meter
        """The budget this session's steps run under: the run's, or a slice of it."""
        self._slice = slice_budget
        """The slice this session asked for (`Context.run(..., budget=)`), allotted when it starts."""
        self.session_id = session_id
        """This session's id: `child_id(parent, role, index)` below the root."""
        self.role = role
        """The role its parent ran it under (the root's: its architecture's name)."""
        self.role_path = role_path
        """The roles from the root down to this session (what routes and scripts match)."""
        self.parent_id = parent_id
        """The session that ran this one; None for the root."""
        self._steps = 0
        self._replayed = 0
        self._route: Route | None = None
        self._route_as = route_as
        self._start: Start | None = None
        """What the session started with, once it has (`sessions.start`)."""
        self._started: SessionStarted | None = None
        """The session's `session.started`, once built (`sessions.started`)."""


@overload
async def emit(session: Session, event: Event, /) -> Stamp | None: ...


@overload
async def emit(
    session: Session, event: Callable[P, Event], /, *args: P.args, **fields: P.kwargs
) -> Stamp | None: ...


async def emit(session: Session, event: Any, /, *args: Any, **fields: Any) -> Stamp | None:
    """Send an event into the run's stream; `seq` and `ts` are stamped by the channel.

    `event` is the event, or what builds it (its class, or a function returning it) followed
    by the arguments to build it with: then it is built only if someone reads it. When
    nobody does (`jeeves.run`), the event takes its `seq` and `ts` (returned) and is never
    built: the one place a run acts on whether its events are read. An event a step records
    (`emitted`) is built before, for the journal, and given whole.

    In a strict replay every event is marked `replayed`: nothing in it ran live.
    """
    state = session._state
    channel = state.channel
    if callable(event):
        skipped = channel.skip()
        if skipped is not None:
            return skipped
        event = event(*args, **fields)
    _mark(state, event)
    if not channel.offer(event):  # the buffer is full: wait for the reader
        await channel.put(event)
    return None


def sent_unread(session: Session, event: Event, stamp: Stamp) -> None:
    """Make `event`, built after `emit` skipped it (`stamp`: what it returned), the event the
    stream would have carried: its `seq`, `ts` and replay mark."""
    _mark(session._state, event)
    fields = event.__dict__  # stamped, not set: `seq` and `ts` stay out of the fields set
    fields["seq"], fields["ts"] = stamp


def _mark(state: RunState, event: Event) -> None:
    if state.mode == "replay" and not event.replayed:  # a served step's events come marked
        event.replayed = True


def count_tool_call(session: Session, name: str) -> None:
    """Note that `session` called tool `name` (live or replayed); stop conditions read it."""
    session._state.tool_calls.setdefault(session.session_id, []).append(name)


def tool_calls(session: Session, session_id: str | None = None) -> list[str]:
    """The tools called by a session (`session` by default) and everything below it."""
    return session._state.tree_tool_calls(session_id or session.session_id)


def run_journal(session: Session) -> Journal | None:
    """The journal `session`'s run records into; None for a run without one."""
    return session._state.journal


def _copied(books: dict[str, UsageTally]) -> dict[str, UsageTally]:
    """A copy of `books`, each tally its own."""
    out = {}
    for sid, tally in books.items():
        out[sid] = copy = UsageTally()
        copy.add(tally)
    return out
