"""Budget slices: each step of a plan runs under its own slice of the run's budget.

A research desk plans two independent look-ups and a summary that needs both. Each step gets
`step_budget` (at most 4 model calls), its tokens capped by the planner's estimate with 50%
headroom, and never more than what remains of the run's `Budget` when it starts. Offline, the
`deep` look-up spends 120 tokens on its first call, so its next call could cross its 150-token
slice and is refused: that step fails with `budget_exceeded`, its sibling `quick` completes,
the summary never runs, and the planner replans without the deep dive. The run's own budget
was never at risk, and each token is counted once in the run's totals.

Offline (the default) the models are scripted. `--live` sends every role to `$JEEVES_MODEL`
(default `openai/gpt-4o-mini`); a cooperative model stays within its slices:

    python examples/step_budgets.py
    python examples/step_budgets.py --live
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import anyio

import jeeves
from jeeves import Agent, Budget, PlanExecute, Router, ScriptedModel
from jeeves.architectures import PlanExecuteOutput
from jeeves.messages import Usage
from jeeves.models.testing import Reply, call


@jeeves.tool(approval="read_only")
def search(query: str) -> str:
    """Search the notes."""
    return f"notes on {query!r}: the outage began at 09:12 after a config push"


def step(id: str, task: str, estimate: int, *after: str) -> dict[str, object]:
    return {
        "id": id,
        "worker": "analyst",
        "arguments": {"task": task},
        "depends_on": list(after),
        "estimated_tokens": estimate,
    }


def plan(plan_id: str, *steps: dict[str, object]) -> str:
    return json.dumps({"plan_id": plan_id, "intent": "Explain the outage.", "steps": list(steps)})


WIDE = plan(
    "wide",
    step("quick", "When did the outage start?", 100),
    step("deep", "Trace every config change of the week.", 100),
    step("summary", "Summarise the findings.", 100, "quick", "deep"),
)
NARROW = plan(
    "narrow",
    step("quick", "When did the outage start?", 100),
    step("summary", "Summarise the findings.", 100, "quick"),
)


def build() -> PlanExecute:
    return PlanExecute(
        Agent("You plan incident research. Give each step a token estimate.", role="planner"),
        workers={"analyst": Agent("You research incidents with the notes.", tools=[search])},
        evaluators=[lambda task, result: "09:12" in result],
        step_budget=Budget(max_model_calls=4),
        estimate_headroom=1.5,
    )


def offline_router() -> Router:
    def used(tokens: int) -> Usage:
        return Usage(input_tokens=tokens, model_calls=1)

    found = "The outage began at 09:12."
    return Router(
        {
            "default": ScriptedModel(
                {
                    "planner": [Reply(WIDE, usage=used(200)), Reply(NARROW, usage=used(200))],
                    "incident__plan_0__step_0": [Reply(found, usage=used(40))],
                    "incident__plan_0__step_1": [
                        Reply(tool_calls=[call("search", {"query": "config changes"})], usage=used(120))
                    ],
                    "incident__plan_1__step_0": [Reply(found, usage=used(40))],
                    "incident__plan_1__step_1": [Reply(f"Summary: {found}", usage=used(60))],
                },
                model_name="scripted",
            )
        }
    )


def live_router() -> Router:
    return Router({"default": os.environ.get("JEEVES_MODEL", "openai/gpt-4o-mini")})


async def main(live: bool) -> int:
    router = live_router() if live else offline_router()
    print("each step: at most 4 model calls, and its estimate x 1.5 tokens")
    async with jeeves.stream(
        build(),
        "Why did Tuesday's outage happen?",
        router=router,
        session_id="incident",
        budget=Budget(max_tokens=5000),
    ) as events:
        async for event in events:
            where = event.session_id.rsplit("__", 1)[-1]
            if event.type == "plan.verified":
                print(f"plan {event.plan_id} (attempt {event.attempt})")
            elif event.type == "budget.sliced":
                print(f"  {where}: slice of {event.max_tokens} tokens, {event.max_model_calls} model calls")
            elif event.type == "budget.exceeded":
                whose = (
                    f"the slice of {event.slice_id.rsplit('__', 1)[-1]}"
                    if event.slice_id
                    else "the run's budget"
                )
                print(f"  {where}: {event.limit} ran out in {whose} ({event.spent:g} of {event.allowed:g})")
            elif event.type == "plan.decided":
                print(f"  decision: {event.decision} ({event.rationale})")
        result = await events.result()
    detail = result.detail
    assert isinstance(detail, PlanExecuteOutput)
    for s in detail.steps:
        print(f"step {s.step_id}: {'failed: ' + str(s.failure) if s.failed else 'done'}")
    print(f"stop reason: {result.stop_reason}; run tokens: {result.usage.total_tokens} (each counted once)")
    return 0 if result.stop_reason == "completed" else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--live", action="store_true", help="use real models through litellm")
    args = parser.parse_args()
    try:
        sys.exit(anyio.run(main, args.live))
    except jeeves.JeevesError as exc:  # a missing API key, a provider that failed: one line, no traceback
        sys.exit(f"error: {exc}")
