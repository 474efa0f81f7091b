"""Approval modes, the run's approval policy, and the data a gate holds (no I/O here).

A tool says how much it can change the world (`ApprovalMode`, least first). A run's
`Approvals` policy sorts every call into one of three outcomes:

- `"run"`: inline, no gate (its mode is in `auto`, or a standing `Allow` rule matches);
- `"ask"`: a gate, journaled as a step, decided by an approver or from outside;
- `"refuse"`: above the run's safety mode (`refuse_above`): never executed, the model
  reads a refusal. Rules cannot lift a refusal: the safety mode is the hard ceiling.

`PendingGate` is what an approver (a callback, the viewer, a person at the command line)
is shown; `Decision` is what it answers and what the journal stores as the gate's result.
A decision approves one exact call of one gate: `gate_hash` is the SHA-256 of the
canonical JSON of the gate id, the tool name and the arguments, and a tool only runs when
the call it is about to make hashes to the approved value. (Journals written before the
hash bound the gate id and tool hold `arguments_hash`, of the arguments alone; their gates
keep it, see `jeeves._run.gates`.)

Gate ids are `SESSION#STEP`, STEP in ASCII digits without leading zeros; `parse_gate_id`
is the one parser every reader of a gate id (the CLI, the server, the journal) uses, so
`r-1#01` or `r-1#١` is no gate at all, never an alias of `r-1#1`.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import re
import warnings
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from jeeves.errors import UserError
from jeeves.events import ApprovalDecided, ApprovalRequested

__all__ = [
    "decided_event",
    "requested_event",
    "APPROVAL_MODES",
    "Allow",
    "BadGateId",
    "ApprovalMode",
    "Approvals",
    "Approver",
    "Decision",
    "GateAction",
    "PendingGate",
    "PolicyMismatch",
    "arguments_hash",
    "enforced_policy",
    "gate_hash",
    "gate_id",
    "parse_gate_id",
]

ApprovalMode = Literal["read_only", "local_write", "network", "delegated", "destructive"]
"""How much a tool can change the world, least first: reads only; writes local state; talks to
other systems; hands work to another agent; cannot be undone (a payment, a deletion)."""
APPROVAL_MODES: tuple[ApprovalMode, ...] = ("read_only", "local_write", "network", "delegated", "destructive")

DEFAULT_MODE: ApprovalMode = "local_write"
"""The mode of a tool that does not say (plan checks read it the same way)."""

GateAction = Literal["run", "ask", "refuse"]


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def arguments_hash(arguments: Mapping[str, Any]) -> str:
    """SHA-256 of the arguments' canonical JSON (sorted keys, no spaces): what a decision approves."""
    return hashlib.sha256(canonical_json(dict(arguments)).encode()).hexdigest()


def gate_hash(gate: str, tool: str, arguments: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON of the gate id, the tool name and the arguments: what a
    decision approves (`PendingGate.arguments_hash`). A decision made for one gate therefore
    approves no other gate, even one calling the same tool with the same arguments."""
    bound = {"gate_id": gate, "tool": tool, "arguments": dict(arguments)}
    return hashlib.sha256(canonical_json(bound).encode()).hexdigest()


def gate_id(session_id: str, step: int) -> str:
    """A gate's id: its session and step (`t-881__refunds_0#3`), unique in a journal."""
    return f"{session_id}#{step}"


class BadGateId(UserError):
    """A text that is not a gate id (`SESSION#STEP`, STEP in ASCII digits, no leading zeros)."""


_GATE_ID = re.compile(r"(?P<session>[^#]+)#(?P<step>0|[1-9][0-9]{0,17})", re.ASCII)


def parse_gate_id(text: object) -> tuple[str, int]:
    """The session and step of gate id `text` (`t-881__refunds_0#3` → `("t-881__refunds_0", 3)`).

    Strict: the step is ASCII digits with no leading zero (`#01`, `#١`, `#¹`, `#+1` are not
    gate ids), so one gate has exactly one id.

    Raises:
        BadGateId: `text` is not a gate id.
    """
    found = _GATE_ID.fullmatch(text) if isinstance(text, str) else None
    if found is None:
        raise BadGateId(
            f"{text!r} is not a gate id; gate ids look like 'SESSION#STEP' with STEP in plain digits "
            f"and no leading zero, e.g. 't-881#3' (`jeeves runs` and GET /runs/{{id}}/gates list them)."
        )
    return found["session"], int(found["step"])


def _check_mode(value: object, what: str) -> ApprovalMode:
    if value not in APPROVAL_MODES:
        raise UserError(f"{what} {value!r} is not an approval mode; use one of {', '.join(APPROVAL_MODES)}.")
    return value


class Allow(BaseModel):
    """A standing rule: calls of `tool` run without a gate when every argument named in
    `where` matches its glob (`fnmatch`, case-sensitive; a non-string argument is matched as
    its JSON). `Allow("send_email", where={"to": "*@ourco.com"})`."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    tool: str
    where: dict[str, str] = Field(default_factory=dict)

    def __init__(self, tool: str, where: Mapping[str, str] | None = None, **data: Any) -> None:
        super().__init__(tool=tool, where=dict(where or {}), **data)

    @field_validator("tool")
    @classmethod
    def _tool(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("Allow needs a tool name, e.g. Allow('send_email')")
        return value

    def matches(self, tool: str, arguments: Mapping[str, Any]) -> bool:
        if tool != self.tool:
            return False
        for name, pattern in self.where.items():
            if name not in arguments:
                return False
            value = arguments[name]
            text = value if isinstance(value, str) else canonical_json(value)
            if not fnmatch.fnmatchcase(text, pattern):
                return False
        return True


class Approvals(BaseModel):
    """A run's approval policy (pass it as `jeeves.run(..., approvals=...)`).

    Args:
        auto: Modes that run inline, without a gate.
        ask: Modes that need approval. Default: every mode not in `auto` and not refused.
        refuse_above: The run's safety mode: a call of a higher mode is refused outright
            (a typed refusal the model reads; never executed). Default: nothing refused.
        rules: Standing `Allow` rules: a matching call runs inline (not above the safety mode).
        deny_ends_run: A denial ends the run (status `rejected`) instead of being a tool
            result the model reads and can work around.
        gate_ttl_s: How long a gate waits for its decision (live or from outside); an
            undecided gate past it is decided `expire` and the run ends `expired`. None: no limit.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    auto: tuple[ApprovalMode, ...] = ("read_only", "local_write")
    ask: tuple[ApprovalMode, ...] | None = None
    refuse_above: ApprovalMode = "destructive"
    rules: tuple[Allow, ...] = ()
    deny_ends_run: bool = False
    gate_ttl_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:  # a mistake in code: one UserError, as every jeeves check
            first = exc.errors(include_url=False, include_input=False)[0]
            where = ".".join(str(p) for p in first["loc"])
            message = str(first["msg"]).removeprefix("Value error, ")
            raise UserError(f"{message}" if not where else f"Approvals {where}: {message}") from None

    @model_validator(mode="before")
    @classmethod
    def _modes(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        for key in ("auto", "ask"):
            value = data.get(key)
            if isinstance(value, str):
                raise UserError(
                    f"Approvals {key}={value!r} is one mode, not a list of modes; write {key}=({value!r},)."
                )
            if value is not None:
                data[key] = tuple(_check_mode(m, f"Approvals {key} entry") for m in value)
        if "refuse_above" in data:
            _check_mode(data["refuse_above"], "Approvals refuse_above")
        rules = data.get("rules")
        if rules is not None and not isinstance(rules, Sequence):
            raise UserError(f"Approvals rules={rules!r} must be a list of Allow(...) rules.")
        return data

    def action(self, tool: str, mode: ApprovalMode | None, arguments: Mapping[str, Any]) -> GateAction:
        """What this policy does with one call of `tool` (mode None reads as `local_write`)."""
        level = APPROVAL_MODES.index(mode or DEFAULT_MODE)
        if level > APPROVAL_MODES.index(self.refuse_above):
            return "refuse"
        if any(rule.matches(tool, arguments) for rule in self.rules):
            return "run"
        if (mode or DEFAULT_MODE) in self.auto:
            return "run"
        if self.ask is not None and (mode or DEFAULT_MODE) not in self.ask:
            return "run"
        return "ask"

    def refusal(self, tool: str, mode: ApprovalMode | None) -> str:
        """The text the model reads for a refused call."""
        return (
            f"Refused: tool {tool!r} is {mode or DEFAULT_MODE}, above this run's safety mode "
            f"({self.refuse_above}); it was not run. Do without it or ask the user."
        )


class PendingGate(BaseModel):
    """A gate waiting for its decision: what an approver is shown."""

    model_config = ConfigDict(defer_build=True)

    session_id: str
    step: int
    gate_id: str
    """`{session_id}#{step}`."""
    tool: str
    tool_call_id: str = ""
    arguments: dict[str, Any] = Field(default_factory=dict)
    mode: ApprovalMode = DEFAULT_MODE
    arguments_hash: str
    requested_at: float = 0.0
    """Wall-clock seconds when the gate was first recorded."""
    expires_at: float | None = None
    """Wall-clock seconds after which the gate is decided `expire`; None: never."""


class Decision(BaseModel):
    """A gate's decision, stored in the journal as the gate step's result."""

    model_config = ConfigDict(defer_build=True)

    decision: Literal["approve", "deny", "expire"]
    by: str = ""
    """Who decided (a person, `approver`, or `jeeves` for an expiry)."""
    at: float = 0.0
    """Wall-clock seconds of the decision (set when recorded if left 0)."""
    note: str | None = None
    arguments_hash: str = ""
    """The hash of the arguments approved; must equal the gate's (see `arguments_hash`)."""

    @classmethod
    def approve(cls, gate: PendingGate, *, by: str, note: str | None = None) -> Decision:
        """Approve exactly the arguments `gate` shows."""
        return cls(decision="approve", by=by, note=note, arguments_hash=gate.arguments_hash)

    @classmethod
    def deny(cls, gate: PendingGate, *, by: str, note: str | None = None) -> Decision:
        return cls(decision="deny", by=by, note=note, arguments_hash=gate.arguments_hash)


Approver = Callable[[PendingGate], Awaitable[Decision]]
"""A live approver: shown each gate as it is reached, returns its decision."""


class PolicyMismatch(UserWarning):
    """A resumed run enforces another approval policy than the one its journal records."""


def enforced_policy(
    given: Approvals | None, recorded: Mapping[str, Any] | None, run: str
) -> Approvals | None:
    """The policy a resumed (or restarted) run `run` enforces: the one its code gives, never
    the journal's copy (`recorded`), which anyone who can write the journal could have
    loosened. The copy is compared, for diagnostics only:

    - code gives a policy: it is enforced; a differing copy is a `PolicyMismatch` warning;
    - code gives none but the journal records one: `UserError` (the run was gated, and
      going on ungated, or under an edited copy, could run a destructive tool unasked);
    - neither: no policy, nothing is gated.
    """
    if given is None:
        if recorded is None:
            return None
        raise UserError(
            f"Run {run!r} was recorded under an approval policy ({canonical_json(recorded)}), but none is "
            f"given to resume it; a resume enforces only a policy given in code, never the journal's copy. "
            f"Pass it: jeeves.resume(..., approvals=Approvals(...)), or `jeeves resume ... --approvals "
            f"MODULE:ATTR` (or --spec FILE.toml, whose [approvals] it is)."
        )
    if recorded is not None and given.model_dump(mode="json") != dict(recorded):
        warnings.warn(
            PolicyMismatch(
                f"Run {run!r} is resumed under the approval policy its code gives "
                f"({canonical_json(given.model_dump(mode='json'))}), not the one its journal records "
                f"({canonical_json(recorded)}); the code's is enforced."
            ),
            stacklevel=2,
        )
    return given


def requested_event(gate: PendingGate) -> ApprovalRequested:
    """The `approval.requested` event of `gate`."""
    return ApprovalRequested(
        session_id=gate.session_id,
        step=gate.step,
        gate_id=gate.gate_id,
        tool=gate.tool,
        tool_call_id=gate.tool_call_id,
        arguments=gate.arguments,
        mode=gate.mode,
        arguments_hash=gate.arguments_hash,
        requested_at=gate.requested_at,
        expires_at=gate.expires_at,
    )


def decided_event(gate: PendingGate, decision: Decision) -> ApprovalDecided:
    """The `approval.decided` event of `gate` decided as `decision`."""
    return ApprovalDecided(
        session_id=gate.session_id,
        step=gate.step,
        gate_id=gate.gate_id,
        decision=decision.decision,
        by=decision.by,
        at=decision.at,
        note=decision.note,
        arguments_hash=decision.arguments_hash,
    )
