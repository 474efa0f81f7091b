"""The process the PlanExecute crash test kills: a refund plan whose tool and model calls are
counted in a file.

Run as `python -m tests.architectures.plan_crash_child DIR [block]`. The planner is a
FunctionModel and each tool appends its name to `DIR/calls`, so calls are counted across
processes. With `block`, the first `eval_policy` call (the plan's second step) writes
`DIR/blocked`, prints `blocked` and hangs until killed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio

import jeeves
from jeeves import Agent, FunctionModel, PlanExecute
from jeeves.messages import ModelRequest
from tests.architectures.test_plan_execute import SPEC, order_record, refund_plan
from tests.waiting import hang_until_killed


def build(root: Path, block: bool) -> tuple[PlanExecute, FunctionModel]:
    def note(name: str) -> None:
        with (root / "calls").open("a") as f:
            f.write(name + "\n")

    @jeeves.tool(approval="read_only")
    def lookup_order(order_id: str) -> str:
        """Look an order up."""
        note("lookup_order")
        return json.dumps({"order_id": order_id, "total": 42.0})

    @jeeves.tool(approval="read_only")
    def eval_policy(reason: str) -> str:
        """Evaluate the refund policy."""
        note("eval_policy")
        if block and not (root / "blocked").exists():
            (root / "blocked").write_text("1")
            print("blocked", flush=True)  # the test waits for this line, then kills
            hang_until_killed()  # until SIGKILL (stdin held open by the test)
        return "refundable"

    @jeeves.tool(approval="destructive")
    def issue_refund(order_id: str, amount: float) -> str:
        """Refund an order."""
        note("issue_refund")
        return f"refunded {amount} on {order_id}"

    def plan(request: ModelRequest) -> str:
        note("planner")
        return refund_plan(pinned=True)

    arch = PlanExecute(
        Agent("You plan refunds.", role="planner"),
        tools=[lookup_order, eval_policy, issue_refund],
        spec=SPEC,
        evaluators=[lambda task, output: "refunded 42.0" in output],
        evidence=order_record,
    )
    return arch, FunctionModel(plan)


async def plan_run(root: Path, block: bool = False) -> jeeves.RunResult:
    arch, model = build(root, block)
    return await jeeves.run(
        arch, "Refund order 881.", model=model, journal=str(root / "runs.db"), session_id="p-1"
    )


if __name__ == "__main__":
    directory, *rest = sys.argv[1:]
    result = anyio.run(plan_run, Path(directory), bool(rest))
    print(json.dumps({"stop_reason": result.stop_reason}))
