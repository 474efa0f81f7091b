"""The plan-gated refund desk's tools and policy check, for refund_plan.toml.

refund_plan.toml names them by import path (`refund_plan_tools:lookup_order`); a spec's directory is
importable while the spec is built, so this module needs no installing. The shop is a small
fixed table of orders, so the offline run is the same every time.
"""

from __future__ import annotations

import json

from jeeves import Verdict, tool

ORDERS: dict[str, dict[str, object]] = {
    "881": {"order_id": "881", "total": 42.0, "status": "delivered damaged"},
    "882": {"order_id": "882", "total": 19.5, "status": "delivered"},
}
"""Order id → record."""


@tool(approval="read_only")
def lookup_order(order_id: str) -> str:
    """Look an order up by id: its total and delivery status, as JSON."""
    return json.dumps(ORDERS.get(order_id, {"error": f"no order {order_id!r}"}))


@tool(approval="read_only")
def eval_policy(reason: str) -> str:
    """Say whether the refund policy covers a reason (damage on delivery is covered)."""
    return "refundable: damaged on delivery" if "damage" in reason.lower() else "not refundable"


@tool(approval="destructive")
def issue_refund(order_id: str, amount: float) -> str:
    """Refund an amount on an order. Irreversible."""
    return f"refunded {amount} on {order_id}"


def policy_check(task: str, result: str) -> Verdict:
    """Hard-fail policy: a plan must refund, and never more than the order's total."""
    refunds = [line.split("refunded ", 1)[1].split() for line in result.splitlines() if "refunded " in line]
    if not refunds:
        return Verdict(score=0.0, issues=["no refund was issued"])
    over = [
        f"{amount} on {order} is over the order total"
        for amount, _, order in refunds
        if float(amount) > float(str(ORDERS.get(order, {}).get("total", 0)))
    ]
    return Verdict(score=0.0 if over else 1.0, issues=over)
