"""Approval gates, from the outside: the run's policy (`Approvals`, pure data the kernel
reads) and deciding gates held in a journal (`record_decision`, `pending_gates`).

A run given `approvals=Approvals(...)` gates the tool calls its policy says to ask about;
see docs/approvals.md. Which calls those are is decided by a wrapper around an agent's tools,
`jeeves.agent.gating.Gated`; the gate itself is a journaled step of the kernel
(`jeeves._run.gates`).
"""

from typing import TYPE_CHECKING

from jeeves._base.lazy import lazy_names
from jeeves.approvals.policy import (
    APPROVAL_MODES,
    Allow,
    ApprovalMode,
    Approvals,
    Approver,
    BadGateId,
    Decision,
    PendingGate,
    arguments_hash,
    decided_event,
    gate_hash,
    gate_id,
    parse_gate_id,
)

if TYPE_CHECKING:
    from jeeves.approvals.decide import GateConflict, GateNotFound, pending_gates, record_decision

# Deciding in a journal loads on first use: the kernel reads only the policy.
_LAZY = {
    name: "jeeves.approvals.decide"
    for name in ["GateConflict", "GateNotFound", "pending_gates", "record_decision"]
}


__getattr__ = lazy_names("jeeves.approvals", _LAZY)


__all__ = [
    "APPROVAL_MODES",
    "Allow",
    "ApprovalMode",
    "Approvals",
    "Approver",
    "BadGateId",
    "Decision",
    "GateConflict",
    "GateNotFound",
    "PendingGate",
    "arguments_hash",
    "decided_event",
    "gate_hash",
    "gate_id",
    "parse_gate_id",
    "pending_gates",
    "record_decision",
]
