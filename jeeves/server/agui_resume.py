"""An AG-UI `resume`: the answers to a run's interrupts, decided as the run's gates.

Each `ResumeEntry` answers one interrupt, whose id is the gate id (`SESSION#STEP`):

- `status: "resolved"` with `payload` `{decision: "approve" | "deny", arguments_hash, by?, note?}`
  (the interrupt's `response_schema`; `by` defaults to `ag-ui`);
- `status: "cancelled"`: the client abandons the interrupt, which denies the gate (the
  model reads the denial, or the run ends `rejected` under `deny_ends_run`).

Every entry must answer an interrupt of the same run. Each is decided through
`Decisions.decide` (live, or recorded in the journal and resumed), in the order given;
the first refused one (404, 409, 422) ends the request, and the decisions before it stay made.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from ag_ui.core import ResumeEntry
from pydantic import BaseModel, ConfigDict, Field

from jeeves.approvals.decide import Decision, GateNotFound
from jeeves.errors import UserError
from jeeves.server.decisions import Decisions
from jeeves.server.gates import root_of_gate
from jeeves.server.runs import RunRecord

__all__ = ["ResumeAnswer", "resume_entries"]

CLIENT = "ag-ui"
"""Who decided, when an AG-UI answer does not say."""


class ResumeAnswer(BaseModel):
    """The payload of a resolved resume entry."""

    model_config = ConfigDict(extra="forbid")

    decision: Literal["approve", "deny"]
    arguments_hash: str
    by: str = Field(default=CLIENT, min_length=1, max_length=200)
    note: str | None = Field(default=None, max_length=10_000)


def _decision(entry: ResumeEntry) -> Decision:
    if entry.status == "cancelled":
        return Decision(decision="deny", by=CLIENT, note="The AG-UI client cancelled the interrupt.")
    if not isinstance(entry.payload, dict):
        raise UserError(
            f"The resume entry for {entry.interrupt_id!r} is resolved but its payload is {entry.payload!r}; "
            f'send {{"decision": "approve" | "deny", "arguments_hash": ...}} (the interrupt\'s responseSchema).'
        )
    answer = ResumeAnswer.model_validate(entry.payload)
    return Decision(
        decision=answer.decision, by=answer.by, note=answer.note, arguments_hash=answer.arguments_hash
    )


async def resume_entries(decisions: Decisions, entries: Sequence[ResumeEntry]) -> RunRecord:
    """Decide every entry's gate; return the record of the run to follow (maybe a resumption)."""
    roots = sorted({root_of_gate(e.interrupt_id) for e in entries})
    if len(roots) != 1:
        raise UserError(
            f"The resume entries answer interrupts of {len(roots)} runs ({', '.join(map(repr, roots))}); "
            f"resume one run per AG-UI run."
        )
    root = roots[0]
    for entry in entries:
        record = decisions.runs.get(root)
        if record is None:
            raise GateNotFound(
                f"No run {root!r} here for interrupt {entry.interrupt_id!r}: it never ran on this server, "
                f"or it ended and was dropped."
            )
        await decisions.decide(record, entry.interrupt_id, _decision(entry))
    record = decisions.runs.get(root)
    assert record is not None  # held: a decided run is retained
    return record
