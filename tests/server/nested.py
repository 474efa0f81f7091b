"""A test-only nested architecture: a coordinator delegating to two actor/critic workers.

It stands in for Supervisor → ActorCritic where those are not available: it emits the same
kinds of events (delegation.started with the delegate call's id before the worker runs,
round.started and critique per round) and runs real Agents as children through ctx.run,
so the server, the AG-UI mapping and the viewer see a realistic tree.
"""

from __future__ import annotations

import json

from jeeves import Agent, Context, Output, Router, ScriptedModel
from jeeves.concurrency import run_all
from jeeves.events import Critique, DelegationCompleted, DelegationStarted, RoundStarted
from jeeves.ids import child_id
from jeeves.messages import Message, ModelRequest, ToolSpec
from jeeves.testing import Reply, call

DELEGATE = ToolSpec(
    name="delegate",
    description="Hand work to a worker.",
    parameters={
        "type": "object",
        "properties": {"worker": {"type": "string"}, "instructions": {"type": "string"}},
        "required": ["worker", "instructions"],
    },
)


class Reviewed:
    """An actor drafts, a critic scores; until the critic passes it (or two rounds)."""

    name = "actor_critic"

    def __init__(self, threshold: float = 0.8, max_rounds: int = 2) -> None:
        self.actor = Agent("Write what is asked.")
        self.critic = Agent('Score the draft as JSON {"score": 0..1, "summary": "..."}.')
        self.threshold = threshold
        self.max_rounds = max_rounds

    async def run(self, ctx: Context, task: str) -> Output:
        draft = Output()
        for round in range(self.max_rounds):
            await ctx.emit(RoundStarted(session_id=ctx.session_id, round=round))
            draft = await ctx.run(self.actor, task, role="actor", index=round)
            verdict = json.loads((await ctx.run(self.critic, draft.text, role="critic", index=round)).text)
            score = float(verdict["score"])
            passed = score >= self.threshold
            await ctx.emit(
                Critique(
                    session_id=ctx.session_id,
                    round=round,
                    score=score,
                    passed=passed,
                    summary=verdict.get("summary", ""),
                    source="critic",
                )
            )
            if passed:
                return Output.of(draft.text, stop_reason="approved")
        return Output.of(draft.text, stop_reason="max_rounds")


class Coordinator:
    """Asks its model which workers to use, runs them in parallel, then asks for a summary."""

    name = "supervisor"

    def __init__(self, workers: dict[str, Reviewed]) -> None:
        self.workers = workers

    async def run(self, ctx: Context, task: str) -> Output:
        messages = [Message.system("Delegate with the delegate tool."), Message.user(task)]
        plan = await ctx.call_model(ModelRequest(messages=messages, tools=[DELEGATE]))
        counts: dict[str, int] = {}
        jobs = []
        for c in plan.tool_calls:
            args = json.loads(c.arguments)
            worker, index = args["worker"], counts.get(args["worker"], 0)
            counts[worker] = index + 1
            child = child_id(ctx.session_id, worker, index)
            await ctx.emit(
                DelegationStarted(
                    session_id=ctx.session_id,
                    worker=worker,
                    child_session_id=child,
                    instructions=args["instructions"],
                    tool_call_id=c.id,
                )
            )
            jobs.append((worker, index, args["instructions"], c.id, child))

        async def delegate(worker: str, index: int, instructions: str, call_id: str, child: str) -> Output:
            out = await ctx.run(self.workers[worker], instructions, role=worker, index=index)
            await ctx.emit(
                DelegationCompleted(
                    session_id=ctx.session_id,
                    worker=worker,
                    child_session_id=child,
                    output=out.text,
                    tool_call_id=call_id,
                )
            )
            return out

        outputs = await run_all([lambda job=job: delegate(*job) for job in jobs])  # type: ignore[misc]
        report = "\n".join(f"{w}: {o.text}" for (w, *_), o in zip(jobs, outputs, strict=True))
        final = await ctx.call_model(ModelRequest(messages=[*messages, Message.user(report)]))
        return Output.of(final.text)


def nested() -> Coordinator:
    return Coordinator({"coder": Reviewed(), "writer": Reviewed()})


def nested_model() -> ScriptedModel:
    """Scripts for one run of `nested()`: the coder needs two rounds, the writer one."""
    return ScriptedModel(
        {
            "supervisor": [
                Reply(
                    text="I will ask the coder and the writer.",
                    tool_calls=[
                        call("delegate", {"worker": "coder", "instructions": "Write add(a, b)."}),
                        call("delegate", {"worker": "writer", "instructions": "Document add."}),
                    ],
                ),
                "Done: add is written and documented.",
            ],
            "coder.actor": ["def add(a, b): return a - b", "def add(a, b): return a + b"],
            "coder.critic": [
                '{"score": 0.3, "summary": "subtracts instead of adding"}',
                '{"score": 0.95, "summary": "correct"}',
            ],
            "writer.actor": ["add(a, b) returns the sum of a and b."],
            "writer.critic": ['{"score": 0.9, "summary": "clear"}'],
        },
        model_name="scripted",
    )


def nested_router() -> Router:
    return Router({"default": nested_model()})
