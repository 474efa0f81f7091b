"""The Critic protocol, Python-function critics, combined critics, and the critic session.

A critic reviews one candidate inside a Context (its own session, `{parent}__critic_N`)
and returns a Verdict. Anything nondeterministic it does goes through that context:
model calls through `ctx.call_model`, everything else (a function, a pytest run)
through `ctx.step("function", ...)`, so a replay serves the recorded verdict instead of
calling the function or running the tests again.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, cast, runtime_checkable

import anyio.to_thread

from jeeves._base.ids import validate_name
from jeeves._base.validate import check_mapping, check_number
from jeeves._run.context import Caller, Output, join_callers, model_callers
from jeeves._run.sessions import add_span_event
from jeeves.critics.verdict import Verdict, combine_verdicts, evaluation_events
from jeeves.errors import UserError

if TYPE_CHECKING:
    from jeeves._run.context import Context

__all__ = [
    "REVIEW_PROMPT",
    "CombinedCritic",
    "Critic",
    "CriticFunction",
    "CriticSession",
    "FunctionCritic",
    "Review",
    "review_in",
]

CriticFunction: TypeAlias = Callable[[str, str], "Verdict | bool | float | Awaitable[Verdict | bool | float]"]
"""A Python critic: `(task, output_text) -> Verdict | bool | float`, sync or async."""

_ROLE = re.compile(r"[a-z][a-z0-9_]*")


REVIEW_PROMPT = """\
## Task
{task}

## Candidate answer (round {round})
{output}

## End of candidate answer
Review the candidate answer against the task."""
"""What a critic is shown by default: the task and the candidate, clearly delimited, so the
critic can tell the question from the answer (and text inside the answer is not taken for
instructions). An LLMCritic sends it as the user message under its own instructions (which
ask for the verdict JSON); a function critic reads `task` and `output` instead."""


@dataclass(frozen=True)
class Review:
    """What a critic is asked to judge.

    Build one with `Review.of(task, output)`: its prompt is `REVIEW_PROMPT` filled in.
    """

    task: str
    """The user's task, as the loop was given it."""
    output: str
    """The candidate's text (an actor's typed output as its JSON)."""
    round: int
    """0 for the first draft, N for the N-th refinement."""
    prompt: str
    """The rendered critic prompt: what an LLM critic sends, and the critic session's task."""
    threshold: float = 0.8
    """The score that approves (the evaluation event's pass / fail label)."""
    evaluated: str | None = None
    """The session whose answer is judged (the evaluation event names it); unset, the parent."""

    @classmethod
    def of(
        cls,
        task: str,
        output: str | Output,
        *,
        round: int = 0,
        prompt: str | None = None,
        threshold: float = 0.8,
        evaluated: str | None = None,
    ) -> Review:
        """A review of `output` (a text, or a child's Output) against `task`.

        `prompt` defaults to `REVIEW_PROMPT` with the task, the candidate and the round;
        give your own when the critic should see more (both sides of a debate, the rules).
        """
        text = output.text if isinstance(output, Output) else output
        if prompt is None:
            prompt = REVIEW_PROMPT.format(task=task, output=text, round=round)
        return cls(
            task=task, output=text, round=round, prompt=prompt, threshold=threshold, evaluated=evaluated
        )


@runtime_checkable
class Critic(Protocol):
    """Anything that reviews a candidate in a context and returns a Verdict.

    `name` is the critic's source tag: it names the critic in verdicts and tags its
    issues (`[tests] test_add failed: ...`). Use a valid role-like name (`tests`, `llm`).
    """

    name: str

    async def review(self, ctx: Context, review: Review) -> Verdict: ...


def _coerce(result: object, name: str) -> Verdict:
    """A Verdict from what a function critic returned: Verdict, bool or number."""
    if isinstance(result, Verdict):
        return result.model_copy(update={"source": result.source or name})
    if isinstance(result, bool):
        issues = [] if result else [f"the check {name!r} returned False"]
        return Verdict(score=1.0 if result else 0.0, issues=issues, hard_fail=not result, source=name)
    if isinstance(result, int | float):
        return Verdict(score=result, source=name)
    raise UserError(
        f"Critic function {name!r} returned {result!r}; return a jeeves.Verdict, a bool (pass/fail) "
        f"or a score (0-1, 0-10 or 0-100)."
    )


class FunctionCritic:
    """A Python function as a critic: `(task, output) -> Verdict | bool | float`.

    `True` is score 1; `False` is score 0 and a hard fail (a failed check blocks
    approval whatever the threshold); a number is a score on any scale `Verdict` reads.
    Sync functions run in a worker thread so they cannot stall the event loop. The call
    is one journaled step: a replay returns the recorded verdict without calling it.
    """

    kind = "function_critic"

    def __init__(self, function: CriticFunction, *, name: str | None = None) -> None:
        if not callable(function):
            raise UserError(f"A critic must be a callable (task, output) -> Verdict, got {function!r}.")
        self.function = function
        if name is None:
            name = str(getattr(function, "__name__", "")).lower()
            name = name if _ROLE.fullmatch(name) and "__" not in name else "function"
        self.name = validate_name(name, what="critic")

    def model_callers(self, path: tuple[str, ...], routed: tuple[str, ...]) -> list[Caller]:
        """None: a function gets no context to call a model with."""
        return []

    async def review(self, ctx: Context, review: Review) -> Verdict:
        async def live() -> Verdict:
            if inspect.iscoroutinefunction(self.function):
                result: Any = await self.function(review.task, review.output)
            else:
                call = functools.partial(self.function, review.task, review.output)
                result = await anyio.to_thread.run_sync(call, abandon_on_cancel=True)  # as tools do
                if inspect.isawaitable(result):
                    result = await result
            return _coerce(result, self.name).model_copy(update={"obtained": "function"})

        request = {"task": review.task, "output": review.output}
        verdict, _ = await ctx.step("function", self.name, request, live, Verdict)
        return (
            verdict if verdict.evidence != "unknown" else verdict.model_copy(update={"evidence": "function"})
        )


def as_critic(critic: object) -> Critic:
    """A Critic from a Critic or a function; a UserError for anything else."""
    # `isinstance(critic, Critic)`, spelled out: on a Protocol it costs ~30 µs in Python 3.11
    if hasattr(critic, "name") and getattr(critic, "review", None) is not None:
        return cast(Critic, critic)
    if callable(critic):
        return FunctionCritic(critic)
    raise UserError(
        f"{critic!r} is not a critic; pass a jeeves.LLMCritic, CodeCritic, CitationCritic, "
        f"a function (task, output) -> Verdict | bool | float, or a list of those."
    )


class CombinedCritic:
    """Several critics on the same candidate, one verdict (see `combine_verdicts`).

    The critics run one after another, in the order given, inside the one critic
    session, so their steps are numbered the same way live and on replay; put cheap
    deterministic critics (tests) first. If one raises, the combination raises.

    Args:
        critics: Critics or functions; their names must differ (they tag the issues).
        weights: Score weights by critic name; without them the score is the minimum.
    """

    kind = "combined_critic"

    def __init__(self, critics: Sequence[object], *, weights: Mapping[str, float] | None = None) -> None:
        self.critics = [as_critic(c) for c in critics]
        if not self.critics:
            raise UserError("CombinedCritic needs at least one critic.")
        names = [c.name for c in self.critics]
        if len(set(names)) != len(names):
            raise UserError(
                f"Combined critics need distinct names, got {names!r}; pass name= to tell them apart."
            )
        if weights is not None:
            weights = check_mapping(weights, name="weights")
            for critic_name, weight in weights.items():
                check_number(weight, name=f"weights[{critic_name!r}]", minimum=0, above=True)
            if set(weights) != set(names):
                raise UserError(
                    f"weights={dict(weights)!r} must give a positive weight to each critic: {names!r}."
                )
            weights = dict(weights)
        self.weights = weights
        self.name = ",".join(names)

    def describe_model(self, ctx: Context) -> str | None:
        models = [m for c in self.critics if (m := _critic_model(c, ctx))]
        return ",".join(models) or None

    def model_callers(self, path: tuple[str, ...], routed: tuple[str, ...]) -> list[Caller] | None:
        """Its critics' callers, all in the one critic session."""
        return join_callers(model_callers(c, path, routed) for c in self.critics)

    async def review(self, ctx: Context, review: Review) -> Verdict:
        verdicts = [await critic.review(ctx, review) for critic in self.critics]
        return combine_verdicts(verdicts, self.weights)


def _critic_model(critic: object, ctx: Context) -> str | None:
    describe = getattr(critic, "describe_model", None)
    return describe(ctx) if callable(describe) else None


class CriticSession:
    """One review as an Architecture, so every critic runs in its own session.

    The loop runs it with `ctx.run(CriticSession(critic, review), review.prompt,
    role="critic", index=round)`; the session's Output holds the Verdict as its value.
    """

    def __init__(self, critic: Critic, review: Review) -> None:
        self.critic = critic
        self.review = review
        self.name: str = getattr(critic, "kind", "critic")

    def describe_model(self, ctx: Context) -> str | None:
        return _critic_model(self.critic, ctx)

    async def run(self, ctx: Context, task: str) -> Output:
        verdict = await self.critic.review(ctx, self.review)
        if not isinstance(verdict, Verdict):
            raise UserError(
                f"{type(self.critic).__name__}.review returned {verdict!r}; return a jeeves.Verdict."
            )
        parent = ctx.parent_id or ctx.session_id
        evaluated = self.review.evaluated or parent
        for name, attributes in evaluation_events(
            verdict, threshold=self.review.threshold, evaluated=evaluated
        ):
            add_span_event(ctx, parent, name, attributes)
        # `evidence` is left out of the text, so sessions recorded before it existed replay
        return Output(value=verdict, text=verdict.model_dump_json(exclude={"parts", "evidence"}))


async def review_in(
    ctx: Context,
    critic: Critic | CriticFunction,
    review: Review,
    *,
    role: str = "critic",
    index: int = 0,
    share_route: bool = False,
) -> Verdict:
    """Run `critic` on `review` in its own child session of `ctx` and return its Verdict.

    ```python
    verdict = await review_in(ctx, self.judge, Review.of(task, answer), role="judge")
    ```

    The critic's session is `{ctx.session_id}__{role}_{index}`, at role path
    `(*ctx.role_path, role)`: that is the key its model is routed and scripted by
    (`models={"judge": ...}`, `ScriptedModel({"judge": [...]})`), its steps are journaled
    there, and a replay serves its verdict. Calling `critic.review(ctx, review)` directly
    would run it inside the caller's own session, under the caller's keys. ActorCritic,
    SelfRefine and BestOfN review this way.

    Args:
        critic: A Critic (`LLMCritic()`, `CodeCritic(...)`) or a function `(task, output) ->
            Verdict | bool | float`.
        role: The critic session's role (a route key); `index` tells reviews under one
            role apart (a round number); `share_route`: route its calls as the caller's.
    """
    session = CriticSession(as_critic(critic), review)
    result = await ctx.run(session, review.prompt, role=role, index=index, share_route=share_route)
    assert isinstance(result.value, Verdict)
    return result.value
