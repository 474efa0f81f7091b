"""ActorCritic: an actor proposes, a separate critic returns a typed verdict, the actor revises.

Pattern:
    The actor drafts (`{id}__actor_0`); the critic reviews it (`{id}__critic_0`) and
    returns a Verdict. Until a candidate is approved (score ≥ threshold, no hard fail, a
    readable verdict), the actor revises the best candidate so far with its critique
    (`__actor_1`), which is reviewed again (`__critic_1`), up to `max_rounds`
    refinements. The best candidate comes back with its verdict and every round.

Strengths:
    The critic is independent of the actor: another prompt, ideally another model
    (route the `actor` and `critic` roles differently), or no model at all: the project's
    own tests (CodeCritic) or a citation check, combined with an LLM reviewer. A
    deterministic critic cannot be talked into approving; a worse revision is never
    returned; a critic failure keeps the draft. Every review is a journaled session, so
    runs replay exactly.

Weaknesses:
    Each round costs an actor call and a review; an LLM critic can be wrong or fooled,
    and one that is too strict burns every round. The actor sees only the best candidate
    and its critique, not every earlier attempt (SelfRefine keeps the full history).
"""

from __future__ import annotations

from collections.abc import Coroutine, Mapping, Sequence
from typing import Any, TypeAlias

from jeeves._base.ids import validate_name
from jeeves._base.validate import check_str
from jeeves._run.context import Architecture, Caller, Context
from jeeves.agent.agent import Agent
from jeeves.architectures._templates import ACTOR_REFINE_TEMPLATE, CRITIC_TEMPLATE
from jeeves.architectures.critic_loop import (
    ActorCriticOutput,
    CriticLoop,
    LoopSettings,
    OnActorError,
    OnCriticError,
    loop_callers,
)
from jeeves.critics import (
    VERDICT_FORMAT,
    CombinedCritic,
    Critic,
    CriticFunction,
    LLMCritic,
    Verdict,
    as_critic,
)
from jeeves.errors import UserError
from jeeves.stop import StopCondition

__all__ = ["ActorCritic", "CriticLike", "build_critic"]

CriticLike: TypeAlias = Critic | Agent | CriticFunction
"""What ActorCritic takes as a critic (or a list of them)."""


def _agent_critic(agent: Agent) -> LLMCritic:
    """An Agent given as a critic becomes an LLMCritic with its instructions, model and params."""
    if agent.tools:
        raise UserError(
            f"A critic Agent cannot use tools (it has {[t.name for t in agent.tools]!r}); give a tool-free "
            f"Agent or jeeves.LLMCritic, or write a Critic whose review() runs your agent with ctx.run."
        )
    if agent.output_type not in (None, Verdict):
        raise UserError(
            f"A critic Agent must have output_type=None or jeeves.Verdict, got {agent.output_type!r}."
        )
    name = agent.role if agent.role != "agent" else "llm"
    return LLMCritic(
        agent.instructions + "\n" + VERDICT_FORMAT, name=name, model=agent.route, params=agent.params
    )


def _one_critic(critic: object) -> Critic:
    return _agent_critic(critic) if isinstance(critic, Agent) else as_critic(critic)


def build_critic(critic: object, weights: Mapping[str, float] | None = None) -> Critic:
    """A Critic from what ActorCritic accepts: a critic, an Agent, a function, or a list of those."""
    if isinstance(critic, Sequence) and not isinstance(critic, str | bytes):
        return CombinedCritic([_one_critic(c) for c in critic], weights=weights)
    if weights is not None:
        raise UserError(f"weights={dict(weights)!r} needs a list of critics to weigh; pass critic=[...].")
    return _one_critic(critic)


class ActorCritic:
    """An actor and a critic in a loop (module docstring).

    ```python
    coder = ActorCritic(
        Agent("You write Python.", role="coder"),
        [CodeCritic(tests), LLMCritic()],
        max_rounds=3,
    )
    result = await jeeves.run(coder, "Write slugify(text).", models={"actor": "...", "critic": "..."})
    result.detail.rounds  # every round's score and issues
    ```

    Args:
        actor: Any architecture: an Agent, a Supervisor, another ActorCritic.
        critic: A critic (`LLMCritic`, `CodeCritic`, `CitationCritic`, your `Critic`), a
            tool-free Agent (it becomes an LLMCritic with its instructions and model), a
            function `(task, output_text) -> Verdict | bool | float` (sync or async), or
            a list of those, combined (see `jeeves.critics.combine_verdicts`).
        threshold: The score a candidate needs to be approved, in [0, 1].
        max_rounds: Refinements allowed after the first draft (1 → at most two candidates).
        no_improvement: Stop after this many refinements in a row without a better
            candidate; None runs to `max_rounds`.
        stop: A stop condition from `jeeves.stop` instead of `max_rounds` and
            `no_improvement`, e.g. `(MaxRounds(5) | NoImprovement(2)) & MaxTokens(20_000)`;
            the name of what fired is the stop reason. It must cap the rounds or the time.
        on_critic_error: "keep_draft" returns the best candidate so far (stop_reason
            `critic_failed`, with the error in `critic_error` and a `critic.failed`
            event); "raise" raises CriticError with that output on `error.output`.
        on_actor_error: When the actor fails while revising: "raise" (default) re-raises
            its error, type unchanged, with the best judged candidate on `error.output`
            (stop_reason `actor_failed`, the error in `actor_error`); "keep_draft"
            returns that output instead.
        critic_template: What the critic is shown (see `_templates` for the placeholders).
        refine_template: What the actor is asked when it revises.
        weights: Score weights by critic name, for a list of critics (default: minimum).
        role: The role routing uses when this ActorCritic is the root of a run.
        description: What it does, for a Supervisor's model (defaults to the actor's).

    Returns an `ActorCriticOutput`: the best candidate's value and text, its verdict, every
    round, `best_round` and `stop_reason` (approved, max_rounds, no_improvement, budget,
    critic_failed, actor_failed, or the name of the `stop` condition that fired). A budget
    breach returns the best so far; if it comes before any draft, it propagates. An actor
    that fails while revising keeps the best judged candidate on its error's `output` (or
    returns it, see `on_actor_error`); one that fails on the first draft propagates.
    """

    name = "actor_critic"

    def __init__(
        self,
        actor: Architecture,
        critic: CriticLike | Sequence[CriticLike],
        *,
        threshold: float = 0.8,
        max_rounds: int = 3,
        no_improvement: int | None = None,
        stop: StopCondition | None = None,
        on_critic_error: OnCriticError = "keep_draft",
        on_actor_error: OnActorError = "raise",
        critic_template: str = CRITIC_TEMPLATE,
        refine_template: str = ACTOR_REFINE_TEMPLATE,
        weights: Mapping[str, float] | None = None,
        role: str = "actor_critic",
        description: str = "",
    ) -> None:
        if not isinstance(actor, Architecture):
            raise UserError(f"actor {actor!r} is not an architecture; pass an Agent or another architecture.")
        self.actor = actor
        self.critic = build_critic(critic, weights)
        self.role = validate_name(role)
        self.description = (
            check_str(description, name="ActorCritic description")
            or getattr(actor, "description", "")
            or "Drafts, has the draft reviewed, revises."
        )
        self.settings = LoopSettings.checked(
            ("actor", "critic"),
            {"critic_template": critic_template, "refine_template": refine_template},
            threshold=threshold,
            max_rounds=max_rounds,
            no_improvement=no_improvement,
            on_critic_error=on_critic_error,
            stop=stop,
            defaults=(3, None),
            on_actor_error=on_actor_error,
        )

    def model_callers(self, path: tuple[str, ...], routed: tuple[str, ...]) -> list[Caller] | None:
        """The actor's and the critic's callers (see `jeeves._run.context.model_callers`)."""
        return loop_callers(self.actor, self.critic, self.settings, path, routed)

    def run(self, ctx: Context, task: str) -> Coroutine[Any, Any, ActorCriticOutput]:
        # the loop's own coroutine: one frame per run in flight, not two (await it as any `run`)
        return CriticLoop(ctx, task, self.actor, self.critic, self.settings, ActorCriticOutput).run()
