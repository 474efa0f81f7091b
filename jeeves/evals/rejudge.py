"""Re-judge recorded runs: derive their verdicts again with another critic, and say what changed.

A PlanExecute attempt's session output is its `AttemptRecord`: the plan, the tool surface,
the executed result, each evaluator's verdict and the report they produced. `verify`,
`score` and `consolidate` are pure, so the report is derived again from those recorded
inputs with a `CriticVersion` (another `DecisionSpec`, other checks, other evaluators, another
threshold), with the recorded `decided_at`: no clock, no replay, nothing executed.

A critic loop's round (ActorCritic `__critic_N`, SelfRefine `__feedback_N`) recorded its
verdict as the review session's output and its candidate as the actor's; the new critic
judges the same candidate. A critic that calls a model (an LLM critic) is only called with
`live=True`; otherwise its rounds are reported as skipped ("needs a model"), never guessed.
Deterministic critics (functions, CodeCritic, citations) run here, offline.

Only PlanExecute attempts and critic-loop rounds are judged; other sessions are read only to
find them. A plan the new critic verifies but the recorded run refused was never executed:
its report is `partial` ("verify passed; no score (no execution)"), since no result exists to score.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from jeeves._run.context import model_callers
from jeeves._run.runner import run
from jeeves.architectures.plan_execute import AttemptRecord
from jeeves.critics import Critic, CriticSession, Review, Verdict
from jeeves.critics.plan import (
    ApprovalMode,
    CriticReport,
    DecisionSpec,
    Evaluation,
    PlanCheck,
    consolidate,
    score,
    verify,
)
from jeeves.errors import JeevesError, UserError
from jeeves.journal.open import close_journal, named_runs, open_journal
from jeeves.journal.records import SessionRecord
from jeeves.journal.store import JournalStore, in_tree
from jeeves.models.router import Router

__all__ = ["CriticVersion", "Evaluator", "Judgement", "rejudge", "rejudge_command"]

LOOP_ROLES = {"actor_critic": ("actor", "critic"), "self_refine": ("draft", "feedback")}
"""Critic loops by architecture name: the role of their candidates and of their reviews."""
NEEDS_A_MODEL = "needs a model (an LLM critic); pass --live to call it"


@dataclass(frozen=True)
class Evaluator:
    """One evaluator of a critic version: a critic to run, or (critic None) the recorded
    verdict of the evaluator of that name, reused as it was."""

    name: str
    critic: Critic | None = None
    hard: bool = False


@dataclass(frozen=True)
class CriticVersion:
    """Another version of the critic. What is left None keeps what each run recorded.

    Args:
        decision: The DecisionSpec plans are verified against again.
        checks: Extra verify checks, as `PlanExecute(checks=)`.
        surface: Approval modes by tool or worker name, over the recorded ones.
        evaluators: The evaluators that score an executed plan's result.
        threshold: The score an evaluator (or a loop's candidate) must reach.
        critic: The critic a critic loop's rounds are judged by.
    """

    decision: DecisionSpec | None = None
    checks: Sequence[PlanCheck] = ()
    surface: Mapping[str, ApprovalMode] = field(default_factory=dict)
    evaluators: Sequence[Evaluator] | None = None
    threshold: float | None = None
    critic: Critic | None = None


class Judgement(BaseModel):
    """One recorded verdict and what the new critic says about the same inputs."""

    model_config = ConfigDict(frozen=True)

    run: str
    """The root session of the run."""
    session_id: str
    """The judged session: a plan attempt (`{id}__plan_N`) or a loop's review (`__critic_N`)."""
    kind: Literal["plan", "critic"]
    before: str
    """The recorded outcome: a report status, or approved / refused for a loop round."""
    after: str | None
    """The new outcome; None when skipped."""
    score_before: float | None = None
    score_after: float | None = None
    refusal_before: str | None = None
    """The verify refusal's kind (plans)."""
    refusal_after: str | None = None
    rationale: str = ""
    """The new report's rationale, or the new verdict's summary."""
    skipped: str | None = None
    """Why it was not judged again."""
    changed: bool = False


def _judgement(**fields: object) -> Judgement:
    j = Judgement.model_validate(fields)
    a, b = j.score_before, j.score_after
    moved = a is not None and b is not None and not math.isclose(a, b, abs_tol=1e-9)
    changed = j.skipped is None and (j.before != j.after or j.refusal_before != j.refusal_after or moved)
    return j.model_copy(update={"changed": changed})


async def rejudge(
    journal: JournalStore,
    version: CriticVersion,
    sessions: Sequence[str] = (),
    *,
    live: bool = False,
    router: Router | None = None,
) -> list[Judgement]:
    """Every judged verdict of the runs `sessions` (all the journal's runs when empty), in
    the order they were recorded, with what `version` says of the same recorded inputs."""
    records = await journal.sessions()
    by_id = {r.session_id: r for r in records}
    known = [r.session_id for r in records if r.parent_id is None]
    unknown = [s for s in sessions if s not in by_id or by_id[s].parent_id is not None]
    if unknown:
        raise UserError(f"No run {unknown[0]!r} in the journal; its runs are {named_runs(known)}.")
    judge = _Judge(version, live, router)
    out: list[Judgement] = []
    for record in records:
        root = record.session_id.split("__", 1)[0]
        if sessions and not any(in_tree(record.session_id, s) for s in sessions):
            continue
        parent = by_id.get(record.parent_id or "")
        if record.architecture == "plan_attempt" and record.status == "completed":
            out.append(await judge.attempt(root, record))
        elif parent is not None and record.status == "completed" and _is_review(record, parent):
            found = await judge.round(root, record, parent, by_id)
            if found is not None:
                out.append(found)
    return out


def _is_review(record: SessionRecord, parent: SessionRecord) -> bool:
    roles = LOOP_ROLES.get(parent.architecture)
    return roles is not None and record.role == roles[1]


def _index(session_id: str) -> int:
    return int(session_id.rsplit("_", 1)[1])


class _Judge:
    def __init__(self, version: CriticVersion, live: bool, router: Router | None) -> None:
        self.v, self.live, self.router = version, live, router

    def _needs_model(self, critic: Critic) -> bool:
        return bool(model_callers(critic, ("critic",), ("critic",))) and not self.live

    async def _review(self, critic: Critic, review: Review, index: int) -> Verdict:
        session = CriticSession(critic, review)
        result = await run(
            session, review.prompt, role="critic", session_id=f"rejudge_{index}", router=self.router
        )
        verdict = result.output
        assert isinstance(verdict, Verdict)
        return verdict

    async def attempt(self, root: str, record: SessionRecord) -> Judgement:
        try:
            rec = AttemptRecord.model_validate_json(record.output or "")
        except ValidationError:
            return _judgement(
                run=root,
                session_id=record.session_id,
                kind="plan",
                before=record.stop_reason or "?",
                after=None,
                skipped="recorded before attempts kept their inputs; nothing to judge again",
            )
        old = rec.report
        base = {
            "run": root,
            "session_id": record.session_id,
            "kind": "plan",
            "before": old.status,
            "score_before": old.score.score if old.score else None,
            "refusal_before": old.verify.kind,
        }
        surface = {**rec.surface, **self.v.surface}
        spec = self.v.decision
        verdict = (
            old.verify
            if spec is None
            else verify(rec.plan, spec, surface, self.v.checks, requires=rec.requires, manifest=rec.manifest)
        )
        card = None
        if verdict.ok and old.verify.ok and old.score is not None:
            evaluations = await self._evaluations(rec, record.task)
            if isinstance(evaluations, str):
                return _judgement(**base, after=None, skipped=evaluations)
            threshold = self.v.threshold if self.v.threshold is not None else old.score.threshold
            card = score(evaluations, threshold)
        new = consolidate(old.session_id, old.decision_key, verdict, card, old.decided_at)
        return _new(base, new)

    async def _evaluations(self, rec: AttemptRecord, task: str) -> list[Evaluation] | str:
        recorded = {e.name: e for e in rec.evaluations}
        if "executor" in recorded or self.v.evaluators is None:
            return list(rec.evaluations)  # a failed step is a fact, not a judgement
        out = []
        for i, ev in enumerate(self.v.evaluators):
            if ev.critic is None:
                if ev.name not in recorded:
                    return f"no recorded evaluator named {ev.name!r} (recorded: {sorted(recorded)!r})"
                old = recorded[ev.name]
                out.append(old.model_copy(update={"hard": old.hard or ev.hard}))
                continue
            if self._needs_model(ev.critic):
                return f"evaluator {ev.name!r} {NEEDS_A_MODEL}"
            prompt = f"## Task\n{task}\n\n## Result of the executed plan\n{rec.result}\n\n## End of result\nJudge the result."
            verdict = await self._review(ev.critic, Review(task, rec.result, i, prompt), i)
            out.append(Evaluation(name=ev.name, verdict=verdict, hard=ev.hard or verdict.hard_fail))
        return out

    async def round(
        self, root: str, record: SessionRecord, loop: SessionRecord, by_id: Mapping[str, SessionRecord]
    ) -> Judgement | None:
        critic = self.v.critic
        try:
            old = Verdict.model_validate_json(record.output or "")
        except ValidationError:
            return None  # a review that failed recorded no verdict
        r = _index(record.session_id)
        actor_role = LOOP_ROLES[loop.architecture][0]
        candidate = by_id.get(f"{loop.session_id}__{actor_role}_{r}")
        reviews = [s for s in by_id.values() if s.parent_id == loop.session_id and s.role == record.role]
        last = max(_index(s.session_id) for s in reviews)
        approved = r == last and loop.stop_reason == "approved"
        base = {
            "run": root,
            "session_id": record.session_id,
            "kind": "critic",
            "before": "approved" if approved else "refused",
            "score_before": old.score,
        }
        if critic is None:
            return None
        if candidate is None or candidate.output is None:
            return _judgement(**base, after=None, skipped="the candidate's output is not in the journal")
        if self._needs_model(critic):
            return _judgement(**base, after=None, skipped=NEEDS_A_MODEL)
        review = Review(loop.task, candidate.output, r, record.task)
        new = await self._review(critic, review, r)
        threshold = self.v.threshold if self.v.threshold is not None else 0.8
        return _judgement(
            **base,
            after="approved" if new.approves(threshold) else "refused",
            score_after=new.score,
            rationale=new.summary or "; ".join(new.issues[:1]),
        )


def _new(base: Mapping[str, object], new: CriticReport) -> Judgement:
    return _judgement(
        **base,
        after=new.status,
        score_after=new.score.score if new.score else None,
        refusal_after=new.verify.kind,
        rationale=new.rationale,
    )


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def format_table(judgements: Sequence[Judgement]) -> str:
    """The changed and skipped verdicts as a table, then one summary line."""
    shown = [j for j in judgements if j.changed or j.skipped]
    lines = [f"{'SESSION':<28} {'BEFORE':<28} {'AFTER':<28} WHY"] if shown else []
    for j in shown:
        before = f"{j.before} {_score(j.score_before)}" + (f" {j.refusal_before}" if j.refusal_before else "")
        if j.skipped:
            after, why = "skipped", j.skipped
        else:
            after = f"{j.after} {_score(j.score_after)}" + (f" {j.refusal_after}" if j.refusal_after else "")
            why = j.rationale
        lines.append(f"{j.session_id:<28} {before:<28} {after:<28} {why}")
    changed = sum(j.changed for j in judgements)
    skipped = sum(j.skipped is not None for j in judgements)
    lines.append(f"{len(judgements)} verdict(s) judged again: {changed} changed, {skipped} skipped.")
    return "\n".join(lines) + "\n"


async def rejudge_command(
    journal: str,
    sessions: Sequence[str],
    version: CriticVersion,
    *,
    as_json: bool = False,
    live: bool = False,
    router: Router | None = None,
) -> int:
    """`jeeves rejudge`: print what `version` changes in the journal's verdicts.

    Exit codes: 0 judged (whether or not anything changed); 2 the journal or a session
    could not be read.
    """
    try:
        store = open_journal(journal, create=False)
    except JeevesError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    try:
        judgements = await rejudge(store, version, sessions, live=live, router=router)
    except JeevesError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    finally:
        await close_journal(store)
    if as_json:
        for j in judgements:
            if j.changed or j.skipped:
                sys.stdout.write(j.model_dump_json() + "\n")
    else:
        sys.stdout.write(format_table(judgements))
    return 0
