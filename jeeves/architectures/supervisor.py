"""Supervisor: a model that coordinates named workers, several at once.

Pattern:
    system instructions + the task → model → `delegate(worker, instructions)` calls, run
    in parallel as child sessions → the workers' outputs as tool results → model → … →
    a final reply, or `forward(worker)` to hand a worker's latest output on verbatim.

Strengths:
    A worker is any architecture (an Agent, an ActorCritic coder, another Supervisor),
    each routed to its own model by role (`coder`, `coder.critic`). Independent pieces
    run at once. Child ids are `{supervisor}__{worker}_{k}`, so a run replays exactly and
    every worker's events, usage and cost are attributed. A bad call (unknown worker, one
    delegation too many, a worker that raises) is a tool result the model reads, not a crash.

Weaknesses:
    Workers see only the instructions (and the user's task when shared), never the
    supervisor's conversation, so a weak coordinator starves them of context. Every
    worker output goes back into the coordinator's prompt, which grows with each turn;
    `forward` avoids paying again to restate a long output. Quality rests on the
    coordinator's planning; a plain Agent or an ActorCritic is cheaper when there is
    nothing to split.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from pydantic import Field

from jeeves._base.ids import validate_name
from jeeves._base.validate import check_bool, check_int, check_mapping, check_str
from jeeves._run import model_calls
from jeeves._run.context import Architecture, Caller, Context, Output, join_callers, model_callers
from jeeves.approvals.policy import APPROVAL_MODES, ApprovalMode
from jeeves.architectures.delegation import Delegation, Ledger, run_turn, worker_prompt
from jeeves.errors import BudgetExceeded, MaxTurnsExceeded, UserError
from jeeves.messages import Message, ModelRequest, ToolSpec, Usage, turn_request
from jeeves.models.base import ModelClient, Route

__all__ = ["DEFAULT_INSTRUCTIONS", "Delegation", "Supervisor", "SupervisorOutput"]

DEFAULT_INSTRUCTIONS = (
    "You coordinate a team of workers. Split the task into pieces and hand each piece to the "
    "best-suited worker with the delegate tool; put independent pieces in the same reply so they "
    "run in parallel. Give each worker everything it needs: it does not see this conversation. "
    "Check what comes back and delegate again if something is missing or wrong. When one worker's "
    "output already is the final answer, call forward with that worker instead of repeating it; "
    "otherwise reply with the final answer yourself."
)


class SupervisorOutput(Output):
    """A Supervisor's result: the answer, plus every delegation and what each worker cost."""

    delegations: list[Delegation] = Field(default_factory=list)
    """Every accepted delegation, in the order their ids were allocated."""
    usage_by_worker: dict[str, Usage] = Field(default_factory=dict)
    """Usage per worker name, summed over its delegations (each with everything below it)."""
    usage: Usage = Field(default_factory=Usage)
    """Usage of the supervisor's session and everything below it (replayed calls included)."""
    forwarded_from: str | None = None
    """The worker session whose output was forwarded verbatim (stop_reason "forwarded")."""


def _one_line(text: object) -> str:
    return " ".join(text.split()) if isinstance(text, str) else ""


class Supervisor:
    """A coordinator model with a `delegate` and a `forward` tool over named workers.

    Args:
        workers: Worker name → architecture. Names follow the role-name rule
            (`[a-z][a-z0-9_]*`, no `__`); a worker runs with its name as its role, so
            `models={"coder": ..., "coder.critic": ...}` routes it.
        instructions: The coordinator's system prompt, sent as is. The workers and their
            descriptions are listed in the `delegate` tool's description.
        role: The role name routing uses when the supervisor is the root of a run.
        max_delegations: Delegations allowed in one run; a call beyond it is refused with
            a tool error the model reads and a `delegation.rejected` event.
        share_task: Give each worker the user's task after its instructions, as context
            (see `worker_prompt` for the exact format).
        max_turns: Coordinator model calls allowed. When they run out the latest worker
            output is returned with stop_reason "max_turns"; with none, MaxTurnsExceeded.
        model: Pin the coordinator to a model (string, Route or ModelClient); unset, the
            router decides by role. Workers are routed by their own roles either way.
        params: Provider parameters for every coordinator call (part of the replay fingerprint).
        description: What this supervisor does, for a parent Supervisor's model.
        delegate_approval: The approval mode of a delegation (default `delegated`): a run
            with an approval policy gates or refuses delegations by it.
    """

    name = "supervisor"

    def __init__(
        self,
        workers: Mapping[str, Architecture],
        *,
        instructions: str = DEFAULT_INSTRUCTIONS,
        role: str = "supervisor",
        max_delegations: int = 10,
        share_task: bool = True,
        max_turns: int = 10,
        model: str | Route | ModelClient | None = None,
        params: Mapping[str, Any] | None = None,
        description: str = "",
        delegate_approval: ApprovalMode = "delegated",
    ) -> None:
        if delegate_approval not in APPROVAL_MODES:
            raise UserError(
                f"Supervisor delegate_approval={delegate_approval!r} is not an approval mode; use one of "
                f"{', '.join(APPROVAL_MODES)}."
            )
        self.delegate_approval: ApprovalMode = delegate_approval
        if not isinstance(workers, Mapping) or not workers:
            raise UserError(
                f"Supervisor needs a mapping of worker names to architectures, got {workers!r}; "
                f'e.g. workers={{"coder": Agent("You write code.")}}.'
            )
        for worker_name, worker in workers.items():
            validate_name(worker_name, what="worker")
            if not callable(getattr(worker, "run", None)):
                raise UserError(
                    f"Worker {worker_name!r} is {worker!r}, not an architecture; "
                    f"pass an Agent, ActorCritic, SelfRefine or Supervisor."
                )
        self.workers: dict[str, Architecture] = dict(workers)
        self.instructions = check_str(instructions, name="Supervisor instructions")
        self.role = validate_name(role)
        self.max_delegations = check_int(max_delegations, name="Supervisor max_delegations", minimum=1)
        self.share_task = check_bool(share_task, name="Supervisor share_task")
        self.max_turns = check_int(max_turns, name="Supervisor max_turns", minimum=1)
        self.route = None if model is None else Route.coerce(model, key=f"{role} (Supervisor model=)")
        self.params = check_mapping(params, name="Supervisor params")
        description = check_str(description, name="Supervisor description")
        self.description = description or f"Coordinates workers: {', '.join(self.workers)}."
        self.tool_specs = self._build_tool_specs()
        """The tools the coordinator model sees: `delegate` and `forward`."""

    def describe_model(self, ctx: Context) -> str:
        """The model the coordinator's calls go to in `ctx` (shown in session.started)."""
        return (self.route or model_calls.route(ctx)).model

    def model_callers(self, path: tuple[str, ...], routed: tuple[str, ...]) -> list[Caller] | None:
        """The coordinator and every worker's callers (see `jeeves._run.context.model_callers`)."""
        own = [Caller(path, None if self.route is not None else routed)]
        workers = (model_callers(w, (*path, name)) for name, w in self.workers.items())
        return join_callers([own, *workers])

    def _build_tool_specs(self) -> list[ToolSpec]:
        names = list(self.workers)
        roster = "\n".join(
            f"- {n}: {d}" if (d := _one_line(getattr(w, "description", ""))) else f"- {n}"
            for n, w in self.workers.items()
        )
        sees = "these instructions and the user's task" if self.share_task else "only these instructions"
        worker = {"type": "string", "enum": names, "description": "The worker's name."}
        delegate = ToolSpec(
            name="delegate",
            description=(
                "Hand a piece of work to a worker and get its output back. Several delegate calls "
                f"in one reply run in parallel. Workers:\n{roster}"
            ),
            parameters={
                "type": "object",
                "properties": {
                    "worker": worker,
                    "instructions": {
                        "type": "string",
                        "description": f"What the worker should do. It sees {sees}, not this conversation.",
                    },
                },
                "required": ["worker", "instructions"],
                "additionalProperties": False,
            },
        )
        forward = ToolSpec(
            name="forward",
            description=(
                "Finish: give the user this worker's latest output verbatim as the final answer, "
                "instead of repeating it. In the same reply as a delegation to that worker, it "
                "forwards that delegation's output."
            ),
            parameters={
                "type": "object",
                "properties": {"worker": worker},
                "required": ["worker"],
                "additionalProperties": False,
            },
        )
        return [delegate, forward]

    def _request(self, messages: list[Message]) -> ModelRequest:
        return turn_request(messages, self.tool_specs, self.params)

    async def run(self, ctx: Context, task: str) -> SupervisorOutput:
        ledger = Ledger(self.max_delegations, delegate_mode=self.delegate_approval)
        prompt = functools.partial(worker_prompt, task=task, share_task=self.share_task)
        messages = [Message.system(self.instructions), Message.user(task)]
        last_text = ""
        for _turn in range(self.max_turns):
            try:
                response = await ctx.call_model(self._request(messages), route=self.route)
            except BudgetExceeded:
                best = self._best(ledger, last_text)
                if best is None:
                    raise
                return self._finish(ctx, ledger, best, "budget")
            messages.append(
                Message(role="assistant", content=response.text or None, tool_calls=response.tool_calls)
            )
            last_text = response.text or last_text
            if not response.tool_calls:
                return self._finish(ctx, ledger, Output.of(response.text), "completed")
            outcomes, chosen = await run_turn(ctx, response.tool_calls, self.workers, ledger, prompt)
            messages.extend(
                Message(role="tool", content=o.text, tool_call_id=c.id, name=c.name)
                for c, o in zip(response.tool_calls, outcomes, strict=True)
            )
            if chosen is not None and chosen.output is not None:
                return self._finish(ctx, ledger, chosen.output, "forwarded", forwarded_from=chosen.session_id)
            if ledger.budget_hit:  # a worker ran out: stop now rather than spend a call to learn it
                best = self._best(ledger, last_text)
                if best is not None:
                    return self._finish(ctx, ledger, best, "budget")
                error = ledger.budget_error()
                if error is not None:
                    raise error
        latest = ledger.best()
        if latest is not None and latest.output is not None:
            return self._finish(ctx, ledger, latest.output, "max_turns")
        raise MaxTurnsExceeded(
            f"Supervisor in session {ctx.session_id!r} was still delegating after max_turns={self.max_turns} "
            f"with no worker output to fall back on; raise max_turns or tell it when to stop."
        )

    @staticmethod
    def _best(ledger: Ledger, last_text: str) -> Output | None:
        """What to return when the budget runs out: the latest worker output that is a whole
        answer (delegated alone in its reply; parallel pieces are fragments), else the
        coordinator's text."""
        latest = ledger.best(whole=True)
        if latest is not None and latest.output is not None:
            return latest.output
        return Output.of(last_text) if last_text else None

    @staticmethod
    def _finish(
        ctx: Context, ledger: Ledger, output: Output, stop_reason: str, *, forwarded_from: str | None = None
    ) -> SupervisorOutput:
        by_worker: dict[str, Usage] = {}
        for record in ledger.records:
            by_worker[record.worker] = by_worker.get(record.worker, Usage()) + record.usage
        return SupervisorOutput(
            value=output.value,
            text=output.text,
            stop_reason=stop_reason,
            delegations=list(ledger.records),
            usage_by_worker=by_worker,
            usage=ctx.usage(),
            forwarded_from=forwarded_from,
        )
