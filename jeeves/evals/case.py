"""One eval case as a run: the architecture answers, the hidden oracle judges, all journaled.

`EvalCase` wraps the architecture under test without adding a level to its tree: the
architecture runs in the case's own session (`{eval}__case_{i}`), so its children and
model calls are named as in any run of it, and `jeeves view` opens a case like a run.
After it answers, the oracle judges every round's candidate (a loop's rounds, or the one
answer) as journaled `function` steps named `oracle`, and the case's latency is journaled
as a step named `latency`: a replay serves both, so it rebuilds the report without
running a test or reading a clock.
"""

from __future__ import annotations

import hashlib
import time

from pydantic import Field

from jeeves._run.context import Architecture, Context, Output, describe_model
from jeeves.critics import CodeCritic, Verdict
from jeeves.critics.code import extract_code
from jeeves.evals.calibration import Judged
from jeeves.messages import Usage

__all__ = ["CaseOutput", "EvalCase"]


class CaseOutput(Output):
    """A case's answer, what the oracle said of each round, and what it cost."""

    passed: bool | None = None
    """The returned answer passed the oracle (None: the case has no oracle)."""
    round_passed: list[bool] = Field(default_factory=list)
    """Per round (0 = first draft), whether that round's candidate passed the oracle."""
    oracle: Verdict | None = None
    usage: Usage = Field(default_factory=Usage)
    """The case's whole tree, replayed calls included (the same live and on replay)."""
    latency_s: float = 0.0
    right_candidate: bool | None = None
    """For a BestOfN: whether any candidate it judged passed the oracle (None otherwise), so
    selection accuracy can be told apart from pass@1."""
    judgements: list[Judged] = Field(default_factory=list)
    """Every critic verdict on a text the oracle also judged (see `jeeves.evals.calibration`)."""


Reviewed = tuple[str, str, list[Verdict], float]
"""(where: `round_N` or `candidate_K`, the text, the critic verdicts on it, the approval threshold)."""


def reviewed_texts(arch: object, answer: Output) -> list[Reviewed]:
    """The texts a critic judged during the run: a loop's rounds, BestOfN's candidates."""
    rounds = getattr(answer, "rounds", None)
    if rounds:
        threshold = float(getattr(getattr(arch, "settings", None), "threshold", 0.8))
        return [(f"round_{r.round}", r.text, [r.verdict] if r.verdict else [], threshold) for r in rounds]
    candidates = getattr(answer, "candidates", None)
    if candidates:
        threshold = float(getattr(arch, "threshold", 0.8))
        return [
            (f"candidate_{c.index}", c.text, list(c.verdicts), threshold)
            for c in candidates
            if c.started and not c.cancelled and c.error is None
        ]
    return []


def _any_right(answer: Output, oracle: dict[str, Verdict | None]) -> bool | None:
    candidates = getattr(answer, "candidates", None)
    if not candidates:
        return None
    texts = [c.text for c in candidates if c.started and not c.cancelled and c.error is None]
    return any((v := oracle.get(t)) is not None and v.approves(1.0) for t in texts)


def _judgements(
    sid: str, task: str, reviewed: list[Reviewed], oracle: dict[str, Verdict | None]
) -> list[Judged]:
    out = []
    for where, text, verdicts, threshold in reviewed:
        truth = oracle.get(text)
        key = hashlib.sha256(f"{task}\0{text}".encode()).hexdigest()[:16]
        for verdict in verdicts:
            for part in verdict.parts or [verdict]:
                out.append(
                    Judged(
                        critic=part.source or "critic",
                        item=f"{sid}#{where}",
                        text_key=key,
                        approved=part.approves(threshold),
                        score=part.score,
                        truth=None if truth is None else truth.approves(1.0),
                    )
                )
    return out


class EvalCase:
    """`arch` run on one case's task, then judged by its hidden tests or expected answer."""

    def __init__(self, arch: Architecture, tests: str | None, expected: str | None) -> None:
        self.arch, self.tests, self.expected = arch, tests, expected
        self.name = getattr(arch, "name", type(arch).__name__)
        self.critic = CodeCritic(tests, name="oracle", timeout_s=30.0) if tests else None

    def describe_model(self, ctx: Context) -> str | None:
        return describe_model(self.arch, ctx)

    async def run(self, ctx: Context, task: str) -> CaseOutput:
        started = time.monotonic()
        answer = await self.arch.run(ctx, task)
        latency = await self._journaled(ctx, "latency", {}, time.monotonic() - started)
        texts = [r.text for r in getattr(answer, "rounds", None) or []] or [answer.text]
        reviewed = reviewed_texts(self.arch, answer)
        judged: dict[str, Verdict | None] = {}
        for text in [*texts, answer.text, *(r[1] for r in reviewed)]:
            if text not in judged:
                judged[text] = await self._judge(ctx, text)
        final = judged[answer.text]
        return CaseOutput(
            value=answer.value,
            text=answer.text,
            stop_reason=answer.stop_reason,
            passed=None if final is None else final.approves(1.0),
            round_passed=[bool(v and v.approves(1.0)) for v in (judged[t] for t in texts)],
            oracle=final,
            usage=ctx.usage(),
            latency_s=latency,
            judgements=_judgements(ctx.session_id, task, reviewed, judged),
            right_candidate=_any_right(answer, judged),
        )

    async def _judge(self, ctx: Context, text: str) -> Verdict | None:
        if self.critic is not None:
            critic = self.critic

            async def live() -> Verdict:
                return await critic.check(extract_code(text))

            request = {"code": extract_code(text), "tests": self.tests}
            return (await ctx.step("function", "oracle", request, live, Verdict)).value
        if self.expected is not None:
            ok = text.strip() == self.expected.strip()
            return Verdict(score=1.0 if ok else 0.0, hard_fail=not ok, source="expected")
        return None

    @staticmethod
    async def _journaled(ctx: Context, name: str, request: dict[str, object], value: float) -> float:
        async def live() -> float:
            return value

        return (await ctx.step("function", name, request, live, float)).value
