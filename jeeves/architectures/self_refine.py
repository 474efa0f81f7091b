"""SelfRefine: one model drafts, gives itself feedback, and refines (Madaan et al. 2023).

Pattern:
    The agent drafts (`{id}__draft_0`); the same model, with a feedback prompt, returns a
    Verdict on it (`{id}__feedback_0`); until the feedback approves, the agent writes a
    new attempt from a prompt holding every earlier attempt and the feedback on each
    (`__draft_1`, `__feedback_1`, …). It stops on approval, after `no_improvement`
    attempts without a better score, or after `max_rounds` refinements, and returns the
    best attempt with its feedback.

    One role, one model: the drafts and the feedback route as the SelfRefine's own
    session does (its role: the agent's role by default, or the worker name a
    Supervisor gives it), not by the `draft` / `feedback` child roles; an agent pinned
    to a model (`Agent(model=...)`) takes its feedback from that model too.

Strengths:
    No second model or reviewer prompt to maintain; the full history lets the model see
    what it already tried. Every step is journaled, so a run replays exactly.

Weaknesses:
    A model grading its own work is lenient and blind to its own misconceptions, so
    approval means less than an independent critic's; the history grows with every round
    (prompt cost). For code, prefer ActorCritic with CodeCritic.
"""

from __future__ import annotations

from jeeves._base.ids import validate_name
from jeeves._base.validate import check_str
from jeeves._run.context import Architecture, Caller, Context
from jeeves.architectures._templates import CRITIC_TEMPLATE, FEEDBACK_INSTRUCTIONS, SELF_REFINE_TEMPLATE
from jeeves.architectures.critic_loop import (
    ActorCriticOutput,
    CriticLoop,
    LoopSettings,
    OnActorError,
    OnCriticError,
    loop_callers,
)
from jeeves.critics import VERDICT_FORMAT, LLMCritic
from jeeves.errors import UserError
from jeeves.stop import StopCondition

__all__ = ["SelfRefine", "SelfRefineOutput"]


class SelfRefineOutput(ActorCriticOutput):
    """The best attempt, its feedback verdict and every round (the same fields as ActorCritic's)."""


class SelfRefine:
    """Draft, self-feedback, refine with the whole history (module docstring).

    Args:
        agent: The agent that drafts (usually an `Agent`; its role names the route).
        threshold: The feedback score that approves an attempt, in [0, 1].
        max_rounds: Refinements allowed after the first draft.
        no_improvement: Stop after this many attempts in a row without a better score
            (None: run to `max_rounds`).
        stop: A stop condition from `jeeves.stop` instead of `max_rounds` and
            `no_improvement` (as in ActorCritic).
        on_critic_error: When the feedback call fails: "keep_draft" returns the best
            attempt so far (stop_reason `critic_failed`), "raise" raises CriticError.
        on_actor_error: When a draft after the first fails: "raise" (default) re-raises
            its error with the best attempt on `error.output` (stop_reason
            `actor_failed`); "keep_draft" returns that attempt instead.
        feedback_instructions: The feedback system prompt; the verdict format is appended.
        feedback_template: What the feedback call is shown (placeholders as in ActorCritic).
        refine_template: The refine prompt; the default holds `{history}`, every attempt
            with its feedback.
        role: The role this SelfRefine routes by at the root of a run (default: the agent's role).
        description: What it does, for a Supervisor's model (defaults to the agent's).
    """

    name = "self_refine"

    def __init__(
        self,
        agent: Architecture,
        *,
        threshold: float = 0.8,
        max_rounds: int = 3,
        no_improvement: int | None = 1,
        stop: StopCondition | None = None,
        on_critic_error: OnCriticError = "keep_draft",
        on_actor_error: OnActorError = "raise",
        feedback_instructions: str = FEEDBACK_INSTRUCTIONS,
        feedback_template: str = CRITIC_TEMPLATE,
        refine_template: str = SELF_REFINE_TEMPLATE,
        role: str | None = None,
        description: str = "",
    ) -> None:
        if not isinstance(agent, Architecture):
            raise UserError(f"agent {agent!r} is not an architecture; pass a jeeves.Agent.")
        self.agent = agent
        self.role = validate_name(role or getattr(agent, "role", None) or self.name)
        self.description = (
            check_str(description, name="SelfRefine description")
            or getattr(agent, "description", "")
            or "Drafts, critiques itself, refines."
        )
        self.feedback = LLMCritic(
            feedback_instructions + "\n" + VERDICT_FORMAT,
            name="feedback",
            model=getattr(agent, "route", None),
        )
        self.settings = LoopSettings.checked(
            ("draft", "feedback"),
            {"feedback_template": feedback_template, "refine_template": refine_template},
            threshold=threshold,
            max_rounds=max_rounds,
            no_improvement=no_improvement,
            on_critic_error=on_critic_error,
            on_actor_error=on_actor_error,
            share_route=True,
            stop=stop,
            defaults=(3, 1),
        )

    def model_callers(self, path: tuple[str, ...], routed: tuple[str, ...]) -> list[Caller] | None:
        """The agent's and the feedback critic's callers (see `jeeves._run.context.model_callers`)."""
        return loop_callers(self.agent, self.feedback, self.settings, path, routed)

    async def run(self, ctx: Context, task: str) -> SelfRefineOutput:
        return await CriticLoop(ctx, task, self.agent, self.feedback, self.settings, SelfRefineOutput).run()
