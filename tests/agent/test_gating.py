"""The gating wrapper (`jeeves.agent.gating`): the run's policy sorts each call of a tool,
whatever the tool's source; a gated call's gate is the kernel's journaled step."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping, Sequence, Set
from contextlib import AbstractAsyncContextManager
from typing import Any

import pytest

import jeeves
from jeeves import Agent, MemoryJournal
from jeeves._run.context import Context, Output
from jeeves.agent import Tool, ToolContext, ToolOutcome, Toolset, tool
from jeeves.agent.gating import Gated, gated
from jeeves.agent.tools import WrapperTool
from jeeves.approvals import Approvals, Decision, PendingGate, record_decision
from jeeves.messages import ModelRequest, ToolCall
from jeeves.testing import FunctionModel, Reply, call

pytestmark = pytest.mark.anyio


def _tools(ran: list[str]) -> dict[str, Tool]:
    @tool(approval="read_only")
    def lookup(order_id: str) -> str:
        """Look an order up."""
        ran.append("lookup")
        return f"order {order_id}: 12.5"

    @tool(approval="network")
    def notify(to: str) -> str:
        """Send a note."""
        ran.append("notify")
        return f"sent to {to}"

    @tool(approval="destructive")
    def wipe(order_id: str) -> str:
        """Delete an order."""
        ran.append("wipe")
        return "wiped"

    return {t.name: t for t in (lookup, notify, wipe)}


class _Driver:
    """A custom architecture that runs tool calls itself, through `gated` and `Tool.prepare`."""

    name = "driver"

    def __init__(self, tools: Mapping[str, Tool], calls: Sequence[ToolCall]) -> None:
        self.tools, self.calls = tools, calls
        self.seen: Mapping[str, Tool] = {}

    async def run(self, ctx: Context, task: str) -> Output:
        self.seen = gated(ctx, self.tools)
        runs = [self.seen[c.name].prepare(ctx, c) for c in self.calls]  # indices in call order
        outcomes = [(await r()).value for r in reversed(runs)]  # run order does not matter
        return Output.of(" | ".join(o.text for o in reversed(outcomes)))


async def _approve(gate: PendingGate) -> Decision:
    return Decision.approve(gate, by="alice")


async def test_without_a_policy_the_tools_come_back_as_they_are() -> None:
    tools = _tools([])
    driver = _Driver(tools, [call("lookup", {"order_id": "1"}, id="c1")])
    await jeeves.run(driver, "go")
    assert driver.seen is tools

    await jeeves.run(driver, "go", approvals=Approvals())
    assert all(isinstance(t, Gated) and t.wrapped is tools[n] for n, t in driver.seen.items())
    gated_notify = driver.seen["notify"]
    assert (gated_notify.name, gated_notify.approval, gated_notify.spec()) == (
        "notify",
        "network",
        tools["notify"].spec(),
    )
    assert repr(gated_notify) == "Gated(Tool('notify'))"


async def test_each_call_runs_asks_or_is_refused_and_a_gate_takes_its_index_before_the_tool() -> None:
    ran: list[str] = []
    journal = MemoryJournal()
    policy = Approvals(auto=("read_only",), refuse_above="network")
    calls = [
        call("notify", {"to": "bob"}, id="c1"),  # asks: gate 0, tool 1
        call("wipe", {"order_id": "7"}, id="c2"),  # refused: no step
        call("lookup", {"order_id": "7"}, id="c3"),  # runs: tool 2
    ]
    result = await jeeves.run(
        _Driver(_tools(ran), calls),
        "go",
        journal=journal,
        session_id="g",
        approvals=policy,
        approver=_approve,
    )
    assert result.status == "completed"
    assert sorted(ran) == ["lookup", "notify"]
    sent, refused, looked = result.text.split(" | ")
    assert (sent, looked) == ("sent to bob", "order 7: 12.5")
    assert "above this run's safety mode (network)" in refused
    steps = [await journal.get_step("g", i) for i in range(4)]
    assert [(s.kind, s.name) for s in steps if s is not None] == [
        ("gate", "notify"),
        ("tool", "notify"),
        ("tool", "lookup"),
    ]
    assert steps[3] is None


async def test_a_denied_call_is_not_run_and_its_tool_index_stays_taken() -> None:
    ran: list[str] = []
    journal = MemoryJournal()

    async def deny(gate: PendingGate) -> Decision:
        return Decision.deny(gate, by="bob", note="not today")

    calls = [call("notify", {"to": "x"}, id="c1"), call("lookup", {"order_id": "1"}, id="c2")]
    result = await jeeves.run(
        _Driver(_tools(ran), calls),
        "go",
        journal=journal,
        session_id="d",
        approvals=Approvals(),
        approver=deny,
    )
    assert ran == ["lookup"]
    assert result.text.startswith("Denied by bob (not today): notify was not run.")
    kinds = [(s.kind, s.name) if s else None for s in [await journal.get_step("d", i) for i in range(3)]]
    assert kinds == [("gate", "notify"), None, ("tool", "lookup")]


async def test_arguments_that_are_not_an_object_reach_the_tools_own_check_ungated() -> None:
    ran: list[str] = []
    calls = [ToolCall(id="c1", name="wipe", arguments="[1]")]
    result = await jeeves.run(_Driver(_tools(ran), calls), "go", approvals=Approvals())
    assert result.status == "completed" and ran == []
    assert result.text.startswith("Invalid arguments for tool 'wipe'")


class _Vault(Toolset):
    """A tool source of the user's own: no MCP, nothing about approvals in it."""

    name = "vault"

    def __init__(self, ran: list[str]) -> None:
        self.ran = ran

    def session(self) -> AbstractAsyncContextManager[object]:
        return contextlib.nullcontext()

    async def tools(self, ctx: Context, taken: Set[str]) -> Sequence[Tool]:
        ran = self.ran

        @tool(approval="destructive")
        def shred(doc: str) -> str:
            """Shred a document."""
            ran.append(doc)
            return f"shredded {doc}"

        return [shred]


def _shredder(ran: list[str]) -> Agent:
    def act(request: ModelRequest) -> Reply:
        results = [m for m in request.messages if m.role == "tool"]
        if results:
            return Reply(text=f"done: {results[-1].content}")
        return Reply(tool_calls=[call("shred", {"doc": "q3.pdf"}, id="s1")])

    return Agent("You shred.", tools=[_Vault(ran)], model=FunctionModel(act))


async def test_a_custom_tool_source_is_gated_by_the_runs_policy_with_no_code_of_its_own() -> None:
    ran: list[str] = []
    journal = MemoryJournal()
    first = await jeeves.run(_shredder(ran), "shred", journal=journal, session_id="v", approvals=Approvals())
    assert first.status == "awaiting_approval" and ran == []
    (gate,) = first.pending
    assert (gate.tool, gate.mode, gate.arguments, gate.step) == ("shred", "destructive", {"doc": "q3.pdf"}, 1)

    await record_decision(journal, gate.gate_id, Decision.approve(gate, by="alice"))
    done = await jeeves.resume(_shredder(ran), "v", journal=journal, approvals=Approvals())
    assert (done.status, done.text, ran) == ("completed", "done: shredded q3.pdf", ["q3.pdf"])

    ungated: list[str] = []
    assert (await jeeves.run(_shredder(ungated), "shred")).status == "completed" and ungated == ["q3.pdf"]


class _Counting(WrapperTool):
    """A user's own wrapper: counts the calls that reach the tool."""

    def __init__(self, wrapped: Tool) -> None:
        super().__init__(wrapped)
        self.count = 0

    async def invoke(self, arguments: str, context: ToolContext | None = None) -> ToolOutcome:
        self.count += 1
        return await super().invoke(arguments, context)


async def test_a_wrapper_tool_is_its_tool_and_is_gated_like_any_other() -> None:
    ran: list[str] = []
    counted = _Counting(_tools(ran)["wipe"])
    assert (counted.name, counted.approval, counted.description) == (
        "wipe",
        "destructive",
        "Delete an order.",
    )
    assert counted.step_request('{"order_id": "1"}') == {"name": "wipe", "arguments": '{"order_id": "1"}'}
    assert (await counted.invoke(json.dumps({"order_id": "1"}))).text == "wiped" and counted.count == 1

    seen: list[PendingGate] = []

    async def watch(gate: PendingGate) -> Decision:
        seen.append(gate)
        assert counted.count == 1  # the gate comes before the wrapped call
        return Decision.approve(gate, by="alice")

    driver = _Driver({"wipe": counted}, [call("wipe", {"order_id": "2"}, id="w")])
    result = await jeeves.run(driver, "go", approvals=Approvals(), approver=watch)
    assert (result.text, counted.count, [g.tool for g in seen]) == ("wiped", 2, ["wipe"])


def test_a_wrapper_that_would_pass_by_a_gate_is_refused_at_construction() -> None:
    inner = Gated(_tools([])["wipe"], Approvals())
    with pytest.raises(
        jeeves.UserError, match=r"_Counting cannot wrap Gated\(Tool\('wipe'\)\).*wrap the tool inside"
    ):
        _Counting(inner)
    assert Gated(inner, Approvals()).wrapped is inner  # a wrapper of the whole call may


def test_a_wrapper_reads_through_to_its_tool_but_not_before_it_has_one() -> None:
    bare: Any = WrapperTool.__new__(WrapperTool)
    with pytest.raises(AttributeError):
        _ = bare.name
