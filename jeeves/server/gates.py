"""The gates a server's run waits on live, and the decisions people send it over HTTP or AG-UI.

A run started by the server with an approval policy gets `GateDesk.ask` as its live
approver. When the run reaches a gate, the core emits `approval.requested`, journals the
gate as pending, and awaits `ask(gate)`: the desk holds the gate until someone decides it
(`POST /runs/{id}/gates/{gate_id}`, an AG-UI client's `resume`, the viewer's buttons).
The core bounds the wait by the gate's TTL and records an `expire` decision when it runs
out; the desk only forgets the gate then.

A decision is checked before it is handed over (the same rules as
`jeeves.approvals.record_decision`: an approval must carry the gate's arguments hash, and
an expired gate takes no decision), so a wrong one is refused to its sender (409) and the
gate keeps waiting. The first valid decision wins; the desk remembers it, so a second one
is a 409 naming it, even in the instant after the first before the run has moved on.

Cancellation: a run cancelled while it waits leaves `ask` through its cancel scope; the
gate is dropped from the desk, and (with a journal) stays pending there for a later resume.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
from pydantic import BaseModel, ConfigDict, Field

from jeeves.approvals.decide import Decision, GateConflict, PendingGate, check_decision

__all__ = ["DecisionBody", "GateDesk", "root_of_gate"]


class DecisionBody(BaseModel):
    """The body of `POST /runs/{id}/gates/{gate_id}` (and an AG-UI resume entry's payload)."""

    model_config = ConfigDict(extra="forbid")

    decision: Literal["approve", "deny"]
    by: str = Field(min_length=1, max_length=200)
    """Who decides: shown in the journal, the replay and the viewer."""
    note: str | None = Field(default=None, max_length=10_000)
    arguments_hash: str
    """The hash of the arguments decided on (`PendingGate.arguments_hash`): an approval of
    other arguments than the gate holds is refused (409)."""

    def to_decision(self) -> Decision:
        return Decision(
            decision=self.decision, by=self.by, note=self.note, arguments_hash=self.arguments_hash
        )


def response_schema(gate: PendingGate) -> dict[str, Any]:
    """The JSON Schema of an answer to `gate` (an AG-UI interrupt's `response_schema`)."""
    return {
        "type": "object",
        "properties": {
            "decision": {"enum": ["approve", "deny"]},
            "arguments_hash": {"const": gate.arguments_hash},
            "by": {"type": "string", "minLength": 1},
            "note": {"type": ["string", "null"]},
        },
        "required": ["decision", "arguments_hash", "by"],
        "additionalProperties": False,
    }


def root_of_gate(gate_id: str) -> str:
    """The root session id of the run holding `gate_id` (`t-1__coder_0#3` → `t-1`)."""
    return gate_id.partition("#")[0].split("__")[0]


@dataclass
class _Waiting:
    gate: PendingGate
    decided: anyio.Event = field(default_factory=anyio.Event)
    decision: Decision | None = None


class GateDesk:
    """The gates one run is waiting on right now, by gate id, in the order they were reached.

    Args:
        on_change: Called whenever a gate arrives or leaves (the run record wakes its followers).
        clock: Wall-clock seconds, compared with `PendingGate.expires_at`.
    """

    def __init__(
        self, on_change: Callable[[], None] = lambda: None, clock: Callable[[], float] = time.time
    ) -> None:
        self._waiting: dict[str, _Waiting] = {}
        self._decided: dict[str, Decision] = {}
        """Gates decided here (one entry per gate the run reached: bounded by its gates)."""
        self._on_change = on_change
        self._clock = clock

    def pending(self) -> list[PendingGate]:
        """The gates waiting for a decision (not those decided and about to leave), in gate-id order."""
        waiting = (w.gate for w in self._waiting.values() if w.decision is None)
        return sorted(waiting, key=lambda g: (g.session_id, g.step))

    def get(self, gate_id: str) -> PendingGate | None:
        """The gate `gate_id` if it is waiting for a decision."""
        waiting = self._waiting.get(gate_id)
        return waiting.gate if waiting is not None and waiting.decision is None else None

    async def ask(self, gate: PendingGate) -> Decision:
        """The live approver: hold `gate` until `decide` is called for it (the core bounds the wait)."""
        waiting = self._waiting[gate.gate_id] = _Waiting(gate)
        self._on_change()
        try:
            await waiting.decided.wait()
            assert waiting.decision is not None
            return waiting.decision
        finally:
            self._waiting.pop(gate.gate_id, None)
            self._on_change()

    def decide(self, gate_id: str, decision: Decision) -> Decision | None:
        """Hand `decision` to the run waiting on `gate_id`; None when no run here waits on it.

        Raises:
            GateConflict: the gate was decided here before; or the approval names another
                call, or the gate has expired (the gate keeps waiting for a valid decision).
        """
        prior = self._decided.get(gate_id)
        if prior is not None:
            raise already_decided(gate_id, prior)
        waiting = self._waiting.get(gate_id)
        if waiting is None:
            return None
        now = self._clock()
        check_decision(waiting.gate, decision, now)
        waiting.decision = self._decided[gate_id] = decision.model_copy(update={"at": decision.at or now})
        waiting.decided.set()
        return waiting.decision


def already_decided(gate_id: str, decision: Decision) -> GateConflict:
    """The 409 for a gate the run decided before."""
    return GateConflict(
        f"Gate {gate_id!r} is already decided: {decision.decision} by {decision.by or 'nobody'!r}; "
        f"a gate takes one decision. GET the run's gates for the ones still waiting."
    )
