"""Which tool calls are gated: a wrapper around a tool, given the run's approval policy.

`Gated(tool, policy)` is the tool as `policy` (`jeeves.approvals.Approvals`) sorts its calls,
one by one, on the call's name, the tool's approval mode and the call's arguments:

- **run**: the tool's own call, unchanged (one step index);
- **ask**: the kernel's journaled gate step (`jeeves._run.gates.pass_gate`) first, then the
  tool's call if the gate approves it: two step indices, the gate's then the tool's, both
  taken when the call is prepared, in the order the model listed the turn's calls;
- **refuse**: no step at all; the model reads the policy's refusal.

An Agent does not gate anything itself: each turn it wraps the tools it offers (its own
and every toolset's, an MCP server's or yours) with `gated(ctx, tools)`, the run's policy,
and runs them. A run without a policy gets its tools back unwrapped.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any

from jeeves._run.context import Context, StepResult
from jeeves._run.gates import pass_gate, run_policy
from jeeves._run.steps import next_index
from jeeves.agent.tools import Tool, ToolOutcome, ToolRun, WrapperTool
from jeeves.approvals.policy import DEFAULT_MODE, ApprovalMode, Approvals
from jeeves.messages import ToolCall

__all__ = ["Gated", "gated"]


class Gated(WrapperTool):
    """`wrapped`, each of its calls run, asked about (a gate) or refused as `policy` says."""

    def __init__(self, wrapped: Tool, policy: Approvals) -> None:
        super().__init__(wrapped)
        self.policy = policy

    def prepare(self, ctx: Context, call: ToolCall) -> ToolRun:
        """Take the call's step indices in `ctx` (the gate's, then the tool's, when the policy
        asks; none when it refuses) and return what runs it."""
        arguments = _json_object(call.arguments)
        if arguments is None:  # not a JSON object: nothing to gate on; the tool's own check refuses it
            return self.wrapped.prepare(ctx, call)
        mode: ApprovalMode | None = self.wrapped.approval
        action = self.policy.action(call.name, mode, arguments)
        if action == "run":
            return self.wrapped.prepare(ctx, call)
        if action == "refuse":
            return functools.partial(_refused, self.policy.refusal(call.name, mode))
        gate = next_index(ctx)
        run = self.wrapped.prepare(ctx, call)
        return functools.partial(_behind_gate, ctx, call, arguments, mode or DEFAULT_MODE, gate, run)


def gated(ctx: Context, tools: Mapping[str, Tool]) -> Mapping[str, Tool]:
    """`tools`, each `Gated` by the approval policy of `ctx`'s run; `tools` itself without one."""
    policy = run_policy(ctx)
    if policy is None:
        return tools
    return {name: Gated(tool, policy) for name, tool in tools.items()}


async def _refused(text: str) -> StepResult[ToolOutcome]:
    return StepResult(ToolOutcome(text=text, is_error=True), False)


async def _behind_gate(
    ctx: Context, call: ToolCall, arguments: dict[str, Any], mode: ApprovalMode, gate: int, run: ToolRun
) -> StepResult[ToolOutcome]:
    """Pass the call's gate (step `gate`), then run it; a denial is what the model reads."""
    refused = await pass_gate(ctx, call.name, call.id, arguments, mode, index=gate)
    if refused is not None:
        return await _refused(refused)
    return await run()


def _json_object(arguments: str) -> dict[str, Any] | None:
    try:
        value = json.loads(arguments or "{}")
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
