"""The refund desk's tools (refund_desk.toml names them by import path).

`lookup_order` only reads (`read_only`, runs inline under the spec's `[approvals]`);
`issue_refund` moves money (`destructive`, so the run stops at a gate until someone
approves). The refund passes its idempotency key on, so a step retried after a crash
cannot pay twice at a provider that honours the key.
"""

from __future__ import annotations

import json

import jeeves


@jeeves.tool(approval="read_only")
def lookup_order(order_id: str) -> str:
    """Look an order up: what was paid, by whom."""
    return json.dumps({"order_id": order_id, "paid": 42.0, "customer": "dana@example.com"})


@jeeves.tool(approval="destructive")
def issue_refund(order_id: str, amount: float) -> str:
    """Refund an order through the payment provider."""
    return (
        f"refunded {amount:.2f} on order {order_id} (idempotency key {jeeves.agent.tools.idempotency_key()})"
    )
