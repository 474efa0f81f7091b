"""What the runner needs to replay: the plan of a replay, the attached journal, the checks.

`jeeves.run(..., journal=...)` and `jeeves.replay(...)` (in `jeeves._run.runner`, which sits
above this package) use `attach` to open a path, to keep a resumed run's source, and, in
a strict replay, to check that every session used all its recorded steps and ended as
recorded (status, stop reason, output, rounds).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio

from jeeves._run.context import Architecture
from jeeves._run.source import load_architecture, source_of
from jeeves.errors import JournalError, ReplayDivergence, UserError
from jeeves.journal.open import named_runs, read_runs
from jeeves.journal.records import (
    TERMINAL,
    Journal,
    JournalMode,
    SessionRecord,
    StepRecord,
    excerpt,
    request_diff,
)
from jeeves.journal.snapshot import RunSnapshot
from jeeves.journal.store import JournalStore
from jeeves.messages import ModelRequest, ModelResponse
from jeeves.models.base import DeltaSink
from jeeves.models.router import Router
from jeeves.models.testing import ScriptedModel

__all__ = [
    "Attached",
    "ReplayPlan",
    "attach",
    "offline_router",
    "offline_script",
    "plan_replay",
    "skip_served",
]

from jeeves.journal.open import JournalLike, close_journal, open_journal


class _Unreachable:
    """The only model client of a strict replay: reaching it is a bug, and it says so."""

    model_name = "replay"

    async def complete(self, request: ModelRequest, *, on_delta: DeltaSink | None = None) -> ModelResponse:
        raise ReplayDivergence(
            f"A strict replay reached a model for session {request.session_id!r}; replays serve every call "
            f"from the journal. This is a jeeves bug: please report it.",
            session_id=request.session_id,
            step=-1,
        )


def offline_router() -> Router:
    """The router of a strict replay: every role routes to a client that refuses to answer."""
    unreachable = _Unreachable()
    return Router({"default": unreachable}, client=unreachable)


@dataclass
class ReplayPlan:
    """What a replay of one recorded run needs: the architecture, its task and its role."""

    arch: Architecture
    task: str
    role: str
    record: SessionRecord
    journal: Journal | None = None
    """With `strict=True`: the journal to replay from (the run already read), for `journal=`."""


async def plan_replay(
    journal: Journal, session_id: str, arch: Architecture | None, *, strict: bool = False
) -> ReplayPlan:
    """Look up root session `session_id`; rebuild the architecture from its source if not given.

    `strict=True` (a strict replay follows): read the whole run now, once, and return it as
    the plan's `journal`, so the replay reads nothing more."""
    served = _Served(journal, await read_run(journal, session_id)) if strict else None
    record = await (journal.get_session(session_id) if served is None else served.recorded(session_id))
    if record is None:
        records = await read_runs(journal) if isinstance(journal, JournalStore) else []
        known = named_runs([r.session_id for r in records])
        raise UserError(f"{journal!r} holds no run {session_id!r}; its runs are: {known}.")
    if record.parent_id is not None:
        root = session_id.split("__", 1)[0]
        raise UserError(f"{session_id!r} is a child session; replay its run, {root!r}.")
    if arch is None:
        arch = load_architecture(record.source, session_id=session_id)
    return ReplayPlan(arch=arch, task=record.task, role=record.role, record=record, journal=served)


@dataclass
class _Served:
    """Wraps a store during a strict replay: serves reads, refuses writes, notes what was read.

    `run` is the run as the store held it when the replay started (`read_run`, which every
    shipped store has): everything is served from it, with no query per step. A journal
    without `read_run` is read at each step, as it is while recording."""

    store: Journal
    run: RunSnapshot | None = None
    steps: set[tuple[str, int]] = field(default_factory=set)
    sessions: set[str] = field(default_factory=set)

    async def get_step(self, session_id: str, index: int) -> StepRecord | None:
        run = self.run
        record = (
            run.step(session_id, index) if run is not None else await self.store.get_step(session_id, index)
        )
        if record is not None:
            self.steps.add((session_id, index))
        return record

    async def get_session(self, session_id: str) -> SessionRecord | None:
        self.sessions.add(session_id)
        return await self.recorded(session_id)

    async def recorded(self, session_id: str) -> SessionRecord | None:
        """The record of `session_id` (not counted as started)."""
        run = self.run
        return run.session(session_id) if run is not None else await self.store.get_session(session_id)

    async def step_indices(self, session_id: str) -> list[int] | None:
        """The recorded steps of `session_id` (None: the journal cannot list them)."""
        if self.run is not None:
            return self.run.step_indices(session_id)
        if isinstance(self.store, JournalStore):
            return await self.store.step_indices(session_id)
        return None

    async def put_step(self, record: StepRecord) -> None:
        raise JournalError(f"A strict replay tried to record step {record.index} of {record.session_id!r}.")

    async def put_session(self, record: SessionRecord) -> None:
        """Not a write: the context reports each session's end here, and it must be the
        recorded one (in a strict replay the context reports only ends, with only the fields
        compared below: no usage, no root fields). Every recorded step of the session was asked for, and its status, stop
        reason, output and rounds are the recorded ones: a critic's verdict, a stop reason or
        a failure that differs is a divergence even when the final text is the same."""
        if record.status not in TERMINAL:
            return
        if self.run is None:  # the store is read: a cancellation must not cut the check short
            with anyio.CancelScope(shield=True):
                return await self._check_end(record)
        return await self._check_end(record)  # served from the snapshot: nothing awaits

    async def _check_end(self, record: SessionRecord) -> None:
        sid = record.session_id
        recorded = await self.recorded(sid)
        if recorded is None:  # the context checks this when the session starts
            raise JournalError(f"A strict replay tried to record session {sid!r}.")
        _check_steps_used(await self.step_indices(sid), sid, self.steps)
        problem = _outcome_difference(recorded, record)
        if problem:
            raise ReplayDivergence(
                f"Session {sid!r} replayed every recorded step but {problem}", session_id=sid, step=-1
            )

    @property
    def path(self) -> object:
        """The store's file, when it has one (error messages name it)."""
        return getattr(self.store, "path", None)

    def __repr__(self) -> str:
        return repr(self.store)


async def read_run(store: Journal, root_id: str) -> RunSnapshot | None:
    """Run `root_id` read at once, when the store can (`read_run`); else None."""
    read = getattr(store, "read_run", None)
    return await read(root_id) if callable(read) else None


def _check_steps_used(indices: list[int] | None, sid: str, served: set[tuple[str, int]]) -> None:
    for index in indices or ():
        if (sid, index) not in served:
            raise ReplayDivergence(
                f"The recorded run has step {index} of session {sid!r}, which the replay never asked "
                f"for: the code took a shorter path. Replay with the code that recorded the run.",
                session_id=sid,
                step=index,
            )


def _outcome_difference(recorded: SessionRecord, replayed: SessionRecord) -> str:
    """How a replayed session's end differs from the recorded one, and what to do ("" when
    it does not differ)."""
    if recorded.status not in TERMINAL:
        return (
            f"the journal holds no end for it (status {recorded.status!r}: the run crashed or was still going, or the "
            f"journal lost its last records), so the replay's end ({replayed.status}) cannot be checked. "
            f"Resume the run (run it again with its session id) or restore the journal."
        )
    changed = [
        f"{name} {excerpt(getattr(recorded, name))}, replayed {excerpt(getattr(replayed, name))}"
        for name in ("status", "stop_reason", "rounds")
        if getattr(recorded, name) != getattr(replayed, name)
    ]
    diff = ""
    if recorded.output != replayed.output:
        changed.append("another output (below)")
        diff = "\n" + request_diff(recorded.output, replayed.output)
    if not changed:
        return ""
    return (
        f"ended otherwise than recorded: {'; '.join(changed)}. The architecture decides something outside "
        f"its journaled steps (a clock, random numbers, the environment; route it through ctx.step), or the "
        f"journal was changed.{diff}"
    )


@dataclass
class Attached:
    """A run's journal, opened and prepared; `verify` checks a finished strict replay."""

    journal: Journal | None = None
    source: dict[str, Any] | None = None
    served: _Served | None = None
    root: SessionRecord | None = None
    """Recording: the root's record as the journal held it when the run was attached (None:
    a new run); the run reads it once, here."""

    async def verify(self, root_id: str, output: str | None) -> None:
        """After a strict replay returned `output`: every recorded step of the tree was asked
        for, and the root's recorded output is the one the replay produced."""
        served = self.served
        if served is None:
            return
        if served.run is not None:
            records = served.run.sessions()
        elif isinstance(served.store, JournalStore):
            records = await served.store.sessions(root_id)
        else:
            return
        for record in records:
            sid = record.session_id
            if sid not in served.sessions:
                raise ReplayDivergence(
                    f"The recorded run has session {sid!r}, which the replay never started: the code took "
                    f"another path. Replay with the code that recorded the run.",
                    session_id=sid,
                    step=-1,
                )
            _check_steps_used(await served.step_indices(sid), sid, served.steps)
        root = next((r for r in records if r.session_id == root_id), None)
        if root is not None and root.status == "completed" and root.output != output:
            raise ReplayDivergence(
                f"Run {root_id!r} replayed every step but ended with another output:\n"
                f"{request_diff(root.output, output)}\nThe architecture decides something outside its "
                f"journaled steps (a clock, random numbers, the environment); route it through ctx.step.",
                session_id=root_id,
                step=-1,
            )


@asynccontextmanager
async def attach(
    journal: JournalLike | None,
    *,
    mode: JournalMode,
    root_id: str,
    architecture_ref: str | Mapping[str, Any] | None = None,
) -> AsyncIterator[Attached]:
    """Open `journal` for one run and close it afterwards if it was given as a path.

    Recording: `architecture_ref` becomes the root's source; a resumed run given none keeps
    the source it was recorded with. Replaying: the journal is only read, and writes raise.
    """
    if mode not in ("record", "replay", "resume"):
        raise UserError(f"mode={mode!r} is not a journal mode; use 'record' (resumes too) or 'replay'.")
    source = source_of(architecture_ref)
    if journal is None:
        if mode == "replay":
            raise UserError("mode='replay' needs journal=: the journal the run was recorded in.")
        yield Attached(source=source)
        return
    store = open_journal(journal, create=mode != "replay")
    try:
        if mode == "replay":
            served = store if isinstance(store, _Served) else _Served(store, await read_run(store, root_id))
            yield Attached(journal=served, served=served)
            return
        recorded = await store.get_session(root_id)
        if source is None:
            source = recorded.source if recorded is not None else None
        yield Attached(journal=store, source=source, root=recorded)
    finally:
        if store is not journal:
            await close_journal(store)


# -- an offline script going on where a run stopped ----------------------------------------------
def offline_script(router: Router | None) -> ScriptedModel | None:
    """The `[demo]` script a spec built offline answers with (`build(spec, offline=True)`), if
    `router` routes to one."""
    routes = router.routes.values() if router is not None else ()
    return next((r.client for r in routes if isinstance(r.client, ScriptedModel)), None)


async def skip_served(scripted: ScriptedModel, journal: Journal, root: str) -> None:
    """Advance `scripted` past every model call of run `root` the journal will serve (each
    one that succeeded), so a resumed offline run gets the replies the run had not used."""
    if not isinstance(journal, JournalStore):
        return
    paths: dict[str, tuple[str, ...]] = {}
    for record in await journal.sessions(root):  # parents are recorded before their children
        parent = paths.get(record.parent_id or "", ())
        paths[record.session_id] = (*parent, record.role)
        for index in await journal.step_indices(record.session_id):
            step = await journal.get_step(record.session_id, index)
            if step is not None and step.kind == "model" and step.error is None:
                scripted.skip(record.session_id, paths[record.session_id])
