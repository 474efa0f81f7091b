"""PlanExecute: a planner proposes a typed plan, the critic verifies it before anything runs,
the executor runs only verified steps, and the critic scores the result.

Pattern:
    Attempt `n` is the session `{id}__plan_{n}`. With an evidence retriever, its first step
    (`evidence`, journaled) gathers the run's evidence manifest, which the planner is shown.
    Its planner (`__planner_0`, an Agent with output type `Plan`) proposes a plan; `verify`
    (pure, no model) checks it against the `DecisionSpec`, the tool surface, the evidence each
    tool requires and the manifest. A refused plan executes nothing: the refusal goes back
    to the planner in the next attempt while the re-plan budget lasts. A verified plan's steps
    run as sessions `__step_{k}` (`k` its position in the plan), in dependency order, independent
    steps in parallel; a tool step is one journaled tool call, a worker step runs the worker.
    The evaluators (`__evaluator_{i}`) judge the result; `score` and `consolidate` build the
    `CriticReport`, and `decide` accepts, retries (a new attempt re-running the same plan),
    replans, or escalates (the run ends with the report and every completed step kept).

Strengths:
    Nothing touches the world before a plan passes six typed checks, so a plan that would act
    on unpinned or made-up evidence, exceed the safety mode or loop is refused with a reason the planner can
    fix. A hard-fail evaluator (policy, safety) cannot be outvoted by a confident LLM. verify,
    score and consolidate are pure functions of recorded inputs, so runs replay exactly and
    their verdicts can be re-derived offline with another critic.

Weaknesses:
    The planner must foresee the steps: a task that needs to look before it can plan costs a
    replan per surprise. Estimated tokens are the planner's guess, so `max_plan_tokens` bounds
    the plan, not the spend (the run's Budget does that).
"""

from __future__ import annotations

import datetime
import inspect
import json
import math
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from jeeves._base.ids import child_id, validate_name
from jeeves._base.validate import check_int, check_number, short_repr
from jeeves._run.concurrency import run_all
from jeeves._run.context import Architecture, Caller, Context, Output, join_callers, model_callers
from jeeves._run.sessions import add_span_event
from jeeves._run.steps import report_plan
from jeeves.agent.agent import Agent
from jeeves.agent.gating import gated
from jeeves.agent.tools import ApprovalMode, Tool, ToolOutcome
from jeeves.architectures.actor_critic import CriticLike, build_critic
from jeeves.budget import Budget
from jeeves.critics import Review, Verdict, review_in
from jeeves.critics.plan import (
    CriticReport,
    Decision,
    DecisionSpec,
    Evaluation,
    Evidence,
    Plan,
    PlanCheck,
    PlanStep,
    VerifyVerdict,
    consolidate,
    decide,
    score,
    verify,
)
from jeeves.critics.verdict import EVALUATION_EVENT, evaluation_attributes
from jeeves.errors import PROGRAM_ERRORS, BudgetExceeded, UserError, UserTypeError
from jeeves.events import PlanDecided, PlanVerified
from jeeves.messages import ToolCall

__all__ = ["AttemptRecord", "EvidenceSource", "PlanExecute", "PlanExecuteOutput", "StepResult"]

EvidenceSource = Callable[[str], Iterable[Evidence] | Awaitable[Iterable[Evidence]]]
"""A read-only retriever: the task in, the evidence it finds out (sync or async)."""

PLANNER_INSTRUCTIONS = """

## How to plan
Reply with a plan as JSON (the schema is given). Each step calls exactly one tool or worker from
the surface below, with its arguments; `depends_on` names the steps whose results it needs.
Declare every decision output the plan produces in `outputs`. For each evidence class a step
requires (the surface lists what each tool requires; you may add classes, never drop one), pin
the ids of the evidence manifest you rely on in `evidence` (`{{"refund_window": ["kg:..."]}}`):
only ids of the manifest, with their class, are accepted. Estimate each step's tokens.

## The surface
{surface}

## The decision spec
required outputs: {outputs}; at most {max_steps} steps; plan tokens at most {max_tokens}; safety mode: {safety}."""


class StepResult(Output):
    """One executed plan step: its text, and whether it failed and why."""

    step_id: str = ""
    failed: bool = False
    failure: Literal["error", "budget_exceeded"] | None = None
    """Why it failed: the tool or worker failed (`error`), or it ran out of its budget slice."""


class AttemptRecord(BaseModel):
    """What one attempt decided and from what: the attempt session's output, as JSON.

    It is the journal's copy of the critic's inputs (the plan, the tool surface, the executed
    result and each evaluator's verdict) beside the report they produced, so `jeeves rejudge`
    can derive the report again with another critic without replaying the run.
    """

    model_config = ConfigDict(defer_build=True, frozen=True)

    attempt: int
    plan: Plan
    surface: dict[str, ApprovalMode]
    """Each tool and worker the plan could use, with its approval mode."""
    result: str = ""
    """The executed steps' results as the evaluators saw them ("" when nothing ran)."""
    evaluations: list[Evaluation] = Field(default_factory=list)
    report: CriticReport
    requires: dict[str, list[str]] = Field(default_factory=dict)
    """The evidence classes each tool or worker declares it requires."""
    manifest: list[Evidence] = Field(default_factory=list)
    """The run's evidence manifest as this attempt's verify read it."""


class PlanExecuteOutput(Output):
    """The last attempt's result and the critic's report.

    `stop_reason` is the report's status when accepted (`completed`), or `escalated`.
    """

    report: CriticReport | None = None
    plans: list[Plan] = Field(default_factory=list)
    """Every attempt's plan, in order (a retry repeats its plan)."""
    reports: list[CriticReport] = Field(default_factory=list)
    """Every attempt's report, in order."""
    steps: list[StepResult] = Field(default_factory=list)
    """The last executed attempt's step results, in plan order."""


class _ToolStep:
    """A plan step that calls one tool, as its own session."""

    name = "tool_step"

    def __init__(self, tool: Tool, step: PlanStep) -> None:
        self.tool, self.step = tool, step

    async def run(self, ctx: Context, task: str) -> Output:
        outcome = await self._outcome(ctx)
        return StepResult(
            value=outcome.text,
            text=outcome.text,
            step_id=self.step.id,
            failed=outcome.is_error,
            failure="error" if outcome.is_error else None,
        )

    async def _outcome(self, ctx: Context) -> ToolOutcome:
        """The step's tool call as an Agent's tool call goes (`jeeves.agent.gating.Gated`):
        refused above the safety mode; behind a gate (its own step, before the call's) when
        the run's policy asks; a denial is the step's failed result, which goes back to the planner."""
        (tool,) = gated(ctx, {self.tool.name: self.tool}).values()
        arguments = json.dumps(dict(self.step.arguments), sort_keys=True)
        call = ToolCall(id=f"step-{self.step.id}", name=tool.name, arguments=arguments)
        return (await tool.prepare(ctx, call)()).value


class PlanExecute:
    """Plan, verify, execute, score (module docstring).

    Args:
        planner: The Agent that plans (its instructions say how; the plan schema and the
            surface are added).
        tools: Tools steps may call; their approval modes are checked against the safety mode.
        workers: Architectures steps may delegate to (approval mode `delegated`).
        spec: What a plan must satisfy.
        evaluators: Critics that judge the result (any jeeves critic or function).
        hard: Names of evaluators whose failure fails the run whatever the others say (a
            verdict with `hard_fail` counts as hard too).
        checks: Extra verify checks: functions `(plan, spec) -> VerifyVerdict | None`.
        evidence: A read-only retriever `(task) -> Iterable[Evidence]` (sync or async) whose
            evidence is the run's manifest: each attempt gathers it in a journaled step before
            planning, so a replay and `jeeves rejudge` read the same manifest offline. None:
            the manifest is empty, and a plan can pin no evidence.
        replan_budget: New plans allowed after the first.
        retry_budget: Re-executions of a verified plan allowed when an evaluator (not hard-fail)
            scored its result under the threshold.
        step_budget: Each executed step's own slice of the run's budget (see "Budget
            slices" in the docs); None: steps share the run's budget.
        estimate_headroom: When set, a step's `estimated_tokens` (if above 0) times this caps
            its tokens too (the lesser of that and `step_budget.max_tokens`); None: estimates
            bound only the plan (`max_plan_tokens`).
        threshold: The score each evaluator must reach.
        role: The role routing uses at the root of a run.
    """

    name = "plan_execute"

    def __init__(
        self,
        planner: Agent,
        *,
        tools: Sequence[Tool] = (),
        workers: Mapping[str, Architecture] | None = None,
        spec: DecisionSpec | None = None,
        evaluators: Sequence[CriticLike] = (),
        hard: Sequence[str] = (),
        checks: Sequence[PlanCheck] = (),
        evidence: EvidenceSource | None = None,
        replan_budget: int = 2,
        retry_budget: int = 1,
        step_budget: Budget | None = None,
        estimate_headroom: float | None = None,
        threshold: float = 0.8,
        role: str = "plan_execute",
        description: str = "",
    ) -> None:
        if not isinstance(planner, Agent):
            raise UserError(f"PlanExecute(planner=) must be a jeeves.Agent, got {planner!r}.")
        self.tools = {t.name: t for t in (t if isinstance(t, Tool) else Tool(t) for t in tools)}
        self.workers = {validate_name(n, what="worker"): w for n, w in (workers or {}).items()}
        clash = sorted(set(self.tools) & set(self.workers))
        if clash:
            raise UserError(f"{clash!r} name both a tool and a worker; rename one.")
        if not self.tools and not self.workers:
            raise UserError("PlanExecute needs tools or workers for its plans to use.")
        replan_budget = check_int(replan_budget, name="PlanExecute(replan_budget=)", minimum=0)
        retry_budget = check_int(retry_budget, name="PlanExecute(retry_budget=)", minimum=0)
        threshold = check_number(threshold, name="PlanExecute(threshold=)", minimum=0, maximum=1)
        if step_budget is not None and not isinstance(step_budget, Budget):
            raise UserTypeError(
                f"PlanExecute(step_budget=) must be a jeeves.Budget or None, got {short_repr(step_budget)}; "
                f"e.g. Budget(max_tokens=4000)."
            )
        if estimate_headroom is not None:
            estimate_headroom = float(
                check_number(estimate_headroom, name="PlanExecute(estimate_headroom=)", minimum=1)
            )
        self.step_budget, self.estimate_headroom = step_budget, estimate_headroom
        self.spec = spec or DecisionSpec()
        self.evaluators = [build_critic(e) for e in evaluators]
        self.hard = set(hard)
        unknown = self.hard - {_name(e) for e in self.evaluators}
        if unknown:
            raise UserError(
                f"hard={sorted(unknown)!r} names no evaluator; the evaluators are "
                f"{[_name(e) for e in self.evaluators]!r}."
            )
        self.checks = list(checks)
        if evidence is not None and not callable(evidence):
            raise UserTypeError(
                f"PlanExecute(evidence=) must be a function (task) -> list of Evidence, got {short_repr(evidence)}."
            )
        self.evidence = evidence
        self.replan_budget, self.retry_budget, self.threshold = replan_budget, retry_budget, float(threshold)
        self.role = validate_name(role)
        self.description = description or planner.description
        self.given_planner = planner
        """The planner as given (`planner` is it with the plan schema and the surface added)."""
        self.surface: dict[str, ApprovalMode] = {
            n: t.approval or "local_write" for n, t in self.tools.items()
        }
        self.surface.update({n: "delegated" for n in self.workers})
        self.requires: dict[str, list[str]] = {
            n: list(t.requires_evidence) for n, t in self.tools.items() if t.requires_evidence
        }
        """Evidence classes each tool declares it requires (verify adds the spec's)."""
        self.planner = Agent(
            planner.instructions + self._planning_notes(),
            role=planner.role,
            output_type=Plan,
            max_turns=planner.max_turns,
            model=planner.route,
            params=planner.params,
            description=planner.description,
        )

    def _planning_notes(self) -> str:
        def needs(name: str) -> str:
            classes = [*self.requires.get(name, ()), *self.spec.requires_evidence.get(name, ())]
            return f"; requires evidence: {', '.join(dict.fromkeys(classes))}" if classes else ""

        lines = [f"- tool {n} ({self.surface[n]}{needs(n)}): {t.description}" for n, t in self.tools.items()]
        lines += [
            f"- worker {n} (delegated{needs(n)}): {getattr(w, 'description', '')}"
            for n, w in self.workers.items()
        ]
        s = self.spec
        return PLANNER_INSTRUCTIONS.format(
            surface="\n".join(lines),
            outputs=", ".join(s.required_outputs) or "none",
            max_steps=s.max_steps,
            max_tokens=s.max_plan_tokens if s.max_plan_tokens is not None else "unbounded",
            safety=s.safety_mode,
        )

    def step_slice(self, step: PlanStep) -> Budget | None:
        """The budget slice `step` asks for: `step_budget`, its tokens capped by the step's
        estimate times `estimate_headroom` when both are set; None: the run's budget alone."""
        cap = None
        if self.estimate_headroom is not None and step.estimated_tokens > 0:
            cap = math.ceil(step.estimated_tokens * self.estimate_headroom)
        if cap is None:
            return self.step_budget
        base = self.step_budget or Budget()
        tokens = cap if base.max_tokens is None else min(cap, base.max_tokens)
        return base.model_copy(update={"max_tokens": tokens})

    def model_callers(self, path: tuple[str, ...], routed: tuple[str, ...]) -> list[Caller] | None:
        attempt = (*path, "plan")
        parts = [model_callers(self.planner, (*attempt, "planner"), (*attempt, "planner"))]
        parts += [model_callers(w, (*attempt, "step"), (*attempt, "step")) for w in self.workers.values()]
        parts += [model_callers(e, (*attempt, "evaluator"), (*attempt, "evaluator")) for e in self.evaluators]
        return join_callers(parts)

    async def run(self, ctx: Context, task: str) -> PlanExecuteOutput:
        runs = _Runs(self, ctx, task)
        feedback, plan = "", None
        replans, retries = self.replan_budget, self.retry_budget
        for attempt in range(self.replan_budget + self.retry_budget + 1):
            report, steps, plan = await runs.attempt(attempt, plan, feedback)
            phase = "verify" if not report.verify.ok else ("execute" if report.score is None else "score")
            decision: Decision = decide(report, replans_left=replans, retries_left=retries)
            await ctx.emit(
                PlanDecided(
                    session_id=ctx.session_id,
                    attempt=attempt,
                    phase=phase,
                    decision=decision,
                    status=report.status,
                    rationale=report.rationale,
                )
            )
            add_span_event(ctx, ctx.session_id, *plan_evaluation(report))
            if decision == "accept":
                return runs.output("completed", steps)
            if decision == "escalate":
                return runs.output("escalated", steps)
            if decision == "replan":
                replans, plan, feedback = replans - 1, None, report.rationale
            else:
                retries -= 1
        return runs.output("escalated", runs.last_steps)


def _manifest_notes(manifest: Sequence[Evidence]) -> str:
    if not manifest:
        return ""
    lines = [f"- {e.id} ({e.classification}){': ' + e.summary if e.summary else ''}" for e in manifest]
    return "\n\n## Evidence manifest (pin these ids)\n" + "\n".join(lines)


def plan_evaluation(report: CriticReport) -> tuple[str, dict[str, str | float | bool]]:
    """The plan gate's report as a `gen_ai.evaluation.result`: label = its status, score = the
    scored run's (when it got that far), explanation = the rationale."""
    score = report.score.score if report.score is not None else None
    attributes = evaluation_attributes(
        "plan_critic",
        score=score,
        label=report.status,
        explanation=report.rationale,
        evaluated=report.session_id,
    )
    return EVALUATION_EVENT, attributes


def _name(critic: object) -> str:
    return str(getattr(critic, "name", None) or getattr(critic, "kind", None) or type(critic).__name__)


class _Runs:
    """One PlanExecute run's attempts, in `ctx`."""

    def __init__(self, arch: PlanExecute, ctx: Context, task: str) -> None:
        self.arch, self.ctx, self.task = arch, ctx, task
        self.plans: list[Plan] = []
        self.reports: list[CriticReport] = []
        self.last_steps: list[StepResult] = []
        self.result_text = ""
        self.evaluations: list[Evaluation] = []
        self.manifest: list[Evidence] = []
        self.plan_total = self.plan_done = 0

    def output(self, stop_reason: str, steps: list[StepResult]) -> PlanExecuteOutput:
        report = self.reports[-1] if self.reports else None
        text = "\n".join(f"[{s.step_id}] {s.text}" for s in steps) or (report.rationale if report else "")
        return PlanExecuteOutput(
            value=text,
            text=text,
            stop_reason=stop_reason,
            report=report,
            plans=list(self.plans),
            reports=list(self.reports),
            steps=list(steps),
        )

    async def attempt(
        self, n: int, plan: Plan | None, feedback: str
    ) -> tuple[CriticReport, list[StepResult], Plan]:
        """Attempt `n` as the session `{id}__plan_{n}`: plan (unless retrying), verify, execute, score."""
        holder: dict[str, Any] = {}

        async def body(actx: Context, task: str) -> Output:
            holder["result"] = await self._attempt(actx, n, plan, feedback)
            report, _, used = holder["result"]
            record = AttemptRecord(
                attempt=n,
                plan=used,
                surface=self.arch.surface,
                result=self.result_text,
                evaluations=self.evaluations,
                report=report,
                requires=self.arch.requires,
                manifest=self.manifest,
            )
            return Output(value=record, text=record.model_dump_json(), stop_reason=report.status)

        await self.ctx.run(_Attempt(body), self.task, role="plan", index=n)
        report, steps, used = holder["result"]
        return report, steps, used

    async def _attempt(
        self, ctx: Context, n: int, plan: Plan | None, feedback: str
    ) -> tuple[CriticReport, list[StepResult], Plan]:
        arch = self.arch
        self.result_text, self.evaluations = "", []
        self.manifest = await self._gather(ctx)
        if plan is None:
            prompt = self.task + _manifest_notes(self.manifest)
            if feedback:
                prompt += f"\n\n## Your previous plan was refused\n{feedback}"
            out = await ctx.run(arch.planner, prompt, role="planner")
            assert isinstance(out.value, Plan)
            plan = out.value
        self.plans.append(plan)
        verdict = verify(
            plan, arch.spec, arch.surface, arch.checks, requires=arch.requires, manifest=self.manifest
        )
        await ctx.emit(
            PlanVerified(
                session_id=ctx.session_id,
                attempt=n,
                plan_id=plan.plan_id,
                ok=verdict.ok,
                kind=verdict.kind,
                reasons=verdict.reasons,
                offending_step=verdict.offending_step,
                offending_step_id=verdict.offending_step_id,
            )
        )
        key = f"{plan.plan_id}#{n}"
        if not verdict.ok:
            return await self._report(ctx, key, verdict, None), [], plan
        steps = await self._execute(ctx, plan)
        self.last_steps = steps
        self.result_text = "\n".join(f"[{s.step_id}] {s.text}" for s in steps)
        failed = [s for s in steps if s.failed]
        if failed:
            reason = f"step {failed[0].step_id!r} failed: {failed[0].text}"
            self.evaluations = [
                Evaluation(
                    name="executor", verdict=Verdict(score=0.0, hard_fail=True, issues=[reason]), hard=True
                )
            ]
            card = score(self.evaluations)
            return await self._report(ctx, key, verdict, card), steps, plan
        evaluations = await self._evaluate(ctx, steps)
        return await self._report(ctx, key, verdict, score(evaluations, arch.threshold)), steps, plan

    async def _gather(self, ctx: Context) -> list[Evidence]:
        """The run's evidence manifest: the retriever's answer, as a journaled step (so a replay
        is served the recorded manifest and never calls the retriever); none without one."""
        source = self.arch.evidence
        if source is None:
            return []

        async def live() -> list[Evidence]:
            found = source(self.task)
            if inspect.isawaitable(found):
                found = await found
            items = list(found)
            bad = [e for e in items if not isinstance(e, Evidence)]
            if bad:
                raise UserTypeError(
                    f"PlanExecute(evidence=) must return Evidence items, got {short_repr(bad[0])}; "
                    f"build them with jeeves.critics.plan.Evidence(id=..., classification=...)."
                )
            return items

        manifest, _ = await ctx.step("function", "evidence", {"task": self.task}, live, list[Evidence])
        return list(manifest)

    async def _report(self, ctx: Context, key: str, verdict: VerifyVerdict, card: Any) -> CriticReport:
        async def now() -> str:
            return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")

        decided_at = (await ctx.step("function", "decided_at", {"decision": key}, now, str)).value
        report = consolidate(self.ctx.session_id, key, verdict, card, decided_at)
        self.reports.append(report)
        return report

    async def _execute(self, ctx: Context, plan: Plan) -> list[StepResult]:
        """Run the steps in dependency order, each wave of independent steps in parallel: a
        wave is the steps whose last dependency finished in the wave before, in plan order.
        Each step counts its dependencies not yet done, so a plan costs what its steps and
        edges are (it rescanned every waiting step at each wave: a chain of N steps, N²)."""
        position = {s.id: k for k, s in enumerate(plan.steps)}
        done: dict[str, StepResult] = {}
        unmet = {s.id: len(set(s.depends_on)) for s in plan.steps}
        dependents: dict[str, list[PlanStep]] = {}
        for s in plan.steps:
            for d in set(s.depends_on):
                dependents.setdefault(d, []).append(s)
        self.plan_total, self.plan_done = len(plan.steps), 0
        report_plan(ctx, self.plan_total, 0)  # progress envelopes carry the verified plan's total
        ready = [s for s in plan.steps if unmet[s.id] == 0]
        while ready:
            results = await run_all([self._runner(ctx, s, position[s.id], done) for s in ready])
            unblocked: list[PlanStep] = []
            for s, r in zip(ready, results, strict=True):
                done[s.id] = r
                for waiting in dependents.get(s.id, ()):
                    unmet[waiting.id] -= 1
                    if unmet[waiting.id] == 0:
                        unblocked.append(waiting)
            if any(r.failed for r in results):
                break
            ready = sorted(unblocked, key=lambda s: position[s.id])
        return [done[s.id] for s in plan.steps if s.id in done]

    def _runner(self, ctx: Context, step: PlanStep, k: int, done: Mapping[str, StepResult]) -> Any:
        arch = self.arch
        budget = arch.step_slice(step)

        async def go() -> StepResult:
            report_plan(ctx, self.plan_total, self.plan_done, step.id)
            try:
                result = await self._step(ctx, step, k, done, budget)
            except BudgetExceeded as exc:
                if exc.slice_id != child_id(ctx.session_id, "step", k):
                    raise  # the run's own budget (or another's slice): the run stops, as before
                why = f"{exc.limit} spent {exc.spent:g} of {exc.allowed:g} allowed"
                if exc.spent < exc.allowed:
                    why += ", and its next call could cross it"
                text = f"budget_exceeded: the step ran out of its budget slice ({why})"
                return StepResult(text=text, step_id=step.id, failed=True, failure="budget_exceeded")
            if not result.failed:
                self.plan_done += 1
                report_plan(ctx, self.plan_total, self.plan_done, step.id)
            return result

        return go

    async def _step(
        self, ctx: Context, step: PlanStep, k: int, done: Mapping[str, StepResult], budget: Budget | None
    ) -> StepResult:
        arch = self.arch
        if step.tool is not None:
            out = await ctx.run(
                _ToolStep(arch.tools[step.tool], step), step.id, role="step", index=k, budget=budget
            )
            assert isinstance(out, StepResult)
            return out
        worker = arch.workers[step.worker or ""]
        inputs = "\n".join(f"[{d}] {done[d].text}" for d in step.depends_on if d in done)
        task = str(step.arguments.get("task", "")) + (f"\n\n## Results so far\n{inputs}" if inputs else "")
        try:
            out = await ctx.run(worker, task, role="step", index=k, budget=budget, spread=True)
        except PROGRAM_ERRORS:
            raise
        except BudgetExceeded:
            raise  # `go` tells this step's slice from the run's budget
        except Exception as exc:
            return StepResult(
                text=f"{type(exc).__name__}: {exc}", step_id=step.id, failed=True, failure="error"
            )
        return StepResult(value=out.value, text=out.text, step_id=step.id)

    async def _evaluate(self, ctx: Context, steps: list[StepResult]) -> list[Evaluation]:
        result = self.result_text = "\n".join(f"[{s.step_id}] {s.text}" for s in steps)
        evaluations = self.evaluations
        for i, critic in enumerate(self.arch.evaluators):
            prompt = f"## Task\n{self.task}\n\n## Result of the executed plan\n{result}\n\n## End of result\nJudge the result."
            review = Review(task=self.task, output=result, round=i, prompt=prompt)
            verdict = await review_in(ctx, critic, review, role="evaluator", index=i)
            name = _name(critic)
            evaluations.append(
                Evaluation(name=name, verdict=verdict, hard=name in self.arch.hard or verdict.hard_fail)
            )
        return evaluations


class _Attempt:
    """An attempt as its own session; `body` does the work."""

    name = "plan_attempt"

    def __init__(self, body: Any) -> None:
        self.body = body

    async def run(self, ctx: Context, task: str) -> Output:
        out: Output = await self.body(ctx, task)
        return out
