"""BestOfN: N candidates at once, selected by critics in order; the first to pass them all wins.

Pattern:
    Candidate k runs as child session `{id}__candidate_{k}` (role `candidate`): the
    candidate architecture (one, run N times, or a list: one per candidate, e.g. one per
    model) produces an answer, then the critic stages judge it in order, each in its own
    session `{id}__candidate_{k}__critic_{s}`. A candidate that fails a stage is not shown
    to the next: put executable checks (a `CodeCritic`) first and an LLM judge after, so
    the judge sees only the survivors (the hybrid verifiers of R2E-Gym). The first
    candidate to pass every stage stops the rest: candidates still running are cancelled,
    and candidates of later batches are never started. Without a passing candidate, the
    one that got furthest wins (stages passed, then its last score, then the lower index).

Strengths:
    Selecting among samples with tests is where executable feedback pays most (CodeT,
    AlphaCodium). Every candidate is kept in the result, with its verdicts and whether it
    was cancelled, so selection accuracy can be measured apart from pass@1. It composes:
    `ActorCritic(BestOfN(...), critics)` repairs the best candidate; `BestOfN(ActorCritic(...))`
    selects among repaired ones; a Supervisor worker can be a BestOfN.

Weaknesses:
    N candidates cost up to N times one; with a critic that approves wrong answers, more
    candidates mean more chances to ship one (measure the critic first: `jeeves eval`,
    docs/evals.md). Candidates with the same prompt and model differ only as much as the
    provider's sampling makes them.

Replay: the selection is a function of the candidates' recorded ends, not of timing. A
cancelled candidate's session ends with stop_reason `cancelled` once its work is cut
short; a strict replay never cancels anything, and a candidate recorded as cancelled
replays its recorded steps and stops where its recording stopped (the first step the
journal lacks), so the replay ends every session as recorded.
"""

from __future__ import annotations

from collections.abc import Sequence

import anyio
from pydantic import BaseModel, ConfigDict, Field

from jeeves._base.ids import validate_name
from jeeves._base.validate import check_bool, check_int, check_number, check_str
from jeeves._run.context import (
    Architecture,
    Caller,
    Context,
    Output,
    describe_model,
    join_callers,
    model_callers,
)
from jeeves.architectures._templates import CRITIC_TEMPLATE, check_template, render
from jeeves.architectures.actor_critic import CriticLike, build_critic
from jeeves.critics import Critic, Review, Verdict, review_in
from jeeves.errors import PROGRAM_ERRORS, ReplayDivergence, UserError
from jeeves.events import CandidateSelected
from jeeves.journal.records import error_type_name

__all__ = ["BestOfN", "BestOfNOutput", "Candidate"]


class Candidate(BaseModel):
    """One candidate: its answer, its verdicts stage by stage, and how it ended."""

    model_config = ConfigDict(defer_build=True)

    index: int
    session_id: str
    text: str = ""
    verdicts: list[Verdict] = Field(default_factory=list)
    """One per stage it reached, in stage order; it stopped at the first that failed it."""
    passed: bool = False
    """Passed every stage."""
    started: bool = True
    cancelled: bool = False
    """Cut short because another candidate passed first."""
    error: str | None = None
    """`ErrorType: message` when the candidate's architecture failed."""

    @property
    def score(self) -> float | None:
        return self.verdicts[-1].score if self.verdicts else None

    @property
    def stages_passed(self) -> int:
        return len(self.verdicts) if self.passed else max(len(self.verdicts) - 1, 0)


class BestOfNOutput(Output):
    """The selected candidate (`value`, `text`), its last verdict, and every candidate.

    `stop_reason`: `passed` (a candidate passed every stage), `none_passed` (the best of
    those that answered is returned).
    """

    selected: int | None = None
    verdict: Verdict | None = None
    candidates: list[Candidate] = Field(default_factory=list)


class _CandidateOutput(Output):
    """What a candidate session returns: its answer, its verdicts, how it ended."""

    verdicts: list[Verdict] = Field(default_factory=list)
    passed: bool = False
    error: str | None = None


class _CandidateRun:
    """One candidate's session: the candidate architecture runs in it (its model calls are
    this session's), then the critic stages as its children. `scope` is cancelled by the
    BestOfN when another candidate passed first."""

    def __init__(self, arch: Architecture, stages: Sequence[Critic], threshold: float, template: str) -> None:
        self.arch, self.stages, self.threshold, self.template = arch, stages, threshold, template
        self.name = getattr(arch, "name", "candidate")
        self.scope = anyio.CancelScope()

    def describe_model(self, ctx: Context) -> str | None:
        return describe_model(self.arch, ctx)

    async def run(self, ctx: Context, task: str) -> Output:
        done: _CandidateOutput | None = None
        try:
            with self.scope:
                done = await self._pipeline(ctx, task)
        except ReplayDivergence as exc:
            # A replay of a candidate recorded as cancelled stops at the first step its
            # recording lacks; the session end check (stop_reason `cancelled`) proves it.
            sid, where = ctx.session_id, exc.session_id or ""
            if not (ctx.replaying and (where == sid or where.startswith(f"{sid}__"))):
                raise
        return done if done is not None else _CandidateOutput(stop_reason="cancelled")

    async def _pipeline(self, ctx: Context, task: str) -> _CandidateOutput:
        try:
            answer = await self.arch.run(ctx, task)
        except PROGRAM_ERRORS:
            raise
        except Exception as exc:
            return _CandidateOutput(stop_reason="failed", error=f"{error_type_name(exc)}: {exc}")
        verdicts: list[Verdict] = []
        for s, critic in enumerate(self.stages):
            prompt = render(self.template, task=task, output=answer.text, verdict=None, history="", round=0)
            review = Review(task=task, output=answer.text, round=0, prompt=prompt, threshold=self.threshold)
            verdict = await review_in(ctx, critic, review, role="critic", index=s)
            verdicts.append(verdict)
            if not verdict.approves(self.threshold):
                return _result(answer, verdicts, passed=False)
        return _result(answer, verdicts, passed=True)


def _result(answer: Output, verdicts: list[Verdict], *, passed: bool) -> _CandidateOutput:
    reason = "passed" if passed else "rejected"
    return _CandidateOutput(
        value=answer.value, text=answer.text, stop_reason=reason, verdicts=verdicts, passed=passed
    )


def _rank(c: Candidate) -> tuple[bool, int, float, int]:
    return (c.passed, c.stages_passed, c.score if c.score is not None else -1.0, -c.index)


class BestOfN:
    """N candidates, critic stages in order, early stop (module docstring).

    ```python
    coder = BestOfN(Agent("You write Python."), [CodeCritic(tests), LLMCritic()], n=5)
    result = await jeeves.run(coder, "Write slugify(text).")
    result.detail.candidates  # every candidate, its verdicts, whether it was cancelled
    ```

    Args:
        candidates: The architecture every candidate runs (give `n`), or a list of
            architectures, one per candidate (e.g. Agents pinned to different models).
        critics: The selection stages, in order: each a critic, a tool-free Agent or a
            function, as ActorCritic takes (a list here is stages, not one combined
            critic; pass a `CombinedCritic` to combine several in one stage).
        n: How many candidates, when `candidates` is one architecture.
        threshold: The score a verdict needs for its stage to pass, in [0, 1].
        early_stop: Stop when a candidate passes every stage; False judges them all and
            returns the best.
        parallel: Run candidates at once; False runs them one after another (a batch of 1),
            so candidates after the first passing one never start.
        batch: How many candidates run at once (default: all of them).
        critic_template: What a critic is shown (see ActorCritic).
        role: The role routing uses when this BestOfN is the root of a run.
        description: What it does, for a Supervisor's model.
    """

    name = "best_of_n"

    def __init__(
        self,
        candidates: Architecture | Sequence[Architecture],
        critics: CriticLike | Sequence[CriticLike],
        *,
        n: int | None = None,
        threshold: float = 0.8,
        early_stop: bool = True,
        parallel: bool = True,
        batch: int | None = None,
        critic_template: str = CRITIC_TEMPLATE,
        role: str = "best_of_n",
        description: str = "",
    ) -> None:
        self.candidates = _candidates(candidates, n)
        stages = critics if isinstance(critics, Sequence) and not isinstance(critics, str) else [critics]
        if not stages:
            raise UserError("BestOfN needs at least one critic to select with, e.g. [CodeCritic(tests)].")
        self.stages = [build_critic(c) for c in stages]
        self.threshold = float(check_number(threshold, name="BestOfN threshold", minimum=0, maximum=1))
        self.early_stop = check_bool(early_stop, name="BestOfN early_stop")
        size = len(self.candidates)
        if batch is not None:
            check_int(batch, name="BestOfN batch (candidates at once)", minimum=1)
        self.batch = (batch or size) if check_bool(parallel, name="BestOfN parallel") else 1
        self.critic_template = check_template(critic_template, what="critic_template")
        self.role = validate_name(role)
        first = self.candidates[0]
        self.description = check_str(description, name="BestOfN description") or (
            getattr(first, "description", "")
            or f"Writes {size} candidates and keeps the one its critics pass."
        )

    def model_callers(self, path: tuple[str, ...], routed: tuple[str, ...]) -> list[Caller] | None:
        """Every candidate's callers and every stage's, under `candidate` and `candidate.critic`."""
        under = (*path, "candidate")
        parts = [model_callers(c, under) for c in self.candidates]
        parts += [model_callers(s, (*under, "critic")) for s in self.stages]
        return join_callers(parts)

    async def run(self, ctx: Context, task: str) -> BestOfNOutput:
        runs = [_CandidateRun(a, self.stages, self.threshold, self.critic_template) for a in self.candidates]
        ends: list[Output | None] = [None] * len(runs)
        for start in range(0, len(runs), self.batch):
            if self.early_stop and any(_passed(e) for e in ends):
                break
            async with anyio.create_task_group() as tg:
                for k in range(start, min(start + self.batch, len(runs))):
                    tg.start_soon(self._one, ctx, task, k, runs, ends)
        return await self._select(ctx, [_candidate(ctx, k, e) for k, e in enumerate(ends)])

    async def _one(
        self, ctx: Context, task: str, k: int, runs: list[_CandidateRun], ends: list[Output | None]
    ) -> None:
        ends[k] = end = await ctx.run(runs[k], task, role="candidate", index=k)
        if self.early_stop and _passed(end) and not ctx.replaying:
            for other in runs:
                if other is not runs[k]:
                    other.scope.cancel()

    async def _select(self, ctx: Context, candidates: list[Candidate]) -> BestOfNOutput:
        answered = [c for c in candidates if c.started and not c.cancelled and c.error is None]
        if not answered:
            failed = next((c for c in candidates if c.error), None)
            raise UserError(
                f"No candidate of BestOfN session {ctx.session_id!r} produced an answer"
                + (f"; candidate {failed.index} failed with {failed.error}" if failed else "")
                + ". Check the candidates' models and budget."
            )
        best = max(answered, key=_rank)
        await ctx.emit(
            CandidateSelected(
                session_id=ctx.session_id,
                candidate=best.index,
                child_session_id=best.session_id,
                passed=best.passed,
                score=best.score,
                cancelled=[c.index for c in candidates if c.cancelled],
                not_started=[c.index for c in candidates if not c.started],
            )
        )
        return BestOfNOutput(
            value=best.text if best.text else None,
            text=best.text,
            stop_reason="passed" if best.passed else "none_passed",
            selected=best.index,
            verdict=best.verdicts[-1] if best.verdicts else None,
            candidates=candidates,
        )


def _passed(end: Output | None) -> bool:
    return isinstance(end, _CandidateOutput) and end.passed


def _candidate(ctx: Context, k: int, end: Output | None) -> Candidate:
    sid = f"{ctx.session_id}__candidate_{k}"
    if end is None:
        return Candidate(index=k, session_id=sid, started=False)
    assert isinstance(end, _CandidateOutput)
    return Candidate(
        index=k,
        session_id=sid,
        text=end.text,
        verdicts=end.verdicts,
        passed=end.passed,
        cancelled=end.stop_reason == "cancelled",
        error=end.error,
    )


def _candidates(candidates: object, n: int | None) -> list[Architecture]:
    if isinstance(candidates, Architecture):
        count = 3 if n is None else check_int(n, name="BestOfN n (how many candidates)", minimum=1)
        return [candidates] * count
    if isinstance(candidates, Sequence) and not isinstance(candidates, str) and candidates:
        listed = list(candidates)
        for c in listed:
            if not isinstance(c, Architecture):
                raise UserError(
                    f"BestOfN candidate {c!r} is not an architecture; pass Agents or architectures."
                )
        if n is not None and n != len(listed):
            raise UserError(f"BestOfN got {len(listed)} candidates and n={n!r}; drop n= or make them agree.")
        return listed
    raise UserError(
        f"BestOfN candidates must be an architecture or a non-empty list of them, got {candidates!r}; "
        f"e.g. BestOfN(Agent('You write Python.'), [CodeCritic(tests)], n=5)."
    )
