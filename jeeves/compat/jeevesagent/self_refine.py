"""jeevesagent's `SelfRefine`: its own algorithm, run on a jeeves session.

jeevesagent's SelfRefine is not jeeves' (`jeeves.SelfRefine` asks for a scored verdict
and keeps the history of attempts): the base architecture (ReAct: the Agent's model and
tools) drafts; then, up to `max_rounds` times, the same model critiques the output with
`critic_prompt` as its system prompt, and the run ends (`converged`) when the critique
contains `stop_phrase` (case-insensitive); otherwise the model rewrites the output with
`refiner_prompt`, and the rewrite becomes the output, unreviewed after the last round.
Everything happens in the Agent's own session, as in jeevesagent: the draft's model and
tool calls, then each critique and rewrite, all journaled steps of that session, so a
run replays exactly. Events: `round.started` (the draft at round 0, each critique after),
`critique` (score 1.0 and passed when converged, else 0.0 with the critique as its
issue), `refinement` (before each rewrite); the layer's `Agent.stream` turns them into
jeevesagent's `self_refine.*` events.

A jeevesagent-style budget on the Agent (`allows_step()`) is checked before each round:
blocked, the run returns `interrupted=True` with reason `budget:<its reason>`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jeeves._base.validate import check_int, check_str
from jeeves._run.context import Architecture, Caller, Context
from jeeves.compat.jeevesagent._interrupt import MAX_TURNS, CompatOutput
from jeeves.errors import MaxTurnsExceeded
from jeeves.events import Critique, Refinement, RoundStarted
from jeeves.messages import Message, ModelRequest
from jeeves.models.base import Route

if TYPE_CHECKING:
    from jeeves.compat.jeevesagent.agent import Agent

__all__ = ["DEFAULT_CRITIC_PROMPT", "DEFAULT_REFINER_PROMPT", "SelfRefine"]

DEFAULT_CRITIC_PROMPT = """\
You are a careful reviewer. Read the original task and the proposed
output. Identify every issue you can find: factual errors, missing
edge cases, unclear language, inconsistent reasoning, gaps versus
what the task asked for.

Be specific. Cite the relevant section of the output.

If you find no issues at all and the output fully satisfies the
task, respond with exactly:

  no issues

Otherwise, list the issues as a bulleted critique."""
"""jeevesagent's critic system prompt (Apache-2.0), verbatim."""

DEFAULT_REFINER_PROMPT = """\
You are revising your previous output based on a critique. Address
every point in the critique. Preserve what was correct; fix what
was wrong; add what was missing. Output ONLY the revised version,
not commentary about the changes."""
"""jeevesagent's refiner system prompt (Apache-2.0), verbatim."""


class SelfRefine:
    """jeevesagent's `SelfRefine(base=, max_rounds=, critic_prompt=, refiner_prompt=, stop_phrase=)`.

    Args:
        base: The architecture that drafts (default ReAct: the Agent's model and tools).
        max_rounds: Critique rounds at most (≥ 1), each followed by a rewrite unless it converged.
        critic_prompt: The critique call's system prompt.
        refiner_prompt: The rewrite call's system prompt.
        stop_phrase: A critique containing it ends the run as converged.
    """

    name = "self-refine"

    def __init__(
        self,
        *,
        base: Any = None,
        max_rounds: int = 3,
        critic_prompt: str | None = None,
        refiner_prompt: str | None = None,
        stop_phrase: str = "no issues",
    ) -> None:
        from jeeves.compat.jeevesagent.agent import ReAct

        self.base = base if base is not None else ReAct()
        self.max_rounds = check_int(max_rounds, name="SelfRefine max_rounds", minimum=1)
        self.critic_prompt = check_str(critic_prompt or DEFAULT_CRITIC_PROMPT, name="critic_prompt")
        self.refiner_prompt = check_str(refiner_prompt or DEFAULT_REFINER_PROMPT, name="refiner_prompt")
        self.stop_phrase = check_str(stop_phrase, name="stop_phrase", empty=False)

    def declared_workers(self) -> dict[str, Any]:
        """None: one model in three roles (jeevesagent's method)."""
        return {}

    def bind(self, host: Agent) -> Architecture:
        spec: Any = self.base
        base: Architecture = spec.bind(host) if hasattr(spec, "bind") else spec
        return _Bound(self, base, host.route, getattr(host, "budget", None))


class _Bound:
    """A SelfRefine bound to its Agent: the jeeves architecture that runs it."""

    name = "self-refine"
    role = "self_refine"

    def __init__(self, spec: SelfRefine, base: Architecture, route: Route | None, budget: object) -> None:
        self.spec, self.base, self.route = spec, base, route
        self.budget: Any = budget if callable(getattr(budget, "allows_step", None)) else None

    def model_callers(self, path: tuple[str, ...], routed: tuple[str, ...]) -> list[Caller]:
        return [Caller(path, None if self.route is not None else routed)]

    async def _call(self, ctx: Context, system: str, user: str) -> str:
        request = ModelRequest(messages=[Message.system(system), Message.user(user)])
        response = await ctx.call_model(request, route=self.route)
        if self.budget is not None and callable(getattr(self.budget, "consume", None)):
            usage = response.usage
            await self.budget.consume(
                tokens_in=usage.input_tokens, tokens_out=usage.output_tokens, cost_usd=usage.cost_usd
            )
        return response.text

    async def _blocked(self) -> str | None:
        if self.budget is None:
            return None
        status = await self.budget.allows_step()
        return f"budget:{status.reason}" if getattr(status, "blocked", False) else None

    async def run(self, ctx: Context, task: str) -> CompatOutput:
        sid, spec = ctx.session_id, self.spec
        await ctx.emit(RoundStarted(session_id=sid, round=0))
        try:
            current = (await self.base.run(ctx, task)).text  # in this session, as jeevesagent runs it
        except MaxTurnsExceeded:
            return CompatOutput(
                value="", text="", stop_reason="interrupted", interrupted=True, interruption_reason=MAX_TURNS
            )
        for r in range(1, spec.max_rounds + 1):
            blocked = await self._blocked()
            if blocked is not None:
                return CompatOutput.model_validate(
                    {"value": current, "text": current, "stop_reason": "interrupted"}
                ).model_copy(update={"interrupted": True, "interruption_reason": blocked})
            await ctx.emit(RoundStarted(session_id=sid, round=r))
            critique = await self._call(
                ctx, spec.critic_prompt, f"Original task:\n{task}\n\nOutput to review:\n{current}"
            )
            converged = spec.stop_phrase.lower() in critique.lower()
            await ctx.emit(
                Critique(
                    session_id=sid,
                    round=r,
                    score=1.0 if converged else 0.0,
                    passed=converged,
                    issues=[] if converged else [critique],
                    summary=critique,
                    obtained="function",
                    source="self_refine",
                )
            )
            if converged:
                return CompatOutput(value=current, text=current, stop_reason="converged")
            await ctx.emit(Refinement(session_id=sid, round=r, based_on_round=r - 1))
            current = await self._call(
                ctx,
                spec.refiner_prompt,
                f"Original task:\n{task}\n\nPrevious output:\n{current}\n\n"
                f"Critique to address:\n{critique}\n\nProduce the revised output.",
            )
        return CompatOutput(value=current, text=current, stop_reason="max_rounds")
