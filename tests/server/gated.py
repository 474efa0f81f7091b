"""Runs with approval gates for the server tests: a refund agent, alone or as a supervisor's worker.

    refund (Agent)                       supervisor (Supervisor)
      issue_refund(881, 12.5)  ← gate      └── refunds (Agent): issue_refund ← gate

`issue_refund` is `destructive`; `POLICY` asks for it. The tool and the model count their
calls in `CALLS` (in-process tests) and, when `JEEVES_TEST_COUNTS` names a file, append a
line per call there (tests driving a server in another process count across its restarts).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable

from jeeves import Agent, Router, Supervisor, tool
from jeeves.approvals.decide import Approvals
from jeeves.messages import ModelRequest
from jeeves.testing import FunctionModel, Reply, call

CALLS: Counter[str] = Counter()
REFUND = {"order_id": "881", "amount": 12.5}
POLICY = Approvals(auto=("read_only", "local_write", "delegated"))
"""Refunds need approval; looking things up, writing locally and delegating do not."""


def count(what: str) -> None:
    CALLS[what] += 1
    path = os.environ.get("JEEVES_TEST_COUNTS")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(what + "\n")


@tool(approval="destructive")
def issue_refund(order_id: str, amount: float) -> str:
    """Refund an order (cannot be undone)."""
    count("issue_refund")
    return f"refunded {amount} on order {order_id}"


def _refund_turn(request: ModelRequest) -> str | Reply:
    """The refund agent: call the tool, then report what the tool said (or that it could not)."""
    results = [m for m in request.messages if m.role == "tool"]
    if not results:
        return Reply(text="Refunding.", tool_calls=[call("issue_refund", REFUND, id="c1")])
    last = results[-1].content or ""
    return "Refunded order 881." if last.startswith("refunded") else f"Could not refund: {last}"


def _supervisor_turn(request: ModelRequest) -> str | Reply:
    if not any(m.role == "tool" for m in request.messages):
        return Reply(tool_calls=[call("delegate", {"worker": "refunds", "instructions": "Refund 881."})])
    return "Done: order 881 is refunded."


def counted(turn: Callable[[ModelRequest], str | Reply]) -> Callable[[ModelRequest], str | Reply]:
    def answer(request: ModelRequest) -> str | Reply:
        reply = turn(request)
        count("model")
        return reply

    return answer


def refund_agent() -> Agent:
    return Agent("Handle refunds.", role="refund", tools=[issue_refund])


def refund_entry() -> tuple[Agent, Router]:
    """A fresh refund agent and its router. The model is a function of the conversation (as a
    real one is), so a run resumed in another process gets the same answers."""
    return refund_agent(), Router({"default": FunctionModel(counted(_refund_turn))})


def team() -> Supervisor:
    return Supervisor({"refunds": refund_agent()})


def _team_turn(request: ModelRequest) -> str | Reply:
    return _refund_turn(request) if "refunds" in request.role_path else _supervisor_turn(request)


def team_entry() -> tuple[Supervisor, Router]:
    return team(), Router({"default": FunctionModel(counted(_team_turn))})
