"""A plan gate: the critic refuses a refund plan before it touches the world, then passes a fixed one.

The seed's worked refund. The planner's plan A looks the order up without pinning the order
record it relies on; `verify` refuses it with `missing_evidence` on step `lookup`, and no tool
runs (the count of tool calls says 0). The refusal goes back to the planner, whose plan B pins
`order:881`; it passes verify, its three steps run (look up, evaluate the policy, refund), a
policy check (hard-fail) and an LLM reviewer score the result, and the run completes with a
`CriticReport`.

Offline (the default) the planner and the reviewer are scripted. `--live` sends the planner
to `$JEEVES_MODEL` (default `openai/gpt-4o-mini`) and the reviewer to `$JEEVES_CRITIC_MODEL`:

    python examples/plan_gate.py
    python examples/plan_gate.py --live
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import anyio

import jeeves
from jeeves import Agent, LLMCritic, PlanExecute, Router, ScriptedModel, Verdict
from jeeves.architectures import PlanExecuteOutput
from jeeves.critics.plan import DecisionSpec

ORDERS = {"881": {"order_id": "881", "total": 42.0, "status": "delivered damaged"}}


class Shop:
    """An in-memory shop that counts every tool call."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.refunded: dict[str, float] = {}

    def tools(self) -> list[jeeves.Tool]:
        shop = self

        @jeeves.tool(approval="read_only")
        def lookup_order(order_id: str) -> str:
            """Look an order up by id."""
            shop.calls.append("lookup_order")
            return json.dumps(ORDERS.get(order_id, {"error": "no such order"}))

        @jeeves.tool(approval="read_only")
        def eval_policy(reason: str) -> str:
            """Say whether the refund policy covers a reason."""
            shop.calls.append("eval_policy")
            return "refundable: damaged on delivery" if "damage" in reason else "not refundable"

        @jeeves.tool(approval="destructive")
        def issue_refund(order_id: str, amount: float) -> str:
            """Refund an order."""
            shop.calls.append("issue_refund")
            shop.refunded[order_id] = amount
            return f"refunded {amount} on {order_id}"

        return [lookup_order, eval_policy, issue_refund]


def plan(*, pinned: bool) -> str:
    """Plan A (`pinned=False`) relies on the order record without pinning it; plan B pins it."""
    return json.dumps(
        {
            "plan_id": "refund-881-" + ("b" if pinned else "a"),
            "intent": "Refund order 881 if the policy covers the damage.",
            "outputs": ["refund_amount", "refund_reason_class"],
            "steps": [
                {
                    "id": "lookup",
                    "tool": "lookup_order",
                    "arguments": {"order_id": "881"},
                    "evidence_required": ["order_record"],
                    "evidence": {"order_record": ["order:881"]} if pinned else {},
                    "estimated_tokens": 800,
                },
                {
                    "id": "policy",
                    "tool": "eval_policy",
                    "arguments": {"reason": "damaged on delivery"},
                    "depends_on": ["lookup"],
                    "outputs": ["refund_reason_class"],
                    "estimated_tokens": 1200,
                },
                {
                    "id": "refund",
                    "tool": "issue_refund",
                    "arguments": {"order_id": "881", "amount": 42.0},
                    "depends_on": ["policy"],
                    "outputs": ["refund_amount"],
                    "estimated_tokens": 300,
                },
            ],
        }
    )


def policy(task: str, result: str) -> Verdict:
    """Hard-fail policy check: a refund is never more than the order's total."""
    refunds = [line for line in result.splitlines() if "refunded" in line]
    over = [line for line in refunds if float(line.split("refunded ")[1].split()[0]) > ORDERS["881"]["total"]]
    return Verdict(
        score=0.0 if over or not refunds else 1.0, issues=["a refund exceeds the order total"] if over else []
    )


def build(shop: Shop) -> PlanExecute:
    return PlanExecute(
        Agent("You plan refunds for a shop's support desk.", role="planner"),
        tools=shop.tools(),
        spec=DecisionSpec(
            required_outputs=["refund_amount", "refund_reason_class"], max_steps=12, max_plan_tokens=8000
        ),
        evaluators=[policy, LLMCritic()],
        hard=["policy"],
        replan_budget=2,
    )


def offline_router() -> Router:
    review = json.dumps({"score": 0.9, "issues": [], "summary": "The refund matches the policy."})
    return Router(
        {
            "default": ScriptedModel(
                {"planner": [plan(pinned=False), plan(pinned=True)]}, model_name="scripted"
            ),
            "evaluator": ScriptedModel([review], model_name="scripted-reviewer"),
        }
    )


def live_router() -> Router:
    model = os.environ.get("JEEVES_MODEL", "openai/gpt-4o-mini")
    return Router({"default": model, "evaluator": os.environ.get("JEEVES_CRITIC_MODEL", model)})


async def main(live: bool) -> int:
    shop = Shop()
    router = live_router() if live else offline_router()
    async with jeeves.stream(
        build(shop), "Refund order 881: it arrived damaged.", router=router, session_id="refund"
    ) as events:
        async for event in events:
            if event.type == "plan.verified":
                verdict = (
                    "verified" if event.ok else f"refused: {event.kind} on step {event.offending_step!r}"
                )
                print(
                    f"plan {event.plan_id} (attempt {event.attempt}): {verdict}; tool calls so far: {len(shop.calls)}"
                )
            elif event.type == "session.completed" and "__step_" in event.session_id:
                print(f"  {event.session_id.rsplit('__', 1)[1]}: {event.output}")
            elif event.type == "plan.decided":
                print(f"  decision after {event.phase}: {event.decision} ({event.status})")
        result = await events.result()
    detail = result.detail
    assert isinstance(detail, PlanExecuteOutput) and detail.report is not None
    print(f"report: {detail.report.rationale}")
    print(f"stop reason: {result.stop_reason}; tool calls: {len(shop.calls)}; refunded: {shop.refunded}")
    return 0 if result.stop_reason == "completed" else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--live", action="store_true", help="use real models through litellm")
    args = parser.parse_args()
    try:
        sys.exit(anyio.run(main, args.live))
    except jeeves.JeevesError as exc:  # a missing API key, a provider that failed: one line, no traceback
        sys.exit(f"error: {exc}")
