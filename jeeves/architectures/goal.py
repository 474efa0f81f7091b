"""Goal: a tool agent works toward a goal; a success critic, not the agent, says when it is done.

Pattern:
    The agent (`{id}__agent_0`) gets the task, the goal and two extra tools: `claim_complete`
    and `abort` (transient: not counted as steps). Between its turns the Goal:
    1. checks loop signals and, every `watchdog.every` tool calls, asks the watchdog
       (`{id}__watchdog_{k}`) for a verdict on the trajectory: STUCK injects a steering
       message, MISLED restates the goal, ACHIEVED starts verification at once;
    2. on a claim, a final reply or ACHIEVED, runs the success critic (`{id}__success_{n}`):
       a pass ends the run `verified`; a failure hands its findings to the agent, which goes on;
    3. checks the stop condition (`jeeves.stop`: tool calls, wall clock, tokens, USD, a
       watchdog verdict…); and after `max_stuck` STUCK verdicts in a row ends the run `stuck`.

Strengths:
    "Done" is decided by a real check (your tests, a health probe, an LLM rubric), not by the
    agent's say-so; a stuck or drifting agent is steered within a few steps by a cheap model,
    and deterministic loop signals catch plain repetition for free. Every verdict and injected
    message is an event, and a replay reproduces them exactly, without any model call.

Weaknesses:
    A watchdog on a cheap model misfires (a STUCK on slow but real progress costs a turn);
    `every` trades oversight against cost. The success critic must be able to judge from the
    agent's report or from the world; a weak criterion lets a weak result through.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import Field

from jeeves._base.ids import validate_name
from jeeves._base.validate import check_int, check_number
from jeeves._run.context import Caller, Context, Output, join_callers, model_callers
from jeeves._run.sessions import span_note
from jeeves._run.steering import Intervention, ToolStep, Turn
from jeeves.agent.agent import Agent
from jeeves.agent.tools import Tool
from jeeves.architectures.actor_critic import CriticLike, build_critic
from jeeves.architectures.critic_loop import check_stop
from jeeves.critics import Review, Verdict, review_in
from jeeves.critics.verdict import critique_event
from jeeves.critics.watchdog import Watchdog, WatchdogFiring, WatchdogReview, describe_step
from jeeves.errors import PROGRAM_ERRORS, MaxTurnsExceeded, UserError
from jeeves.events import SteeringInjected, WatchdogVerdictEvent
from jeeves.stop import LoopState, MaxToolCalls, StopCondition

__all__ = ["Goal", "GoalOutput"]

CLAIM, ABORT = "claim_complete", "abort"
TRANSIENT = (CLAIM, ABORT)

GOAL_INSTRUCTIONS = """

## Your goal
{goal}

When you believe the goal is met, call `claim_complete` with a short report of what you did and
how it can be checked; the claim is verified independently, and if it fails you get the findings
and go on. If the goal cannot be reached, call `abort` with a report of what you tried and why
it cannot work."""

STUCK_MESSAGE = (
    "You appear to be stuck: {reason}. Step back: try a different approach, or call `abort` with "
    "a report if the goal cannot be reached this way."
)
MISLED_MESSAGE = (
    "You appear to have drifted from the goal: {reason}. The goal is:\n{goal}\nWork toward it directly."
)
FAILED_MESSAGE = "Your work was checked and the goal is not met yet:\n{findings}\nFix this and go on."


class GoalOutput(Output):
    """The agent's last text, how the run ended, and every watchdog firing and verification.

    `stop_reason`: verified, aborted, stuck, max_turns, budget, or the name of the stop
    condition that fired.
    """

    watchdog: list[WatchdogFiring] = Field(default_factory=list)
    verifications: list[Verdict] = Field(default_factory=list)
    """Each success check's verdict, in order."""
    steps: int = 0
    """Tool calls the agent made (transient tools not counted)."""
    report: str = ""
    """The agent's last claim or abort report."""


def _claim_complete(report: str) -> str:
    """Claim that the goal is met; the claim is verified independently."""
    return "Claim received: it is being verified."


def _abort(report: str) -> str:
    """Give up on the goal, with a report of what was tried and why it cannot work."""
    return "Aborting."


class Goal:
    """A tool agent driven toward `goal`, done only when `success` says so (module docstring).

    Args:
        agent: The tool-using Agent (its own `max_turns` bounds its turns).
        goal: What must be true at the end, in a sentence or two.
        success: The success critic: any jeeves critic (`CodeCritic`, `LLMCritic`, a
            function, a list combined). It reviews the agent's claim report.
        watchdog: A `Watchdog`, or None for no trajectory reviews and no loop signals.
        stop: When to give up short of success (default `MaxToolCalls(100)`); checked
            after every turn; its name is the stop reason.
        threshold: The success critic's score needed to pass, in [0, 1].
        max_stuck: STUCK verdicts in a row that end the run `stuck`.
        role: The role routing uses at the root of a run.
        description: What it does, for a Supervisor's model.
    """

    name = "goal"

    def __init__(
        self,
        agent: Agent,
        *,
        goal: str,
        success: CriticLike | Sequence[CriticLike],
        watchdog: Watchdog | None = None,
        stop: StopCondition | None = None,
        threshold: float = 0.8,
        max_stuck: int = 3,
        role: str = "goal",
        description: str = "",
    ) -> None:
        if not isinstance(agent, Agent):
            raise UserError(f"Goal needs a jeeves.Agent with tools, got {agent!r}.")
        if agent.output_type is not None:
            raise UserError(f"Goal's agent must reply with text, not output_type={agent.output_type!r}.")
        clash = [t.name for t in agent.tools if t.name in TRANSIENT]
        if clash:
            raise UserError(f"Goal adds the tools {TRANSIENT!r}; rename the agent's tool(s) {clash!r}.")
        if not isinstance(goal, str) or not goal.strip():
            raise UserError(f"Goal(goal=) must be a non-empty str, got {goal!r}.")
        if watchdog is not None and not isinstance(watchdog, Watchdog):
            raise UserError(f"Goal(watchdog=) must be a jeeves Watchdog or None, got {watchdog!r}.")
        if stop is not None and not isinstance(stop, StopCondition):
            raise UserError(f"Goal(stop=) must be a jeeves.stop condition, got {stop!r}.")
        threshold = check_number(threshold, name="Goal(threshold=)", minimum=0, maximum=1)
        max_stuck = check_int(max_stuck, name="Goal(max_stuck=)", minimum=1)
        self.goal = goal.strip()
        self.base_agent = agent
        """The agent as given; `agent` is it with the goal's instructions and tools added."""
        self.success = build_critic(success)
        self.watchdog = watchdog
        self.stop = stop if stop is not None else MaxToolCalls(100)
        self.threshold = float(threshold)
        self.max_stuck = max_stuck
        self.role = validate_name(role)
        self.description = description or f"Works toward a goal until it is verified: {self.goal[:150]}"
        self.agent = Agent(
            agent.instructions + GOAL_INSTRUCTIONS.format(goal=self.goal),
            role=agent.role,
            tools=[
                *agent.tools,
                *agent.toolsets,
                Tool(_claim_complete, name=CLAIM),
                Tool(_abort, name=ABORT),
            ],
            max_turns=agent.max_turns,
            model=agent.route,
            params=agent.params,
            description=agent.description,
        )

    def model_callers(self, path: tuple[str, ...], routed: tuple[str, ...]) -> list[Caller] | None:
        """The agent's, the watchdog's and the success critic's callers."""
        parts = [model_callers(self.agent, (*path, "agent"), (*path, "agent"))]
        if self.watchdog is not None and self.watchdog.every:
            parts.append(
                WatchdogReview(self.watchdog).model_callers((*path, "watchdog"), (*path, "watchdog"))
            )
        parts.append(model_callers(self.success, (*path, "success"), (*path, "success")))
        return join_callers(parts)

    async def run(self, ctx: Context, task: str) -> GoalOutput:
        state = _GoalRun(self, ctx, task)
        prompt = f"{task}\n\nGoal: {self.goal}"
        try:
            out = await ctx.run(self.agent, prompt, role="agent", intervene=state.after_turn)
        except PROGRAM_ERRORS:
            raise
        except MaxTurnsExceeded:
            return state.output("max_turns", state.last_text)
        return state.output(out.stop_reason if out.stop_reason != "completed" else "completed", out.text)


@dataclass
class _GoalRun:
    """One Goal run's bookkeeping; `after_turn` is the agent's intervener."""

    goal: Goal
    ctx: Context
    task: str
    steps: list[ToolStep] = field(default_factory=list)
    firings: list[WatchdogFiring] = field(default_factory=list)
    verifications: list[Verdict] = field(default_factory=list)
    reviewed_at: int = 0
    signalled_at: int = 0
    stuck_in_row: int = 0
    report: str = ""
    last_text: str = ""
    agent_session: str = ""
    """The watched agent's session: verdicts and injected messages go on its span."""
    started: float = field(default_factory=time.monotonic)

    def output(self, stop_reason: str, text: str) -> GoalOutput:
        # The agent ends by calling claim_complete or abort, often with no text beside the
        # call: then its report is what it has to say, and the run's output.
        if self.report and (not text.strip() or stop_reason in ("verified", "aborted")):
            text = self.report
        return GoalOutput(
            value=text,
            text=text,
            stop_reason=stop_reason,
            watchdog=list(self.firings),
            verifications=list(self.verifications),
            steps=len(self.steps),
            report=self.report,
        )

    async def after_turn(self, turn: Turn) -> Intervention | None:
        self.agent_session = turn.session_id
        self.last_text = turn.text or self.last_text
        transient = [s for s in turn.steps if s.name in TRANSIENT]
        self.steps.extend(s for s in turn.steps if s.name not in TRANSIENT)
        for step in transient:
            self.report = _report(step) or self.report
        if any(s.name == ABORT for s in transient):
            return Intervention(stop="aborted")
        messages: list[tuple[str, str]] = []
        firing = await self._watch()
        verify = turn.final or any(s.name == CLAIM for s in transient)
        if firing is not None:
            self.stuck_in_row = self.stuck_in_row + 1 if firing.verdict == "STUCK" else 0
            if self.stuck_in_row >= self.goal.max_stuck:
                return Intervention(stop="stuck")
            if firing.verdict == "STUCK":
                messages.append(("stuck", STUCK_MESSAGE.format(reason=firing.reason.rstrip("."))))
            elif firing.verdict == "MISLED":
                messages.append(
                    (
                        "misled",
                        MISLED_MESSAGE.format(reason=firing.reason.rstrip("."), goal=self.goal.goal),
                    )
                )
            elif firing.verdict == "ACHIEVED":
                verify = True
        if verify:
            verdict = await self._verify(turn)
            if verdict.approves(self.goal.threshold):
                return Intervention(stop="verified")
            messages.append(("verification_failed", FAILED_MESSAGE.format(findings=_findings(verdict))))
        reason = await self._stop_reason(turn)
        if reason is not None:
            return Intervention(stop=reason)
        for cause, message in messages:
            event = SteeringInjected(
                session_id=self.ctx.session_id,
                target_session_id=turn.session_id,
                cause=cause,
                message=message,
            )
            span_note(self.ctx, turn.session_id, event)
            await self.ctx.emit(event)
        return Intervention(messages=tuple(m for _, m in messages))

    async def _watch(self) -> WatchdogFiring | None:
        """A loop signal, else a model review when `every` new steps have been made, else None."""
        w = self.goal.watchdog
        if w is None:
            return None
        signal = w.signal(self.steps[self.signalled_at :])
        if signal is not None:
            self.signalled_at = len(self.steps)
            reason, window = signal
            return await self._fire("STUCK", reason, "signal", "signal", window)
        if not w.every or len(self.steps) - self.reviewed_at < w.every:
            return None
        self.reviewed_at = len(self.steps)
        window = w.window(self.steps)
        prompt = w.prompt(self.goal.goal, _criterion(self.goal), window)
        k = len([f for f in self.firings if f.source == "model"])
        try:
            out = await self.ctx.run(WatchdogReview(w), prompt, role="watchdog", index=k)
        except PROGRAM_ERRORS:
            raise
        except Exception as exc:
            if w.on_error == "raise":
                raise
            reason = f"the watchdog failed ({type(exc).__name__}: {exc}); carrying on"
            return await self._fire("PROGRESSING", reason, "model", "error", window)
        verdict, reason, obtained = out.value
        return await self._fire(verdict, reason, "model", obtained, window)

    async def _fire(
        self,
        verdict: Literal["PROGRESSING", "STUCK", "ACHIEVED", "MISLED"],
        reason: str,
        source: Literal["model", "signal"],
        obtained: Literal["schema", "repaired", "fallback", "error", "signal"],
        window: Sequence[ToolStep],
    ) -> WatchdogFiring:
        preview = self.goal.watchdog.preview if self.goal.watchdog else 200
        firing = WatchdogFiring(
            firing=len(self.firings) + 1,
            verdict=verdict,
            reason=reason,
            source=source,
            obtained=obtained,
            step=len(self.steps),
            window=[describe_step(s, preview) for s in window],
        )
        self.firings.append(firing)
        event = WatchdogVerdictEvent(session_id=self.ctx.session_id, **firing.model_dump())
        span_note(self.ctx, self.agent_session, event)
        await self.ctx.emit(event)
        return firing

    async def _verify(self, turn: Turn) -> Verdict:
        n = len(self.verifications)
        claim = self.report or turn.text or self.last_text
        prompt = (
            f"## Task\n{self.task}\n\n## Goal\n{self.goal.goal}\n\n## The agent's report (check {n})\n{claim}\n\n"
            f"## End of report\nCheck whether the goal is met."
        )
        review = Review(task=self.task, output=claim, round=n, prompt=prompt)
        verdict = await review_in(self.ctx, self.goal.success, review, role="success", index=n)
        self.verifications.append(verdict)
        passed = verdict.approves(self.goal.threshold)
        await self.ctx.emit(
            critique_event(self.ctx.session_id, n, verdict, passed=passed, threshold=self.goal.threshold)
        )
        return verdict

    async def _stop_reason(self, turn: Turn) -> str | None:
        stop = self.goal.stop
        usage = self.ctx.usage()
        latest = self.firings[-1].verdict if self.firings else None
        state = LoopState(
            round=turn.turn,
            text=turn.text,
            tool_calls=len(self.steps),
            tools_called=tuple(s.name for s in self.steps),
            tokens=usage.total_tokens,
            usd=usage.priced_usd,
            model_calls=usage.model_calls,
            watchdog=latest,
        )
        return await check_stop(self.ctx, stop, state, self.started, {"turn": turn.turn})


def _report(step: ToolStep) -> str:
    try:
        data = json.loads(step.arguments or "{}")
    except ValueError:
        return step.arguments
    return str(data.get("report", "")) if isinstance(data, dict) else str(data)


def _findings(verdict: Verdict) -> str:
    lines = [f"- {issue}" for issue in verdict.issues] or [f"- score {verdict.score:.2f}"]
    if verdict.summary:
        lines.append(verdict.summary)
    return "\n".join(lines)


def _criterion(goal: Goal) -> str:
    critic = goal.success
    return f"the {getattr(critic, 'kind', type(critic).__name__)} critic must approve the agent's report"
