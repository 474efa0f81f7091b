"""A refund that waits for a person: the run suspends at its gate, the process exits, and a
decision made later, from another process, lets it finish.

    python examples/refund_with_approval.py start --journal runs.db   # suspends, exits
    jeeves runs runs.db --status awaiting_gate
    jeeves approve runs.db t-881 --by alice --note "checked the invoice"
    jeeves resume runs.db t-881 --approvals examples.refund_with_approval:POLICY   # the refund runs once

Or all three steps in one go, each in its own process: `python examples/refund_with_approval.py`
(`--live` sends the agent to `$JEEVES_MODEL`, default `openai/gpt-4o-mini`, through litellm).

The support agent looks the order up (`read_only`: runs inline) and issues the refund
(`destructive`: gated). Its model is a FunctionModel, so everything runs offline; the
journal names this file's `build()` as the architecture, so `jeeves resume` rebuilds it
without being told. The approval policy is `POLICY`, in code: the resume is given it
(`--approvals`), since a resume never enforces the copy the journal records.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import anyio

import jeeves
from jeeves import Agent
from jeeves.approvals import Allow, Approvals
from jeeves.errors import MissingCredentials
from jeeves.messages import ModelRequest
from jeeves.testing import FunctionModel, Reply, call


@jeeves.tool(approval="read_only")
def lookup_order(order_id: str) -> str:
    """Look an order up."""
    return json.dumps({"order_id": order_id, "paid": 42.0, "customer": "dana@example.com"})


@jeeves.tool(approval="destructive")
def issue_refund(order_id: str, amount: float) -> str:
    """Refund an order through the payment provider."""
    key = jeeves.agent.tools.idempotency_key()  # give it to the provider: a retried step is absorbed
    return f"refunded {amount:.2f} on order {order_id} (idempotency key {key})"


def support(request: ModelRequest) -> Reply:
    """The scripted support model: look up, refund, report (what a real model would do)."""
    results = [m for m in request.messages if m.role == "tool"]
    if not results:
        return Reply(tool_calls=[call("lookup_order", {"order_id": "881"})])
    if len(results) == 1:
        return Reply(tool_calls=[call("issue_refund", {"order_id": "881", "amount": 42.0})])
    return Reply(text=f"Done. {results[-1].content}")


LIVE = "REFUND_EXAMPLE_LIVE"
"""Set by `--live` for this process and the ones it starts: `build()` then routes to a real model."""


def build() -> Agent:
    live = os.environ.get(LIVE) == "1"
    return Agent(
        "You handle refunds for Ourco.",
        tools=[issue_refund, lookup_order],
        model=os.environ.get("JEEVES_MODEL", "openai/gpt-4o-mini")
        if live
        else FunctionModel(support, model_name="scripted-support"),
    )


POLICY = Approvals(
    auto=("read_only", "local_write"),
    rules=[Allow("send_email", where={"to": "*@ourco.com"})],
    gate_ttl_s=24 * 3600,
)


async def start(journal: str) -> None:
    try:
        result = await jeeves.run(
            build(),
            "Refund order 881",
            journal=journal,
            session_id="t-881",
            approvals=POLICY,
            architecture_ref="examples.refund_with_approval:build",
        )
    except MissingCredentials as exc:
        print(f"error: {exc}")
        sys.exit(1)
    print(f"status: {result.status}")
    for gate in result.pending:
        print(f"pending: {gate.gate_id} {gate.tool}({gate.arguments}) mode={gate.mode}")


def _child(*args: str) -> str:
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True)
    if done.returncode != 0:
        print(done.stdout + done.stderr, end="")
        sys.exit(done.returncode)
    return done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("step", nargs="?", choices=["start", "all"], default="all")
    parser.add_argument("--journal", default=".jeeves/refunds.db")
    parser.add_argument("--live", action="store_true", help="use a real model through litellm")
    args = parser.parse_args()
    if args.live:
        os.environ[LIVE] = "1"
    if args.step == "start":
        anyio.run(start, args.journal)
        return
    Path(args.journal).unlink(missing_ok=True)
    here = Path(__file__).resolve()
    first = _child(str(here), "start", "--journal", args.journal)
    print("1. " + first.strip().replace("\n", "\n   "))
    approved = _child("-m", "jeeves", "approve", args.journal, "t-881", "--by", "alice", "--note", "checked")
    print("2. " + approved.splitlines()[0])
    resumed = _child(
        "-m", "jeeves", "resume", args.journal, "t-881", "--approvals", "examples.refund_with_approval:POLICY"
    )
    print("3. " + resumed.strip().replace("\n", "\n   "))


if __name__ == "__main__":
    main()
