"""Architectures the replay tests record and replay; importable, so `architecture_ref` can name them.

`model()` answers every role deterministically from the request alone (never from a call
counter), so a run, its replay and a resumed run all see the same replies.
"""

from __future__ import annotations

import json

import anyio

from jeeves import ActorCritic, Agent, FunctionModel, Output, Supervisor, tool
from jeeves._run.context import Context
from jeeves.critics import LLMCritic
from jeeves.messages import ModelRequest
from jeeves.testing import Reply, call

ARMED = {"tools": False}
"""Set True by tests that prove a replay reaches no tool: every tool call then fails the test."""


def _guard(name: str) -> None:
    if ARMED["tools"]:
        raise AssertionError(f"tool {name!r} ran during a replay")


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    _guard("add")
    for _ in range(10 if a % 2 else 0):  # finish out of order: odd calls yield to the others first
        await anyio.lowlevel.checkpoint()
    return a + b


@tool
def shout(text: str) -> str:
    """Upper-case a text."""
    _guard("shout")
    return text.upper()


def reply(request: ModelRequest) -> Reply:
    """Turn 0: two or three parallel tool calls; turn 1: one more call; turn 2: a summary."""
    turn = sum(1 for m in request.messages if m.role == "assistant")
    task = next(m.content or "" for m in request.messages if m.role == "user")
    seed = len(task)
    if turn == 0:
        calls = [call("add", {"a": seed, "b": i}) for i in range(2 + seed % 2)]
        return Reply(text="Adding.", tool_calls=calls)
    if turn == 1:
        return Reply(tool_calls=[call("shout", {"text": task[:12]})])
    results = [m.content for m in request.messages if m.role == "tool"]
    return Reply(text=f"{task[:12]}: {json.dumps(results)}")


def model() -> FunctionModel:
    return FunctionModel(reply, model_name="fixture-model")


def build_agent() -> Agent:
    """A tool-using agent: parallel tool calls, then a sequential one, then text."""
    return Agent("You add and shout.", role="adder", tools=[add, shout])


class Fanout:
    """Runs several agents in parallel, then a function step that reviews their outputs."""

    name = "fanout"

    def __init__(self, workers: int = 3) -> None:
        self.workers = workers

    async def run(self, ctx: Context, task: str) -> Output:
        outputs: list[str] = [""] * self.workers

        async def one(i: int) -> None:
            outputs[i] = (await ctx.run(build_agent(), f"{task} part {i}", role="worker", index=i)).text

        async with anyio.create_task_group() as group:
            for i in range(self.workers):
                group.start_soon(one, i)

        async def review() -> int:
            return sum(len(o) for o in outputs)

        size, _ = await ctx.step("function", "review", {"outputs": outputs}, review, int)
        return Output.of(f"{self.workers} parts, {size} characters")


def build_fanout() -> Fanout:
    return Fanout()


class Steps:
    """Makes `n` function steps in a row; the tests change `n` between record and replay."""

    name = "steps"

    def __init__(self, n: int) -> None:
        self.n = n

    async def run(self, ctx: Context, task: str) -> Output:
        total = 0
        for i in range(self.n):

            async def work(i: int = i) -> int:
                return i * 10

            value, _ = await ctx.step("function", "work", {"i": i}, work, int)
            total += value
        return Output.of(str(total))


not_an_architecture = 42


def _last_user(request: ModelRequest) -> str:
    return next((m.content or "" for m in reversed(request.messages) if m.role == "user"), "")


def _write_code(request: ModelRequest) -> str:
    return (
        "def add(a, b): return a + b" if "subtracts" in _last_user(request) else "def add(a, b): return a - b"
    )


def _review(request: ModelRequest) -> str:
    if "a - b" in _last_user(request):
        return '{"score": 0.2, "issues": ["it subtracts"], "summary": "wrong sign"}'
    return '{"score": 1.0, "issues": [], "summary": "correct"}'


def _coordinate(request: ModelRequest) -> Reply:
    if not any(m.role == "assistant" for m in request.messages):
        delegations = [
            call("delegate", {"worker": "coder", "instructions": "Write add(a, b)."}),
            call("delegate", {"worker": "helper", "instructions": "count these"}),
        ]
        return Reply(text="Splitting the work.", tool_calls=delegations)
    return Reply(text="done: " + " | ".join(m.content or "" for m in request.messages if m.role == "tool"))


def passes_tests(task: str, output: str) -> bool:
    """A function critic (journaled as a function step): the code must add."""
    return "a + b" in output


def build_team() -> Supervisor:
    """A Supervisor whose parallel workers are an ActorCritic coder and a tool-using agent."""
    coder = ActorCritic(Agent("You write code."), [LLMCritic(), passes_tests], max_rounds=2)
    return Supervisor({"coder": coder, "helper": build_agent()})


def team_models() -> dict[str, FunctionModel]:
    return {
        "supervisor": FunctionModel(_coordinate, model_name="coordinator"),
        "actor": FunctionModel(_write_code, model_name="coder-model"),
        "critic": FunctionModel(_review, model_name="critic-model"),
        "helper": model(),
    }


def approves(task: str, output: str) -> bool:
    """A function critic that approves any draft (journaled as a function step)."""
    return True


def build_checked() -> ActorCritic:
    """An ActorCritic judged by a function critic: one model step, one function step, approved."""
    return ActorCritic(Agent("You write code."), [approves], max_rounds=2)


def coder_model() -> FunctionModel:
    return FunctionModel(_write_code, model_name="coder-model")
