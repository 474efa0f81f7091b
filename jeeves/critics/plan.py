"""The plan critic's three phases as pure functions: verify a plan, score a result, consolidate.

A planner emits a typed `Plan`. Before anything runs, `verify(plan, spec, surface)` checks it
against the `DecisionSpec` and the tools and workers it may use, and either passes it or
refuses it with a typed reason naming the offending step:

| kind | when |
|---|---|
| `violates_decision_spec` | a required output is not declared; a step names a tool or worker outside the surface, names both or neither, repeats an id, or depends on an unknown step |
| `loop_guard` | more steps than `max_steps`; a dependency cycle |
| `approval_mode_mismatch` | a step's approval mode is above the run's safety mode |
| `missing_evidence` | a step requires an evidence class and pins nothing for it |
| `budget_exceeded` | the steps' estimated tokens add up to more than `max_plan_tokens` |

The checks run in that order and the first kind that finds a problem is the refusal (with
every reason of that kind); user checks run last. After execution, `score(...)` turns the
evaluators' verdicts into a scorecard in which a hard-fail evaluator forces `ok=False`
whatever the others say, and `consolidate(...)` builds the `CriticReport` with a one-line
rationale. `decide(...)` says what to do next: accept, retry, replan or escalate.

All of them are pure functions of their arguments: no clock (`decided_at` is passed in, read
from the journal), no random, no I/O. So a recorded run's verdicts can be derived again,
offline, with another version of the critic.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

from jeeves.critics.verdict import Verdict
from jeeves.tools import APPROVAL_MODES, ApprovalMode

__all__ = [
    "APPROVAL_MODES",
    "ApprovalMode",
    "CriticReport",
    "Decision",
    "DecisionSpec",
    "Evaluation",
    "Plan",
    "PlanCheck",
    "PlanStep",
    "RefusalKind",
    "ScoreItem",
    "ScoreVerdict",
    "VerifyVerdict",
    "consolidate",
    "decide",
    "score",
    "verify",
]

RefusalKind = Literal[
    "violates_decision_spec", "loop_guard", "approval_mode_mismatch", "missing_evidence", "budget_exceeded"
]

_FROZEN = ConfigDict(defer_build=True, frozen=True, extra="forbid")


class PlanStep(BaseModel):
    """One step of a plan: a tool call or a worker's task."""

    model_config = _FROZEN

    id: str
    """Unique within the plan; `depends_on` names these."""
    tool: str | None = None
    """The tool this step calls (exactly one of `tool` and `worker`)."""
    worker: str | None = None
    """The worker architecture this step delegates to."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """The tool's arguments, or `{"task": ...}` for a worker."""
    depends_on: list[str] = Field(default_factory=list)
    evidence_required: list[str] = Field(default_factory=list)
    """Evidence classes this step needs before it may run (`order_record`, `policy`…)."""
    evidence: dict[str, list[str]] = Field(default_factory=dict)
    """Pinned evidence refs per class (`{"order_record": ["order:881"]}`)."""
    estimated_tokens: int = Field(default=0, ge=0)
    outputs: list[str] = Field(default_factory=list)
    """The decision outputs this step produces (`refund_amount`…)."""


class Plan(BaseModel):
    """What a planner proposes: steps in a dependency graph and the outputs they declare."""

    model_config = _FROZEN

    plan_id: str
    intent: str
    """One sentence: what the plan achieves."""
    steps: list[PlanStep]
    outputs: list[str] = Field(default_factory=list)
    """The decision outputs the plan declares it will produce."""
    checkpoints: list[str] = Field(default_factory=list)
    """Step ids after which the run stops to decide (accept, retry, replan, escalate)."""


class DecisionSpec(BaseModel):
    """What a plan must satisfy."""

    model_config = _FROZEN

    required_outputs: list[str] = Field(default_factory=list)
    max_steps: int = Field(default=12, ge=1)
    max_plan_tokens: int | None = Field(default=None, ge=0)
    safety_mode: ApprovalMode = "destructive"
    """The highest approval mode a step may have."""


class VerifyVerdict(BaseModel):
    """`ok`, or a typed refusal: its kind, every reason of that kind, the first offending step."""

    model_config = _FROZEN

    ok: bool
    kind: RefusalKind | None = None
    reasons: list[str] = Field(default_factory=list)
    offending_step: str | None = None

    @classmethod
    def refuse(cls, kind: RefusalKind, reasons: Sequence[str], step: str | None) -> VerifyVerdict:
        return cls(ok=False, kind=kind, reasons=list(reasons), offending_step=step)


OK = VerifyVerdict(ok=True)

PlanCheck: TypeAlias = Callable[[Plan, DecisionSpec], VerifyVerdict | None]
"""A user check: None (or an ok verdict) passes; a refusal refuses."""


def _problems(plan: Plan, spec: DecisionSpec, surface: Mapping[str, ApprovalMode]) -> Iterable[VerifyVerdict]:
    """Every check in the documented order, each yielding its refusal if it finds one."""
    yield _spec_violations(plan, spec, surface)
    yield _loop_guard(plan, spec)
    yield _modes(plan, spec, surface)
    yield _evidence(plan)
    yield _budget(plan, spec)


def verify(
    plan: Plan,
    spec: DecisionSpec,
    surface: Mapping[str, ApprovalMode],
    checks: Sequence[PlanCheck] = (),
) -> VerifyVerdict:
    """Check `plan` before anything runs. `surface` maps each usable tool and worker to its mode."""
    for verdict in _problems(plan, spec, surface):
        if not verdict.ok:
            return verdict
    for check in checks:
        verdict_or_none = check(plan, spec)
        if verdict_or_none is not None and not verdict_or_none.ok:
            return verdict_or_none
    return OK


def _spec_violations(plan: Plan, spec: DecisionSpec, surface: Mapping[str, ApprovalMode]) -> VerifyVerdict:
    reasons: list[str] = []
    first: str | None = None

    def problem(step: str | None, reason: str) -> None:
        nonlocal first
        reasons.append(reason)
        first = first or step

    for output in spec.required_outputs:
        if output not in plan.outputs:
            problem(None, f"the required output {output!r} is not declared by the plan")
    ids = [s.id for s in plan.steps]
    for step in plan.steps:
        if ids.count(step.id) > 1:
            problem(step.id, f"step id {step.id!r} is used {ids.count(step.id)} times")
        target = step.tool or step.worker
        if (step.tool is None) == (step.worker is None):
            problem(step.id, f"step {step.id!r} must name exactly one tool or worker")
        elif target not in surface:
            known = ", ".join(sorted(surface)) or "none"
            problem(step.id, f"step {step.id!r} uses {target!r}, which is not on the tool surface ({known})")
        for dep in step.depends_on:
            if dep not in ids:
                problem(step.id, f"step {step.id!r} depends on unknown step {dep!r}")
    for checkpoint in plan.checkpoints:
        if checkpoint not in ids:
            problem(None, f"checkpoint {checkpoint!r} is not a step of the plan")
    return VerifyVerdict.refuse("violates_decision_spec", reasons, first) if reasons else OK


def _loop_guard(plan: Plan, spec: DecisionSpec) -> VerifyVerdict:
    if len(plan.steps) > spec.max_steps:
        extra = plan.steps[spec.max_steps].id
        reason = f"the plan has {len(plan.steps)} steps, more than max_steps={spec.max_steps}"
        return VerifyVerdict.refuse("loop_guard", [reason], extra)
    cycle = _cycle(plan)
    if cycle:
        path = " → ".join([*cycle, cycle[0]])
        return VerifyVerdict.refuse(
            "loop_guard", [f"the steps depend on each other in a cycle: {path}"], cycle[0]
        )
    return OK


def _cycle(plan: Plan) -> list[str]:
    """One dependency cycle (step ids in order), or [] when the graph is acyclic."""
    deps = {s.id: [d for d in s.depends_on] for s in plan.steps}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        stack.append(node)
        for dep in deps.get(node, []):
            if state.get(dep) == 1:
                return stack[stack.index(dep) :]
            if dep in deps and dep not in state and (found := visit(dep)):
                return found
        stack.pop()
        state[node] = 2
        return []

    for step in plan.steps:
        if step.id not in state and (found := visit(step.id)):
            return found
    return []


def _modes(plan: Plan, spec: DecisionSpec, surface: Mapping[str, ApprovalMode]) -> VerifyVerdict:
    allowed = APPROVAL_MODES.index(spec.safety_mode)
    reasons, first = [], None
    for step in plan.steps:
        mode = surface.get(step.tool or step.worker or "")
        if mode is not None and APPROVAL_MODES.index(mode) > allowed:
            reasons.append(
                f"step {step.id!r} uses {step.tool or step.worker!r} ({mode}), above the run's safety mode "
                f"{spec.safety_mode!r}"
            )
            first = first or step.id
    return VerifyVerdict.refuse("approval_mode_mismatch", reasons, first) if reasons else OK


def _evidence(plan: Plan) -> VerifyVerdict:
    reasons, first = [], None
    for step in plan.steps:
        for kind in step.evidence_required:
            if not step.evidence.get(kind):
                reasons.append(f"step {step.id!r} requires {kind!r} evidence and pins none")
                first = first or step.id
    return VerifyVerdict.refuse("missing_evidence", reasons, first) if reasons else OK


def _budget(plan: Plan, spec: DecisionSpec) -> VerifyVerdict:
    total = sum(s.estimated_tokens for s in plan.steps)
    if spec.max_plan_tokens is not None and total > spec.max_plan_tokens:
        biggest = max(plan.steps, key=lambda s: s.estimated_tokens)
        reason = f"the steps are estimated at {total:,} tokens, over max_plan_tokens={spec.max_plan_tokens:,}"
        return VerifyVerdict.refuse("budget_exceeded", [reason], biggest.id)
    return OK


# -- score -----------------------------------------------------------------------------------


class Evaluation(BaseModel):
    """One evaluator's verdict on the executed plan's result."""

    model_config = _FROZEN

    name: str
    verdict: Verdict
    hard: bool = False
    """A hard-fail evaluator (policy, safety): failing it fails the whole score."""


class ScoreItem(BaseModel):
    model_config = _FROZEN

    name: str
    score: float
    passed: bool
    hard: bool
    issues: list[str] = Field(default_factory=list)


class ScoreVerdict(BaseModel):
    """The scorecard: each evaluator's line, the combined score, and whether it is ok."""

    model_config = _FROZEN

    ok: bool
    score: float
    """The lowest evaluator score (the result is as good as its weakest check)."""
    threshold: float
    items: list[ScoreItem] = Field(default_factory=list)
    hard_failed: list[str] = Field(default_factory=list)
    """Hard-fail evaluators that failed: any one of them makes `ok` False."""


def score(evaluations: Sequence[Evaluation], threshold: float = 0.8) -> ScoreVerdict:
    """The scorecard of `evaluations`; ok only if every hard evaluator passed and the score is met."""
    items = [
        ScoreItem(
            name=e.name,
            score=e.verdict.score,
            passed=e.verdict.approves(threshold),
            hard=e.hard,
            issues=list(e.verdict.issues),
        )
        for e in evaluations
    ]
    hard_failed = [i.name for i in items if i.hard and (not i.passed)]
    combined = min((i.score for i in items), default=0.0)
    ok = bool(items) and not hard_failed and all(i.passed for i in items)
    return ScoreVerdict(ok=ok, score=combined, threshold=threshold, items=items, hard_failed=hard_failed)


# -- consolidate and decide --------------------------------------------------------------------


class CriticReport(BaseModel):
    """The plan critic's report on one decision: what verify and score said, and the outcome."""

    model_config = _FROZEN

    session_id: str
    decision_key: str
    """What was decided (the plan id and attempt, or the task's key)."""
    verify: VerifyVerdict
    score: ScoreVerdict | None = None
    """None when the plan was refused before execution."""
    status: Literal["completed", "refused_by_critic", "partial"]
    rationale: str
    """One line an on-call engineer can act on."""
    decided_at: str
    """When it was decided, as recorded in the journal (never read from a clock here)."""


def consolidate(
    session_id: str, decision_key: str, verify: VerifyVerdict, score: ScoreVerdict | None, decided_at: str
) -> CriticReport:
    """The report: refused_by_critic (verify refused), completed (score ok) or partial."""
    if not verify.ok:
        where = f" on step {verify.offending_step!r}" if verify.offending_step else ""
        reason = verify.reasons[0] if verify.reasons else "no reason given"
        status: Literal["completed", "refused_by_critic", "partial"] = "refused_by_critic"
        rationale = f"refused before execution: {verify.kind}{where}: {reason}"
    elif score is None:
        status, rationale = "partial", "verified but not executed: no score"
    elif score.ok:
        status = "completed"
        rationale = f"completed: {len(score.items)} evaluator(s) passed, score {score.score:.2f}"
    else:
        status, rationale = "partial", _partial(score)
    return CriticReport(
        session_id=session_id,
        decision_key=decision_key,
        verify=verify,
        score=score,
        status=status,
        rationale=_one_line(rationale),
        decided_at=decided_at,
    )


def _partial(score: ScoreVerdict) -> str:
    if score.hard_failed:
        item = next(i for i in score.items if i.name == score.hard_failed[0])
        issue = f": {item.issues[0]}" if item.issues else ""
        return f"partial: hard-fail evaluator {item.name!r} failed{issue}"
    worst = min(score.items, key=lambda i: i.score) if score.items else None
    if worst is None:
        return "partial: no evaluator judged the result"
    issue = f": {worst.issues[0]}" if worst.issues else ""
    return f"partial: {worst.name!r} scored {worst.score:.2f}, below {score.threshold:.2f}{issue}"


def _one_line(text: str, limit: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


Decision: TypeAlias = Literal["accept", "retry", "replan", "escalate"]


def decide(report: CriticReport, *, replans_left: int, retries_left: int) -> Decision:
    """What to do after a report: accept a completed result; replan a refused plan while the
    re-plan budget lasts; retry a partial result while the retry budget lasts (a hard fail is
    replanned instead: the same plan would fail the same way); otherwise escalate."""
    if report.status == "completed":
        return "accept"
    if report.status == "refused_by_critic":
        return "replan" if replans_left > 0 else "escalate"
    hard = bool(report.score and report.score.hard_failed)
    if not hard and retries_left > 0:
        return "retry"
    return "replan" if replans_left > 0 else "escalate"
