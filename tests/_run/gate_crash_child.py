"""The process the gate crash tests kill: a support agent whose refund needs approval.

Run as `python -m tests._run.gate_crash_child DIR POINT`, POINT one of:
- `before`: the read-only `lookup` call before the gate writes `DIR/blocked` and hangs;
- `waiting`: the live approver writes `DIR/blocked` and never answers;
- `after`: the gate is approved, then the refund writes `DIR/blocked` and hangs.
The test kills it with SIGKILL once `DIR/blocked` exists. Every model call appends a line
to `DIR/calls`; every refund call appends its idempotency key to `DIR/refund_calls`, and
the "payment provider" (`DIR/refunds`) applies each key once, as a real one would.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio

import jeeves
from jeeves import Agent
from jeeves.approvals.decide import Approvals, Decision, PendingGate
from jeeves.messages import ModelRequest
from jeeves.testing import FunctionModel, Reply, call
from tests.waiting import hang_until_killed


def build(root: Path, point: str | None) -> Agent:
    @jeeves.tool(approval="read_only")
    def lookup(order_id: str) -> str:
        """Look an order up."""
        if point == "before":
            (root / "blocked").write_text("1")
            print("blocked", flush=True)  # the test waits for this line
            hang_until_killed()  # until SIGKILL (stdin held open by the test)
        return json.dumps({"order_id": order_id, "paid": 12.5})

    @jeeves.tool(approval="destructive")
    def issue_refund(order_id: str, amount: float) -> str:
        """Refund an order."""
        key = jeeves.agent.tools.idempotency_key()
        with (root / "refund_calls").open("a") as f:
            f.write(key + "\n")
        if point == "after":
            (root / "blocked").write_text("1")
            print("blocked", flush=True)  # the test waits for this line
            hang_until_killed()  # until SIGKILL (stdin held open by the test)
        applied = root / "refunds"
        keys = applied.read_text().splitlines() if applied.exists() else []
        if key not in keys:  # the provider dedupes by idempotency key
            applied.write_text("".join(k + "\n" for k in [*keys, key]))
        return f"refunded {amount} on {order_id}"

    def act(request: ModelRequest) -> Reply:
        with (root / "calls").open("a") as f:
            f.write(f"{len(request.messages)}\n")
        results = [m for m in request.messages if m.role == "tool"]
        if not results:
            return Reply(tool_calls=[call("lookup", {"order_id": "881"})])
        if len(results) == 1:
            return Reply(tool_calls=[call("issue_refund", {"order_id": "881", "amount": 12.5})])
        return Reply(text=f"Done: {results[-1].content}")

    return Agent("You handle refunds.", tools=[lookup, issue_refund], model=FunctionModel(act), max_turns=5)


POLICY = Approvals(auto=("read_only", "local_write"))


async def approve(gate: PendingGate) -> Decision:
    return Decision.approve(gate, by="alice", note="checked the invoice")


async def gated_run(root: Path, point: str | None = None) -> jeeves.RunResult:
    async def hang(gate: PendingGate) -> Decision:
        (root / "blocked").write_text("1")
        print("blocked", flush=True)  # the test waits for this line
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    return await jeeves.run(
        build(root, point),
        "Refund order 881",
        journal=str(root / "runs.db"),
        session_id="t-881",
        approvals=POLICY,
        approver=hang if point == "waiting" else approve,
    )


async def resumed(root: Path) -> jeeves.RunResult:
    return await jeeves.resume(
        build(root, None), "t-881", journal=str(root / "runs.db"), approvals=POLICY, approver=approve
    )


if __name__ == "__main__":
    directory, point = sys.argv[1:]
    result = anyio.run(gated_run, Path(directory), point)
    print(json.dumps({"status": result.status}))
