"""The generate → critique → refine loop that ActorCritic and SelfRefine share.

Rounds: round 0 is the first draft; rounds 1..max_rounds are refinements, so
`max_rounds=1` allows exactly one refinement (two candidates at most). Every candidate
is critiqued before the loop decides anything, so what it returns carries its verdict.

Stopping: an approved candidate ends the loop (`approved`); otherwise, after each judged
round, the loop's stop condition (`jeeves.stop`) is checked on a `LoopState`, and the
name of the condition that fired is the stop reason. The keywords `max_rounds` and
`no_improvement` are the condition `MaxRounds(max_rounds) | NoImprovement(k)`; `stop=`
gives any other. A condition that reads the clock has its decision journaled as a
`function` step named `stop`, so a replay stops where the recording did.

Per round the loop's own session emits, in this order: `round.started`, then (from round
1) `refinement`, the actor's child session, the critic's child session, and `critique`.
Everything it emits is a function of its children's outputs, so a replay emits the same.

Ranking: a candidate is better when `(approved, score)` is larger; a tie goes to the
later one (it was written knowing more), but only a strictly better candidate counts as
an improvement for `no_improvement`. The next refinement revises the best candidate, so
a worse refinement is never built upon, nor returned.

A failing child never erases judged work. A failing critic keeps the draft
(`critic_failed`) or raises CriticError carrying it. An actor that raises while revising
re-raises its own error (its type unchanged, so a provider failure still fails the run
and a resume makes the call again) with the best judged candidate on the error's `output`
(an ActorCriticOutput with stop_reason `actor_failed`), or, with
on_actor_error="keep_draft", returns that output. A first draft that fails has nothing
to keep and propagates as is; program errors (`PROGRAM_ERRORS`) always propagate.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import time
from dataclasses import dataclass
from typing import Generic, Literal, NoReturn, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from jeeves._base.validate import check_int, check_number
from jeeves._run.context import Architecture, Caller, Context, Output, join_callers, model_callers
from jeeves._run.state import tool_calls
from jeeves.architectures._templates import Template, check_template, format_history, render, uses_history
from jeeves.critics import Critic, Review, Verdict, review_in
from jeeves.critics.verdict import critique_event
from jeeves.errors import PROGRAM_ERRORS, BudgetExceeded, CriticError, UserError
from jeeves.events import CriticFailed, Refinement, RoundStarted
from jeeves.journal.records import error_type_name
from jeeves.stop import LoopState, MaxRounds, NoImprovement, StopCondition

__all__ = ["ActorCriticOutput", "CriticLoop", "LoopSettings", "Round", "check_stop", "loop_callers"]

OnCriticError = Literal["keep_draft", "raise"]
OnActorError = Literal["raise", "keep_draft"]


class Round(BaseModel):
    """One candidate and what its critic said."""

    model_config = ConfigDict(defer_build=True)

    round: int
    text: str
    """The candidate's text."""
    verdict: Verdict | None = None
    """None when the critic failed (or the budget ran out) before judging it."""
    passed: bool = False
    """Approved: score at or above the threshold, no hard fail, not a fallback."""
    critic_error: str | None = None

    @property
    def score(self) -> float | None:
        return self.verdict.score if self.verdict else None

    @property
    def issues(self) -> list[str]:
        return self.verdict.issues if self.verdict else []


class ActorCriticOutput(Output):
    """The best candidate (`value`, `text`), its verdict, and every round.

    `stop_reason` is one of: approved, max_rounds, no_improvement, budget, critic_failed,
    actor_failed (a revision raised; the best judged candidate is kept).
    """

    verdict: Verdict | None = None
    """The returned candidate's verdict; None only when no candidate was ever judged."""
    best_round: int = 0
    rounds: list[Round] = Field(default_factory=list)
    critic_error: str | None = None
    """`ErrorType: message` when the critic failed."""
    actor_error: str | None = None
    """`ErrorType: message` when the actor failed while revising (stop_reason actor_failed)."""


@dataclass(frozen=True)
class LoopSettings:
    """What an ActorCritic or a SelfRefine configures; build with `checked`."""

    actor_role: str
    critic_role: str
    threshold: float
    max_rounds: int
    no_improvement: int | None
    on_critic_error: OnCriticError
    critic_template: Template
    refine_template: Template
    share_route: bool = False
    stop: StopCondition = MaxRounds(3)
    """When to stop short of approval; built from max_rounds and no_improvement unless given."""
    custom_stop: bool = False
    """True when `stop=` was given (then `max_rounds` and `no_improvement` say nothing)."""
    on_actor_error: OnActorError = "raise"

    @classmethod
    def checked(
        cls,
        roles: tuple[str, str],
        templates: dict[str, str],
        *,
        threshold: float,
        max_rounds: int,
        no_improvement: int | None,
        on_critic_error: OnCriticError,
        on_actor_error: OnActorError = "raise",
        share_route: bool = False,
        stop: StopCondition | None = None,
        defaults: tuple[int, int | None] = (3, None),
    ) -> LoopSettings:
        """Settings from user options, or a UserError naming the option that cannot work.

        `roles` is (actor role, critic role); `templates` maps each template's parameter
        name to its text, critic template first, then refine template. `stop` replaces
        `max_rounds` and `no_improvement`, which must then keep their `defaults`.
        """
        _check_numbers(threshold, max_rounds, no_improvement)
        condition = _stop_condition(stop, max_rounds, no_improvement, defaults)
        if on_critic_error not in ("keep_draft", "raise"):
            raise UserError(f"on_critic_error must be 'keep_draft' or 'raise', got {on_critic_error!r}.")
        if on_actor_error not in ("keep_draft", "raise"):
            raise UserError(f"on_actor_error must be 'raise' or 'keep_draft', got {on_actor_error!r}.")
        critic_template, refine_template = (check_template(t, what=name) for name, t in templates.items())
        return cls(
            roles[0],
            roles[1],
            float(threshold),
            max_rounds,
            no_improvement,
            on_critic_error,
            critic_template,
            refine_template,
            share_route,
            condition,
            stop is not None,
            on_actor_error,
        )


def _stop_condition(
    stop: StopCondition | None, max_rounds: int, no_improvement: int | None, defaults: tuple[int, int | None]
) -> StopCondition:
    if stop is None:
        keywords: StopCondition = MaxRounds(max_rounds)
        return keywords | NoImprovement(no_improvement) if no_improvement is not None else keywords
    if not isinstance(stop, StopCondition):
        raise UserError(
            f"stop must be a jeeves.stop condition such as MaxRounds(3) | ScoreAtLeast(0.9), got {stop!r}."
        )
    if (max_rounds, no_improvement) != defaults:
        raise UserError(
            f"Pass either stop={stop!r} or max_rounds/no_improvement, not both; add MaxRounds(n) or "
            f"NoImprovement(k) to the stop condition instead."
        )
    if not stop.bounded:
        raise UserError(
            f"stop={stop!r} may never fire, so the loop could run forever; cap it, e.g. "
            f"stop=({stop!r}) | MaxRounds(5)."
        )
    return stop


def loop_callers(
    actor: object, critic: object, s: LoopSettings, path: tuple[str, ...], routed: tuple[str, ...]
) -> list[Caller] | None:
    """The actor's and the critic's callers, under the roles the loop runs them with."""

    def under(role: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        child = (*path, role)
        return child, routed if s.share_route else child

    return join_callers(
        [model_callers(actor, *under(s.actor_role)), model_callers(critic, *under(s.critic_role))]
    )


async def check_stop(
    ctx: Context, stop: StopCondition, state: LoopState, started: float, key: dict[str, int]
) -> str | None:
    """`stop.check(state)`; a condition that reads the clock is given the time since `started`
    inside a journaled `function` step named `stop` (keyed by `key`), so a replay is served the
    recorded decision instead of reading the clock again."""
    if stop.deterministic:
        reason: str | None = stop.check(state)
        return reason

    async def decide() -> str | None:
        return stop.check(dataclasses.replace(state, elapsed_s=time.monotonic() - started))

    request = {"stop": repr(stop), **key}
    decided: str | None = (await ctx.step("function", "stop", request, decide, str | None)).value
    return decided


def _check_numbers(threshold: object, max_rounds: object, no_improvement: object) -> None:
    check_number(threshold, name="threshold (the score to approve)", minimum=0, maximum=1)
    check_int(max_rounds, name="max_rounds (the refinements allowed)", minimum=0)
    if no_improvement is not None:
        check_int(no_improvement, name="no_improvement (None, or rounds without progress)", minimum=1)


def _key(round_: Round) -> tuple[bool, float]:
    assert round_.verdict is not None
    return (round_.passed, round_.verdict.score)


OutputT = TypeVar("OutputT", bound=ActorCriticOutput)


class CriticLoop(Generic[OutputT]):
    """One run of the loop in `ctx` (the ActorCritic's or SelfRefine's own session): `await loop.run()`."""

    __slots__ = ("actor", "best", "critic", "ctx", "output_type", "outputs", "rounds", "s", "stale", "task")

    def __init__(
        self,
        ctx: Context,
        task: str,
        actor: Architecture,
        critic: Critic,
        settings: LoopSettings,
        output_type: type[OutputT],
    ) -> None:
        self.ctx, self.task, self.actor, self.critic, self.s = ctx, task, actor, critic, settings
        self.output_type = output_type
        self.rounds: list[Round] = []
        self.outputs: list[Output] = []
        self.best: int | None = None
        self.stale = 0

    async def run(self) -> OutputT:
        ctx, s = self.ctx, self.s
        started = time.monotonic() if not s.stop.deterministic else 0.0
        for r in itertools.count():
            await self._announce(r)
            prompt = self._render(s.refine_template, r, self._best().text) if r else self.task
            try:
                candidate = await ctx.run(
                    self.actor, prompt, role=s.actor_role, index=r, share_route=s.share_route
                )
            except BudgetExceeded:
                if not self.rounds:
                    raise
                return self._finish("budget")
            except PROGRAM_ERRORS:
                raise
            except Exception as exc:
                if self.best is None:  # no judged candidate to keep: the first draft failed
                    raise
                return self._actor_failed(exc)
            self.outputs.append(candidate)
            self.rounds.append(Round(round=r, text=candidate.text))
            try:
                verdict = await self._review(r, candidate)
            except BudgetExceeded:
                return self._finish("budget")
            except PROGRAM_ERRORS:
                raise
            except Exception as exc:
                return await self._critic_failed(r, exc)
            passed = verdict.approves(s.threshold)
            await ctx.emit(critique_event, ctx.session_id, r, verdict, passed=passed, threshold=s.threshold)
            self._record(r, verdict, passed)
            if passed:
                return self._finish("approved")
            reason = await self._stop_reason(r, verdict, candidate.text, started)
            if reason is not None:
                return self._finish(reason)
        raise AssertionError("unreachable: the stop condition is bounded")  # pragma: no cover

    async def _announce(self, r: int) -> None:
        """`round.started`, and from the second round on `refinement` (which draft it revises)."""
        ctx = self.ctx
        await ctx.emit(RoundStarted, session_id=ctx.session_id, round=r)
        if r:
            await ctx.emit(Refinement, session_id=ctx.session_id, round=r, based_on_round=self._best().round)

    async def _stop_reason(self, r: int, verdict: Verdict, text: str, started: float) -> str | None:
        """What the stop condition says after round `r`; journaled when it reads the clock."""
        ctx, stop = self.ctx, self.s.stop
        usage, calls = ctx.usage(), tool_calls(ctx)
        best = self._best().verdict
        state = LoopState(
            round=r,
            score=verdict.score,
            best_score=best.score if best else None,
            stale=self.stale,
            text=text,
            tool_calls=len(calls),
            tools_called=tuple(calls),
            tokens=usage.total_tokens,
            usd=usage.priced_usd,
            model_calls=usage.model_calls,
        )
        return await check_stop(ctx, stop, state, started, {"round": r})

    def _best(self) -> Round:
        assert self.best is not None
        return self.rounds[self.best]

    def _render(self, template: Template, r: int, output: str) -> str:
        """Fill a template; `issues` and `summary` are the best judged candidate's so far."""
        verdict = self._best().verdict if self.best is not None else None
        judged = (
            [(x.round, x.text, x.verdict) for x in self.rounds if x.verdict] if uses_history(template) else []
        )
        return render(
            template, task=self.task, output=output, verdict=verdict, history=format_history(judged), round=r
        )

    async def _review(self, r: int, candidate: Output) -> Verdict:
        prompt = self._render(self.s.critic_template, r, candidate.text)
        actor = f"{self.ctx.session_id}__{self.s.actor_role}_{r}"
        review = Review(
            task=self.task,
            output=candidate.text,
            round=r,
            prompt=prompt,
            threshold=self.s.threshold,
            evaluated=actor,
        )
        return await review_in(
            self.ctx, self.critic, review, role=self.s.critic_role, index=r, share_route=self.s.share_route
        )

    def _record(self, r: int, verdict: Verdict, passed: bool) -> None:
        current = self.rounds[r] = self.rounds[r].model_copy(update={"verdict": verdict, "passed": passed})
        if self.best is None:
            self.best = r
            return
        if _key(current) > _key(self._best()):
            self.best, self.stale = r, 0
        else:
            if _key(current) == _key(self._best()):
                self.best = r
            self.stale += 1

    async def _critic_failed(self, r: int, exc: Exception) -> OutputT:
        error = f"{error_type_name(exc)}: {exc}"
        self.rounds[r] = self.rounds[r].model_copy(update={"critic_error": error})
        action = self.s.on_critic_error
        await self.ctx.emit(
            CriticFailed,
            session_id=self.ctx.session_id,
            round=r,
            error_type=error_type_name(exc),
            message=str(exc),
            action=action,
        )
        output = self._finish("critic_failed", critic_error=error)
        if action == "raise":
            _raise_critic_error(self.ctx, r, exc, output)
        return output

    def _actor_failed(self, exc: Exception) -> OutputT:
        """The actor raised while revising: keep the best judged candidate, on the result or
        (on_actor_error="raise") on the error itself, which keeps its type."""
        output = self._finish("actor_failed", actor_error=f"{error_type_name(exc)}: {exc}")
        if self.s.on_actor_error == "keep_draft":
            return output
        with contextlib.suppress(AttributeError):  # an exception with __slots__ cannot carry it
            exc.output = output  # type: ignore[attr-defined]
        exc.add_note(
            f"(the best judged candidate, round {output.best_round}, is on this error's `output`; "
            f"on_actor_error='keep_draft' returns it instead)"
        )
        raise exc

    def _finish(
        self, stop_reason: str, *, critic_error: str | None = None, actor_error: str | None = None
    ) -> OutputT:
        # The best judged candidate; when none was judged yet, the one draft there is.
        index = self.best if self.best is not None else len(self.rounds) - 1
        chosen, output = self.rounds[index], self.outputs[index]
        return self.output_type(
            value=output.value,
            text=output.text,
            stop_reason=stop_reason,
            verdict=chosen.verdict,
            best_round=chosen.round,
            rounds=list(self.rounds),
            critic_error=critic_error,
            actor_error=actor_error,
        )


def _raise_critic_error(ctx: Context, r: int, exc: Exception, output: ActorCriticOutput) -> NoReturn:
    error = CriticError(
        f"The critic failed in round {r} of session {ctx.session_id!r}: {error_type_name(exc)}: {exc}. "
        f"The best candidate so far is on this error's `output`; pass on_critic_error='keep_draft' "
        f"to get it as the result instead."
    )
    error.output = output
    raise error from exc
