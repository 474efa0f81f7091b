"""The event stream: one pydantic class per event type, a union discriminated on `type`.

Every event carries `session_id` (which session emitted it), `seq` (strictly increasing
across the whole run, children included, in the order events entered the stream), `ts`
(wall-clock seconds, for display only) and `replayed` (true when the step behind it was
served from a journal). An architecture builds an event with its own fields and hands it
to `ctx.emit`, which stamps `seq` and `ts`.

Serialise with `event_to_json` / `event_from_json` (one `TypeAdapter` for the union).
A UI rebuilds the session tree from `session.started` alone: it names the parent, the
role, the architecture and the resolved model.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from jeeves.findings import Finding
from jeeves.messages import ToolCall, Usage

__all__ = [
    "ApprovalDecided",
    "ApprovalRequested",
    "AuditStats",
    "BudgetExceededEvent",
    "BudgetSliced",
    "CandidateSelected",
    "BudgetUnpriced",
    "CriticFailed",
    "Critique",
    "DelegationCompleted",
    "DelegationRejected",
    "DelegationStarted",
    "Event",
    "ModelCompleted",
    "ModelDelta",
    "ModelRetrying",
    "OutputRetrying",
    "PlanDecided",
    "PlanVerified",
    "Progress",
    "Refinement",
    "RoundStarted",
    "SessionCompleted",
    "SessionFailed",
    "SessionStarted",
    "SteeringInjected",
    "ToolCompleted",
    "ToolStarted",
    "WatchdogVerdictEvent",
    "event_from_json",
    "event_to_json",
]


class BaseEvent(BaseModel):
    """Fields every event has."""

    model_config = ConfigDict(defer_build=True)

    session_id: str
    """The session that emitted the event."""
    seq: int = 0
    """Position in the run's stream: strictly increasing, stamped by `ctx.emit`."""
    ts: float = 0.0
    """Wall-clock time (Unix seconds) when it was emitted; for display, never for ordering."""
    replayed: bool = False
    """True when the step behind this event was served from a journal instead of run live."""


class SessionStarted(BaseEvent):
    """A session (the root, or a child run through `ctx.run`) began."""

    type: Literal["session.started"] = "session.started"
    parent_id: str | None = None
    """The parent session's id; None for the root."""
    role: str
    """The role this session plays for its parent (the root's role is the architecture's)."""
    role_path: list[str] = Field(default_factory=list)
    """Roles from the root down to this session, as routing sees them."""
    architecture: str
    """The architecture's name: `agent`, `actor_critic`, `self_refine`, `supervisor`…"""
    model: str | None = None
    """The model this session's calls route to, when it calls a model itself."""
    index: int = 0
    """The child index the parent passed (the round, or the worker's delegation count)."""
    task: str = ""
    """The task text the session was given."""


class SessionCompleted(BaseEvent):
    """A session returned its output."""

    type: Literal["session.completed"] = "session.completed"
    output: str
    """The output as text."""
    stop_reason: str = "completed"
    usage: Usage = Field(default_factory=Usage)
    """Usage of this session and everything below it."""


class SessionFailed(BaseEvent):
    """A session raised. Its parent decides what happens next."""

    type: Literal["session.failed"] = "session.failed"
    error_type: str
    message: str
    usage: Usage = Field(default_factory=Usage)


class ModelDelta(BaseEvent):
    """A piece of streamed model text."""

    type: Literal["model.delta"] = "model.delta"
    text: str
    step: int = 0
    """The journal step index of the call streaming it (the `step` of its `model.completed`)."""


class ModelCompleted(BaseEvent):
    """A model call finished."""

    type: Literal["model.completed"] = "model.completed"
    text: str
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    """Tokens and USD of this call (`cost_usd` None when the model has no known price)."""
    model: str
    """The model that answered."""
    fallback: bool = False
    """True when a fallback model answered instead of the route's primary."""
    step: int = 0
    """The journal step index of this call within its session."""


class ModelRetrying(BaseEvent):
    """A model call failed with a retryable error and is being tried again, or on a fallback."""

    type: Literal["model.retrying"] = "model.retrying"
    model: str
    """The model that failed."""
    next_model: str
    """The model tried next (the same one for a retry, the fallback's otherwise)."""
    attempt: int
    error_type: str
    message: str
    delay_s: float = 0.0


class ToolStarted(BaseEvent):
    """A tool call is about to run."""

    type: Literal["tool.started"] = "tool.started"
    tool_call_id: str
    name: str
    arguments: str


class ToolCompleted(BaseEvent):
    """A tool call finished; `is_error` results go back to the model as errors to read."""

    type: Literal["tool.completed"] = "tool.completed"
    tool_call_id: str
    name: str
    result: str
    is_error: bool = False


class OutputRetrying(BaseEvent):
    """The reply did not fit the output type; the model gets one repair turn."""

    type: Literal["output.retrying"] = "output.retrying"
    error: str


class BudgetExceededEvent(BaseEvent):
    """The shared budget ran out (the run stops and keeps its best output), or a session's
    slice of it did (`slice_id`: that session's step stops, the run goes on). Once per budget."""

    type: Literal["budget.exceeded"] = "budget.exceeded"
    limit: Literal["tokens", "usd", "model_calls", "deadline"]
    allowed: float
    spent: float
    slice_id: str | None = None
    """The session whose budget slice ran out; None: the run's own budget."""


class BudgetSliced(BaseEvent):
    """A session starts under its own slice of the run's budget (`Context.run(..., budget=)`).

    Each limit is the one asked for, held to what remained of every budget above it when the
    session started (None: no limit of the slice's own on that axis; the run's still holds).
    """

    type: Literal["budget.sliced"] = "budget.sliced"
    max_tokens: int | None = None
    max_usd: float | None = None
    max_model_calls: int | None = None
    deadline_s: float | None = None
    clamped: list[str] = Field(default_factory=list)
    """The axes on which less remained than was asked for (`tokens`, `usd`, ...)."""


class BudgetUnpriced(BaseEvent):
    """A model call litellm has no price for was made under a USD limit: its cost is unknown,
    so `max_usd` cannot count it (it is not counted as $0 either: the run's usage says
    `unpriced`). Once per run, at the first such call; the tokens and call limits still hold."""

    type: Literal["budget.unpriced"] = "budget.unpriced"
    model: str
    """The model of the first unpriced call."""
    max_usd: float
    """The USD limit those calls escape."""


class RoundStarted(BaseEvent):
    """A critic loop began a round (0 is the first draft, N the N-th refinement)."""

    type: Literal["round.started"] = "round.started"
    round: int


class AuditStats(BaseModel):
    """What a grounded audit measured (GroundedAuditCritic), on its verdict and critique event."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    invalid_citations: int
    """Sentences citing an `[id]` the evidence does not hold."""
    uncited_claims: int
    """Sentences citing nothing (hedged ones exempt)."""
    duration_ms: float
    """How long the audit took live (model call and fusion). Journaled as a step, so a replay
    reports the recorded duration, not its own."""
    confidence: float | None = None
    """The fused confidence (the audit's, normalised, times the citation penalties)."""
    hallucination_detected: bool = False
    """The model said so, or the answer cites evidence that was not given."""
    unsupported_claims: list[str] = Field(default_factory=list)
    logical_gaps: list[str] = Field(default_factory=list)
    conflicting_evidence: list[str] = Field(default_factory=list)
    needs_retry: bool = False
    """The structured critique's retry signal (forced by an invalid citation)."""

    @property
    def conflicts(self) -> int:
        """How many pieces of conflicting evidence the audit found (the seed's telemetry)."""
        return len(self.conflicting_evidence)


class Critique(BaseEvent):
    """A critic's verdict on one round's candidate."""

    type: Literal["critique"] = "critique"
    round: int
    score: float
    passed: bool
    """Approved: score at or above the threshold and no hard fail."""
    hard_fail: bool = False
    issues: list[str] = Field(default_factory=list)
    summary: str = ""
    obtained: str = "schema"
    """How the verdict was obtained: schema, repaired, fallback, or function (code critics)."""
    source: str = ""
    """Which critic (or critics, comma-separated) gave it."""
    findings: list[Finding] = Field(default_factory=list)
    """The verdict's structured findings (rule id, path, severity, fix), when it has any."""
    audit: AuditStats | None = None
    """A grounded audit's telemetry, when the verdict is one."""
    threshold: float | None = None
    """The score the loop approves at (None when the emitter did not say), so a UI can show
    the score against it."""
    evidence: str = "unknown"
    """What the verdict rests on: task_tests, model_tests, judge, citations, function, combined."""


class Refinement(BaseEvent):
    """The actor is asked to revise, given the critique of `based_on_round`."""

    type: Literal["refinement"] = "refinement"
    round: int
    based_on_round: int


class CriticFailed(BaseEvent):
    """A critic raised; with `action="keep_draft"` the best draft so far is returned."""

    type: Literal["critic.failed"] = "critic.failed"
    round: int
    error_type: str
    message: str
    action: Literal["keep_draft", "raise"]


class DelegationStarted(BaseEvent):
    """A Supervisor handed work to a worker."""

    type: Literal["delegation.started"] = "delegation.started"
    worker: str
    child_session_id: str
    instructions: str
    tool_call_id: str = ""


class DelegationCompleted(BaseEvent):
    """A worker finished (or failed) a delegation."""

    type: Literal["delegation.completed"] = "delegation.completed"
    worker: str
    child_session_id: str
    output: str = ""
    is_error: bool = False
    usage: Usage = Field(default_factory=Usage)
    tool_call_id: str = ""


class DelegationRejected(BaseEvent):
    """A delegation was refused (unknown worker, too many delegations); the model is told why."""

    type: Literal["delegation.rejected"] = "delegation.rejected"
    worker: str
    reason: str
    tool_call_id: str = ""


class WatchdogVerdictEvent(BaseEvent):
    """A watchdog judged the trajectory of the agent it watches (a model review or a loop signal)."""

    type: Literal["watchdog.verdict"] = "watchdog.verdict"
    firing: int
    """1 for the watchdog's first verdict in this session, then 2, 3, …"""
    verdict: Literal["PROGRESSING", "STUCK", "ACHIEVED", "MISLED"]
    reason: str
    """One sentence: why."""
    source: Literal["model", "signal"]
    """`model`: the watchdog session `{id}__watchdog_{k}` answered; `signal`: a deterministic
    loop signal (the same call repeated, the same failure repeated), no model call."""
    obtained: Literal["schema", "repaired", "fallback", "error", "signal"] = "schema"
    """How the verdict was read; `fallback` (unreadable) and `error` (the watchdog failed)
    count as PROGRESSING and never interrupt the agent."""
    step: int = 0
    """Tool calls the agent had made when the verdict was given."""
    window: list[str] = Field(default_factory=list)
    """The steps shown to the watchdog (or that raised the signal), one line each."""


class SteeringInjected(BaseEvent):
    """A message was added to a running agent's conversation between two of its turns."""

    type: Literal["steering.injected"] = "steering.injected"
    target_session_id: str
    """The agent session whose conversation got the message."""
    cause: str
    """Why: `stuck`, `misled`, `verification_failed`, `human`, or another steering source's name."""
    message: str
    source: str = "goal"
    """Who steered: `goal` (its watchdog or success check), `human` (`RunStream.inject`,
    `POST /runs/{id}/messages`), or another wrapper's name."""


class PlanVerified(BaseEvent):
    """The plan critic checked a plan before anything ran: ok, or a typed refusal."""

    type: Literal["plan.verified"] = "plan.verified"
    attempt: int
    """The attempt (`{id}__plan_{attempt}`) whose plan was checked."""
    plan_id: str
    ok: bool
    kind: str | None = None
    """The refusal kind: violates_decision_spec, approval_mode_mismatch, missing_evidence,
    unresolved_evidence, loop_guard, budget_exceeded."""
    reasons: list[str] = Field(default_factory=list)
    """A refusal's reasons, or what a passing verify covered ("2 steps, 2 required outputs covered")."""
    offending_step: int | None = None
    """The offending step's index in the plan."""
    offending_step_id: str | None = None
    """The offending step's id."""


class PlanDecided(BaseEvent):
    """After verify or after score, the plan critic decided what happens next."""

    type: Literal["plan.decided"] = "plan.decided"
    attempt: int
    phase: Literal["verify", "execute", "score"]
    decision: Literal["accept", "retry", "replan", "escalate"]
    status: str
    """The report's status: completed, refused_by_critic or partial."""
    rationale: str


class ApprovalRequested(BaseEvent):
    """A tool call reached an approval gate (a journaled step of its session); see `jeeves.approvals.decide`."""

    type: Literal["approval.requested"] = "approval.requested"
    step: int
    """The gate's step index in its session."""
    gate_id: str
    """`{session_id}#{step}`: how an approver names the gate."""
    tool: str
    tool_call_id: str = ""
    arguments: dict[str, Any] = Field(default_factory=dict)
    mode: str
    """The tool's approval mode (read_only … destructive)."""
    arguments_hash: str
    """SHA-256 of the arguments' canonical JSON: a decision approves exactly these."""
    requested_at: float = 0.0
    expires_at: float | None = None
    """Wall-clock seconds after which the gate expires; None: never."""


class ApprovalDecided(BaseEvent):
    """A gate was decided: approve, deny or expire; by whom, when, with what note."""

    type: Literal["approval.decided"] = "approval.decided"
    step: int
    gate_id: str
    decision: Literal["approve", "deny", "expire"]
    by: str = ""
    at: float = 0.0
    note: str | None = None
    arguments_hash: str = ""


class CandidateSelected(BaseEvent):
    """BestOfN chose a candidate (or found none that produced an answer)."""

    type: Literal["candidate.selected"] = "candidate.selected"
    candidate: int | None
    """The chosen candidate's index k (session `{id}__candidate_{k}`); None when none answered."""
    child_session_id: str | None = None
    passed: bool = False
    """The chosen candidate passed every critic stage."""
    score: float | None = None
    """The chosen candidate's last verdict score."""
    cancelled: list[int] = Field(default_factory=list)
    """Candidates cancelled when another passed (early stop)."""
    not_started: list[int] = Field(default_factory=list)
    """Candidates never started (sequential or batched runs that stopped early)."""


class Progress(BaseEvent):
    """Where a live run is, after a completed step (throttled; never part of a replay)."""

    type: Literal["progress"] = "progress"
    step: int
    """The step just completed, in `session_id`."""
    completed_steps: int
    """Steps the whole run has completed, across resumes (those an earlier attempt recorded
    and this one was served count too)."""
    tokens_left: int | None = None
    model_calls_left: int | None = None
    usd_left: float | None = None
    seconds_left: float | None = None
    """Budget remaining on each axis the run's Budget limits (None: unlimited)."""
    gate: str | None = None
    """The id of a gate the run is waiting on, if any."""
    total_steps: int | None = None
    """The verified plan's step count, where the run executes one (PlanExecute); None when no
    plan knows a total."""
    plan_steps_completed: int | None = None
    """How many of the verified plan's steps have completed (with `total_steps`)."""
    current_step: str | None = None
    """The plan step last started (its id), with `total_steps`."""


Event = Annotated[
    SessionStarted
    | SessionCompleted
    | SessionFailed
    | ModelDelta
    | ModelCompleted
    | ModelRetrying
    | ToolStarted
    | ToolCompleted
    | OutputRetrying
    | BudgetExceededEvent
    | BudgetSliced
    | BudgetUnpriced
    | RoundStarted
    | Critique
    | Refinement
    | CriticFailed
    | DelegationStarted
    | DelegationCompleted
    | DelegationRejected
    | WatchdogVerdictEvent
    | SteeringInjected
    | PlanVerified
    | PlanDecided
    | ApprovalRequested
    | ApprovalDecided
    | Progress
    | CandidateSelected,
    Field(discriminator="type"),
]
"""Any jeeves event; `event.type` tells which."""

EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event, config=ConfigDict(defer_build=True))


def event_to_json(event: Event) -> str:
    """One event as a JSON object (text)."""
    return event.model_dump_json()


def event_from_json(data: str | bytes) -> Event:
    """Parse one JSON event back into its class; raises pydantic.ValidationError when malformed."""
    return EVENT_ADAPTER.validate_json(data)
