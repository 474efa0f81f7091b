"""Deciding a server's gates: live, or held in its journal across a restart.

One path for every decision the server receives (`POST /runs/{id}/gates/{gate_id}`, an
AG-UI `resume` entry, the viewer's buttons):

1. the run waits on the gate live (its `GateDesk`): the decision is handed over and the
   run goes on at once;
2. the run decided the gate before (its desk, its `approval.decided` event, or the
   journal): 409;
3. the run is suspended at the gate in the journal (`awaiting_approval`, after a restart):
   the decision is written into the journal (`jeeves.approvals.record_decision`) and the
   run is resumed from it under the same id: completed steps are served, not run again;
4. the run is running again but has not reached the gate yet (a resumption on its way to
   it): wait until it does, then 1.

`restore` is what a server given a journal does when it starts: every run of its catalog
the journal holds suspended at gates is held again as `awaiting_approval`, so its gates are
listed and can be decided as if the server had never stopped.
"""

from __future__ import annotations

import anyio

from jeeves.approvals.decide import (
    Approvals,
    Decision,
    GateNotFound,
    PendingGate,
    parse_gate_id,
    pending_gates,
    record_decision,
)
from jeeves.budget import Budget
from jeeves.journal.open import read_runs
from jeeves.journal.records import TERMINAL
from jeeves.journal.store import JournalStore, in_tree
from jeeves.server.catalog import Catalog
from jeeves.server.gates import already_decided
from jeeves.server.runs import SERVED, RunRecord, RunRegistry

__all__ = ["Decisions"]

ARRIVAL_S = 30.0
"""How long a decision for a gate the journal holds waits for a resuming run to reach it."""


class Decisions:
    """Starts the server's runs with its policy and journal, and routes decisions to them."""

    def __init__(
        self,
        runs: RunRegistry,
        catalog: Catalog,
        *,
        journal: JournalStore | None,
        approvals: Approvals | None,
        budget: Budget | None,
    ) -> None:
        self.runs = runs
        self.catalog = catalog
        self.journal = journal
        self.approvals = approvals
        self.budget = budget
        self._lock = anyio.Lock()

    def start(self, name: str, task: str, session_id: str | None, *, replace: bool = False) -> RunRecord:
        """Start (or, with `replace`, resume from the journal) a run of catalog entry `name`."""
        arch, router, own = self.catalog.build_with_policy(name)
        return self.runs.start(
            arch,
            task,
            name=name,
            session_id=session_id,
            router=router,
            budget=self.budget,
            approvals=own if own is not None else self.approvals,
            journal=self.journal,
            replace=replace,
        )

    async def restore(self) -> list[RunRecord]:
        """Hold again every run of this catalog the journal has suspended at gates."""
        if self.journal is None:
            return []
        out: list[RunRecord] = []
        for session in await read_runs(self.journal):
            source = session.source or {}
            name = source.get("name")
            if session.status in TERMINAL or source.get("kind") != SERVED:
                continue
            if name not in self.catalog.names or self.runs.get(session.session_id) is not None:
                continue
            pending = await pending_gates(self.journal, session.session_id)
            if pending:
                out.append(self.runs.restore(session.session_id, str(name), session.task, pending))
        return out

    async def decide(self, record: RunRecord, gate_id: str, decision: Decision) -> Decision:
        """Apply `decision` to gate `gate_id` of `record`'s run; see the module docstring.

        Raises:
            GateNotFound: the run has no such gate waiting (404).
            GateConflict: already decided, expired, or the approval names other arguments (409).
        """
        session, step = parse_gate_id(gate_id)  # `#01`, `#١`: no gate (404), never an alias
        if not in_tree(session, record.session_id):
            raise GateNotFound(
                f"Gate {gate_id!r} does not belong to run {record.session_id!r}; "
                f"GET /runs/{record.session_id}/gates lists its gates."
            )
        decided = record.gates.decide(gate_id, decision)
        if decided is not None:
            return decided
        prior = record.decided(gate_id)
        if prior is not None:
            raise already_decided(gate_id, prior)
        if record.status == "awaiting_approval" and self.journal is not None:
            async with self._lock:  # one resumption per run, however many decisions arrive at once
                current = self.runs.get(record.session_id)
                if current is record:
                    decided = await record_decision(self.journal, gate_id, decision)
                    self.start(record.architecture, record.task, record.session_id, replace=True)
                    return decided
            if current is not None:  # resumed meanwhile: decide on the resumption
                return await self.decide(current, gate_id, decision)
        if not record.finished and await self._held(record, gate_id):
            live = await self._arrival(record, gate_id)
            if live is not None:
                return await self.decide(live, gate_id, decision)
        journaled = await self._journaled(session, step)
        if journaled is not None:
            raise already_decided(gate_id, journaled)
        raise GateNotFound(
            f"Run {record.session_id!r} has no gate {gate_id!r} waiting for a decision "
            f"(status {record.status!r}); GET /runs/{record.session_id}/gates lists the waiting ones."
        )

    async def _held(self, record: RunRecord, gate_id: str) -> bool:
        if self.journal is None:
            return False
        return any(g.gate_id == gate_id for g in await pending_gates(self.journal, record.session_id))

    async def _journaled(self, session: str, step: int) -> Decision | None:
        """The decision the journal holds for gate `session#step`, if it is decided there."""
        if self.journal is None:
            return None
        record = await self.journal.get_step(session, step)
        if record is None or record.kind != "gate" or record.pending:
            return None
        return Decision.model_validate(record.result)

    async def _arrival(self, record: RunRecord, gate_id: str) -> RunRecord | None:
        """Wait until the resuming run reaches (or decides) `gate_id`; None if it ends first."""
        with anyio.move_on_after(ARRIVAL_S):
            while record.gates.get(gate_id) is None and record.decided(gate_id) is None:
                if record.finished:
                    return None
                await record.changed()
            return record
        return None

    def pending(self, record: RunRecord) -> list[PendingGate]:
        """The gates of `record`'s run waiting for a decision."""
        return record.pending()
