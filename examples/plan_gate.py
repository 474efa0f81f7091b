"""A plan gate: the critic refuses a refund plan before it touches the world, then passes a fixed one.

The seed's worked refund. `issue_refund` declares that a step calling it needs the order's
refund-window evidence, and the run's evidence manifest is what a read-only retrieval found
(`kg:refund_window:rw_881#snapshot_kg_2026_05_09_T0930`, journaled with the run). The
planner's plan A pins none: `verify` refuses it with `missing_evidence` on step 1, and no tool
runs (the count of tool calls says 0). The refusal goes back to the planner, whose plan B pins
the manifest's reference; it passes verify ("2 steps, 2 required outputs covered"), its two
steps run (look up, refund), five evaluators score the result (policy and safety hard-fail),
and the run completes with a `CriticReport` ("verify and score passed").

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
from jeeves.critics.plan import DecisionSpec, Evidence

ORDER = {"order_id": "ord_881", "payment_id": "pay_8861", "total_inr": 24500, "status": "delivered damaged"}
WINDOW = "kg:refund_window:rw_881#snapshot_kg_2026_05_09_T0930"
LIMIT_INR = 30000


class Shop:
    """An in-memory shop that counts every tool call."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.refunded: dict[str, int] = {}

    def tools(self) -> list[jeeves.Tool]:
        shop = self

        @jeeves.tool(approval="read_only")
        def lookup_order(order_id: str) -> str:
            """Look an order up by id."""
            shop.calls.append("lookup_order")
            return json.dumps(ORDER if order_id == ORDER["order_id"] else {"error": "no such order"})

        @jeeves.tool(approval="destructive", requires_evidence=["refund_window_evidence"])
        def issue_refund(payment_id: str, amount_inr: int) -> str:
            """Refund an amount (INR) on a payment."""
            shop.calls.append("issue_refund")
            shop.refunded[payment_id] = amount_inr
            return f"refunded {amount_inr} INR on {payment_id}"

        return [lookup_order, issue_refund]


def refund_window(task: str) -> list[Evidence]:
    """The read-only retrieval whose answer is the run's evidence manifest."""
    return [Evidence(id=WINDOW, classification="refund_window_evidence", summary="inside the 30-day window")]


def plan(*, pinned: bool) -> str:
    """Plan A (`pinned=False`) pins no refund-window evidence on the refund; plan B pins it."""
    refund: dict[str, object] = {
        "id": "refund",
        "tool": "issue_refund",
        "arguments": {"payment_id": "pay_8861", "amount_inr": 24500},
        "depends_on": ["lookup"],
        "estimated_tokens": 300,
    }
    if pinned:
        refund["evidence"] = {"refund_window_evidence": [WINDOW]}
    return json.dumps(
        {
            "plan_id": "refund-881-" + ("b" if pinned else "a"),
            "intent": "Refund order ord_881.",
            "outputs": ["refund_amount_inr", "refund_reason_class"],
            "steps": [
                {
                    "id": "lookup",
                    "tool": "lookup_order",
                    "arguments": {"order_id": "ord_881"},
                    "estimated_tokens": 800,
                },
                refund,
            ],
        }
    )


def refunds(result: str) -> list[int]:
    return [int(line.split("refunded ")[1].split()[0]) for line in result.splitlines() if "refunded " in line]


def policy(task: str, result: str) -> Verdict:
    """Hard-fail: a refund is issued and none is over the policy limit."""
    over = [
        f"refund of {a} INR is over the {LIMIT_INR} INR policy limit"
        for a in refunds(result)
        if a > LIMIT_INR
    ]
    return Verdict(score=0.0 if over or not refunds(result) else 1.0, issues=over)


def safety(task: str, result: str) -> Verdict:
    """Hard-fail: refunds go to the order's own payment."""
    return Verdict(score=1.0 if "on pay_8861" in result else 0.0)


def correctness(task: str, result: str) -> Verdict:
    """The refund is the order's total."""
    return Verdict(score=1.0 if refunds(result) == [ORDER["total_inr"]] else 0.0)


def completeness(task: str, result: str) -> Verdict:
    """The order was looked up before it was refunded."""
    return Verdict(score=1.0 if '"order_id"' in result else 0.5)


def build(shop: Shop) -> PlanExecute:
    return PlanExecute(
        Agent("You plan refunds for a shop's support desk.", role="planner"),
        tools=shop.tools(),
        evidence=refund_window,
        spec=DecisionSpec(
            required_outputs=["refund_amount_inr", "refund_reason_class"]
        ),  # 12 steps, 8000 tokens
        evaluators=[policy, safety, correctness, completeness, LLMCritic()],
        hard=["policy", "safety"],
        replan_budget=2,
    )


def offline_router() -> Router:
    review = json.dumps(
        {"score": 0.9, "issues": [], "summary": "The refund matches the order and its window."}
    )
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
        build(shop), "Refund order ord_881: it arrived damaged.", router=router, session_id="refund"
    ) as events:
        async for event in events:
            if event.type == "plan.verified":
                verdict = (
                    f"verified ({'; '.join(event.reasons)})"
                    if event.ok
                    else f"refused: {event.kind} on step {event.offending_step} ({event.offending_step_id!r})"
                )
                print(
                    f"plan {event.plan_id} (attempt {event.attempt}): {verdict}; tool calls so far: {len(shop.calls)}"
                )
            elif event.type == "session.completed" and "__step_" in event.session_id:
                print(f"  {event.session_id.rsplit('__', 1)[1]}: {event.output}")
            elif event.type == "plan.decided":
                print(f"  decision after {event.phase}: {event.decision} ({event.status}: {event.rationale})")
        result = await events.result()
    detail = result.detail
    assert isinstance(detail, PlanExecuteOutput) and detail.report is not None
    card = detail.report.score
    if card is not None:
        print(
            "scorecard: "
            + ", ".join(f"{i.name}{' (hard)' if i.hard else ''} {i.score:.2f}" for i in card.items)
        )
    print(f"report: {detail.report.status}: {detail.report.rationale}")
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
