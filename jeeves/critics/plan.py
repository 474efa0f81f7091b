"""The plan critic's three phases as pure functions: verify a plan, score a result, consolidate.

A planner emits a typed `Plan`. Before anything runs, `verify(plan, spec, surface, ...)`
checks it against the `DecisionSpec`, the tools and workers it may use, the evidence each of
them requires and the run's evidence manifest, and either passes it (saying what it covered:
"2 steps, 2 required outputs covered") or refuses it with a typed reason naming the offending
step by its index and its id:

| kind | when |
|---|---|
| `violates_decision_spec` | a required output is not declared; a step names a tool or worker outside the surface, names both or neither, repeats an id, or depends on an unknown step |
| `approval_mode_mismatch` | a step's approval mode is above the run's safety mode |
| `missing_evidence` | a step requires an evidence class (its tool's, the spec's or its own) and pins nothing for it |
| `unresolved_evidence` | a step pins a reference that is not in the run's evidence manifest with that class |
| `loop_guard` | more steps than `max_steps` (12 unless configured); a dependency cycle |
| `budget_exceeded` | the steps' estimated tokens add up to more than `max_plan_tokens` (8000 unless configured) |

The checks run in that order (the seed's) and the first kind that finds a problem is the
refusal (with every reason of that kind); user checks run last. Evidence requirements belong
to the capabilities: what a tool declares (`@tool(requires_evidence=[...])`) or the spec says
(`DecisionSpec.requires_evidence`) is required whatever the plan says; a plan can add
requirements to its steps, never remove them. After execution, `score(...)` turns the
evaluators' verdicts into a scorecard in which a hard-fail evaluator forces `ok=False`
whatever the others say, and `consolidate(...)` builds the `CriticReport` with a one-line
rationale. `decide(...)` says what to do next: accept, retry, replan or escalate.

All of them are pure functions of their arguments: no clock (`decided_at` is passed in, read
from the journal), no random, no I/O (the evidence manifest is recorded in the run). So a
recorded run's verdicts can be derived again, offline, with another version of the critic.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, model_validator

from jeeves.agent.tools import APPROVAL_MODES, ApprovalMode
from jeeves.critics.verdict import Verdict

__all__ = [
    "APPROVAL_MODES",
    "ApprovalMode",
    "CriticReport",
    "Decision",
    "DecisionSpec",
    "Evaluation",
    "Evidence",
    "Plan",
    "PlanCheck",
    "PlanStep",
    "RefusalKind",
    "ScoreItem",
    "ScoreVerdict",
    "VerifyVerdict",
    "consolidate",
    "decide",
    "required_evidence",
    "score",
    "verify",
]

RefusalKind = Literal[
    "violates_decision_spec",
    "loop_guard",
    "approval_mode_mismatch",
    "missing_evidence",
    "unresolved_evidence",
    "budget_exceeded",
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
    """Evidence classes the planner adds to what the step's tool or worker requires (it cannot
    remove any: see `required_evidence`)."""
    evidence: dict[str, list[str]] = Field(default_factory=dict)
    """Pinned evidence references per class, each an id of the run's evidence manifest
    (`{"refund_window": ["kg:refund_window:rw_881#snapshot_kg_2026_05_09_T0930"]}`)."""
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


class Evidence(BaseModel):
    """One entry of a run's evidence manifest: a piece of evidence gathered (read-only) and
    recorded in the run, which a plan step may pin by its `id`."""

    model_config = _FROZEN

    id: str
    """The reference a plan pins (`kg:refund_window:rw_881#snapshot_kg_2026_05_09_T0930`)."""
    classification: str
    """Its evidence class (`refund_window`): a step requiring that class accepts it."""
    summary: str = ""
    """What it says, shown to the planner."""
    source: str = ""
    """What gathered it (a retriever's name)."""


class DecisionSpec(BaseModel):
    """What a plan must satisfy. The defaults are the seed's loop guard: 12 steps, 8000 tokens."""

    model_config = _FROZEN

    required_outputs: list[str] = Field(default_factory=list)
    max_steps: int = Field(default=12, ge=1)
    max_plan_tokens: int | None = Field(default=8000, ge=0)
    """The most the steps' estimated tokens may add up to (None: no limit)."""
    safety_mode: ApprovalMode = "destructive"
    """The highest approval mode a step may have."""
    requires_evidence: dict[str, list[str]] = Field(default_factory=dict)
    """Evidence classes by tool or worker name, required of every step that uses it (added to
    what the tool itself declares)."""


class VerifyVerdict(BaseModel):
    """`ok` with what it covered, or a typed refusal: its kind, every reason of that kind, and
    the first offending step by its index in the plan (`offending_step`, the seed's number)
    and its id (`offending_step_id`)."""

    model_config = _FROZEN

    ok: bool
    kind: RefusalKind | None = None
    reasons: list[str] = Field(default_factory=list)
    offending_step: int | None = None
    """The offending step's index in the plan (0-based)."""
    offending_step_id: str | None = None
    """The offending step's id."""

    @model_validator(mode="before")
    @classmethod
    def _step_id_of_older_records(cls, data: Any) -> Any:
        """Journals written before steps were named by index held the step's id in
        `offending_step`; they read with that id in `offending_step_id` and no index."""
        if isinstance(data, dict) and isinstance(data.get("offending_step"), str):
            return {**data, "offending_step": None, "offending_step_id": data["offending_step"]}
        return data

    @classmethod
    def refuse(
        cls, kind: RefusalKind, reasons: Sequence[str], step: int | None = None, step_id: str | None = None
    ) -> VerifyVerdict:
        return cls(ok=False, kind=kind, reasons=list(reasons), offending_step=step, offending_step_id=step_id)


OK = VerifyVerdict(ok=True)

PlanCheck: TypeAlias = Callable[[Plan, DecisionSpec], VerifyVerdict | None]
"""A user check: None (or an ok verdict) passes; a refusal refuses."""


class _Refusal:
    """Collects the reasons of one refusal kind and its first offending step."""

    def __init__(self, kind: RefusalKind) -> None:
        self.kind, self.reasons = kind, list[str]()
        self.first: tuple[int, str] | None = None

    def add(self, reason: str, at: tuple[int, str] | None = None) -> None:
        self.reasons.append(reason)
        if self.first is None and at is not None:
            self.first = at

    def verdict(self) -> VerifyVerdict:
        if not self.reasons:
            return OK
        index, step_id = self.first if self.first is not None else (None, None)
        return VerifyVerdict.refuse(self.kind, self.reasons, index, step_id)


def required_evidence(
    step: PlanStep, spec: DecisionSpec, requires: Mapping[str, Sequence[str]] | None = None
) -> list[str]:
    """The evidence classes `step` must pin: its tool's or worker's (`requires`), the spec's for
    it, then the ones the planner added; the plan can add, never remove."""
    target = step.tool or step.worker or ""
    classes = [
        *(requires or {}).get(target, ()),
        *spec.requires_evidence.get(target, ()),
        *step.evidence_required,
    ]
    return list(dict.fromkeys(classes))


def verify(
    plan: Plan,
    spec: DecisionSpec,
    surface: Mapping[str, ApprovalMode],
    checks: Sequence[PlanCheck] = (),
    *,
    requires: Mapping[str, Sequence[str]] | None = None,
    manifest: Sequence[Evidence] = (),
) -> VerifyVerdict:
    """Check `plan` before anything runs. `surface` maps each usable tool and worker to its mode,
    `requires` each to the evidence classes it requires, and `manifest` is the run's evidence."""
    for verdict in _problems(plan, spec, surface, requires or {}, manifest):
        if not verdict.ok:
            return verdict
    for check in checks:
        verdict_or_none = check(plan, spec)
        if verdict_or_none is not None and not verdict_or_none.ok:
            return verdict_or_none
    covered = f"{len(plan.steps)} steps, {len(spec.required_outputs)} required outputs covered"
    return VerifyVerdict(ok=True, reasons=[covered])


def _problems(
    plan: Plan,
    spec: DecisionSpec,
    surface: Mapping[str, ApprovalMode],
    requires: Mapping[str, Sequence[str]],
    manifest: Sequence[Evidence],
) -> Iterable[VerifyVerdict]:
    """Every check in the documented order, each yielding its refusal if it finds one."""
    yield _spec_violations(plan, spec, surface)
    yield _modes(plan, spec, surface)
    yield _missing_evidence(plan, spec, requires)
    yield _unresolved_evidence(plan, manifest)
    yield _loop_guard(plan, spec)
    yield _budget(plan, spec)


def _spec_violations(plan: Plan, spec: DecisionSpec, surface: Mapping[str, ApprovalMode]) -> VerifyVerdict:
    found = _Refusal("violates_decision_spec")
    for output in spec.required_outputs:
        if output not in plan.outputs:
            found.add(f"plan does not produce required output {output}")
    ids = [s.id for s in plan.steps]
    for i, step in enumerate(plan.steps):
        at = (i, step.id)
        if ids.count(step.id) > 1:
            found.add(f"step {i} id {step.id!r} is used {ids.count(step.id)} times", at)
        target = step.tool or step.worker
        if (step.tool is None) == (step.worker is None):
            found.add(f"step {i} ({step.id!r}) must name exactly one tool or worker", at)
        elif target not in surface:
            known = ", ".join(sorted(surface)) or "none"
            found.add(f"plan step {i} calls {target} which is not in the surface ({known})", at)
        for dep in step.depends_on:
            if dep not in ids:
                found.add(f"step {i} ({step.id!r}) depends on unknown step {dep!r}", at)
    for checkpoint in plan.checkpoints:
        if checkpoint not in ids:
            found.add(f"checkpoint {checkpoint!r} is not a step of the plan")
    return found.verdict()


def _modes(plan: Plan, spec: DecisionSpec, surface: Mapping[str, ApprovalMode]) -> VerifyVerdict:
    allowed = APPROVAL_MODES.index(spec.safety_mode)
    found = _Refusal("approval_mode_mismatch")
    for i, step in enumerate(plan.steps):
        mode = surface.get(step.tool or step.worker or "")
        if mode is not None and APPROVAL_MODES.index(mode) > allowed:
            found.add(f"step {i} mode {mode} > safety_mode {spec.safety_mode}", (i, step.id))
    return found.verdict()


def _missing_evidence(plan: Plan, spec: DecisionSpec, requires: Mapping[str, Sequence[str]]) -> VerifyVerdict:
    found = _Refusal("missing_evidence")
    for i, step in enumerate(plan.steps):
        for kind in required_evidence(step, spec, requires):
            if not step.evidence.get(kind):
                found.add(f"step {i} requires evidence class {kind}, none pinned", (i, step.id))
    return found.verdict()


def _unresolved_evidence(plan: Plan, manifest: Sequence[Evidence]) -> VerifyVerdict:
    """Every pinned reference must be an id of the run's evidence manifest with the class it
    is pinned for: a made-up or misfiled reference is refused, never taken on the plan's word."""
    classes = {e.id: e.classification for e in manifest}
    found = _Refusal("unresolved_evidence")
    for i, step in enumerate(plan.steps):
        for kind, refs in step.evidence.items():
            for ref in refs:
                have = classes.get(ref)
                if have is None:
                    found.add(
                        f"step {i} pins {ref} as {kind} evidence, which is not in the run's evidence manifest",
                        (i, step.id),
                    )
                elif have != kind:
                    found.add(
                        f"step {i} pins {ref} as {kind} evidence, but the manifest classifies it as {have}",
                        (i, step.id),
                    )
    return found.verdict()


def _loop_guard(plan: Plan, spec: DecisionSpec) -> VerifyVerdict:
    if len(plan.steps) > spec.max_steps:
        extra = plan.steps[spec.max_steps].id
        reason = f"plan has {len(plan.steps)} steps, exceeds max_steps ({spec.max_steps})"
        return VerifyVerdict.refuse("loop_guard", [reason], spec.max_steps, extra)
    cycle = _cycle(plan)
    if cycle:
        path = " → ".join([*cycle, cycle[0]])
        index = next(i for i, s in enumerate(plan.steps) if s.id == cycle[0])
        return VerifyVerdict.refuse(
            "loop_guard", [f"the steps depend on each other in a cycle: {path}"], index, cycle[0]
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


def _budget(plan: Plan, spec: DecisionSpec) -> VerifyVerdict:
    total = sum(s.estimated_tokens for s in plan.steps)
    if spec.max_plan_tokens is not None and total > spec.max_plan_tokens:
        index, biggest = max(enumerate(plan.steps), key=lambda e: e[1].estimated_tokens)
        reason = f"plan exceeds max_plan_tokens: {total:,} estimated tokens, {spec.max_plan_tokens:,} allowed"
        return VerifyVerdict.refuse("budget_exceeded", [reason], index, biggest.id)
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
    """The scorecard: each evaluator's line, the combined score, and whether it is ok.

    `ok` is the seed's: False exactly when a hard-fail evaluator failed. An evaluator that is
    not hard-fail and scored under the threshold does not make the score fail; it is listed in
    `below_threshold`, and `decide` retries (then replans) while it is there."""

    model_config = _FROZEN

    ok: bool
    score: float
    """The lowest evaluator score (the result is as good as its weakest check)."""
    threshold: float
    items: list[ScoreItem] = Field(default_factory=list)
    hard_failed: list[str] = Field(default_factory=list)
    """Hard-fail evaluators that failed: any one of them makes `ok` False."""
    below_threshold: list[str] = Field(default_factory=list)
    """Evaluators (not hard-fail) that scored under the threshold."""


def score(evaluations: Sequence[Evaluation], threshold: float = 0.8) -> ScoreVerdict:
    """The scorecard of `evaluations`: ok unless a hard-fail evaluator failed."""
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
    hard_failed = [i.name for i in items if i.hard and not i.passed]
    below = [i.name for i in items if not i.hard and not i.passed]
    combined = min((i.score for i in items), default=1.0)
    return ScoreVerdict(
        ok=not hard_failed,
        score=combined,
        threshold=threshold,
        items=items,
        hard_failed=hard_failed,
        below_threshold=below,
    )


# -- consolidate and decide --------------------------------------------------------------------

Status: TypeAlias = Literal["completed", "refused_by_critic", "partial"]


class CriticReport(BaseModel):
    """The plan critic's report on one decision: what verify and score said, and the outcome."""

    model_config = _FROZEN

    session_id: str
    decision_key: str
    """What was decided (the plan id and attempt, or the task's key)."""
    verify: VerifyVerdict
    score: ScoreVerdict | None = None
    """None when the plan was refused before execution, or verified and not executed."""
    status: Status
    rationale: str
    """One line an on-call engineer can act on."""
    decided_at: str
    """When it was decided, as recorded in the journal (never read from a clock here)."""


def consolidate(
    session_id: str, decision_key: str, verify: VerifyVerdict, score: ScoreVerdict | None, decided_at: str
) -> CriticReport:
    """The report, as the seed's consolidate makes it:

    - verify refused: `refused_by_critic`, "verify failed: {kind} — {reasons}";
    - verified, not executed (no score): `partial`, "verify passed; no score (no execution)";
    - a hard-fail evaluator failed: `refused_by_critic`, "{evaluator} fail: {its issues}";
    - otherwise `completed`, "verify and score passed" (with the evaluators under the
      threshold named after it, when there are any: `decide` tries those again).
    """
    status: Status
    if not verify.ok:
        status = "refused_by_critic"
        rationale = f"verify failed: {verify.kind} — {'; '.join(verify.reasons) or 'no reason given'}"
    elif score is None:
        status, rationale = "partial", "verify passed; no score (no execution)"
    elif not score.ok:
        status, rationale = "refused_by_critic", _hard_fail_reason(score)
    else:
        status, rationale = "completed", "verify and score passed" + _below(score)
    return CriticReport(
        session_id=session_id,
        decision_key=decision_key,
        verify=verify,
        score=score,
        status=status,
        rationale=_one_line(rationale),
        decided_at=decided_at,
    )


def _hard_fail_reason(score: ScoreVerdict) -> str:
    """The seed's `hardFailReason`: each failed hard evaluator with its findings."""
    items = {i.name: i for i in score.items}
    reasons = [f"{name} fail: {', '.join(items[name].issues)}".rstrip(": ") for name in score.hard_failed]
    return "; ".join(reasons) or "score failed (unknown reason)"


def _below(score: ScoreVerdict) -> str:
    if not score.below_threshold:
        return ""
    items = {i.name: i for i in score.items}
    parts = []
    for name in score.below_threshold:
        item = items[name]
        issue = f" ({item.issues[0]})" if item.issues else ""
        parts.append(f"{name} scored {item.score:.2f}{issue}")
    return f"; below the threshold {score.threshold:.2f}: " + ", ".join(parts)


def _one_line(text: str, limit: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


Decision: TypeAlias = Literal["accept", "retry", "replan", "escalate"]


def decide(report: CriticReport, *, replans_left: int, retries_left: int) -> Decision:
    """What to do after a report: accept a completed result every evaluator passed; replan a
    refused plan or a hard failure while the re-plan budget lasts; run a verified plan that
    did not execute, or whose result an evaluator scored under the threshold, again while the
    retry budget lasts (then replan); otherwise escalate."""
    if report.status == "refused_by_critic":
        return "replan" if replans_left > 0 else "escalate"
    if report.status == "completed" and not (report.score and report.score.below_threshold):
        return "accept"
    if retries_left > 0:
        return "retry"
    return "replan" if replans_left > 0 else "escalate"
