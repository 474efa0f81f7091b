"""Architectures `jeeves mcp serve` serves in the tests (module:attr targets; offline models)."""

from __future__ import annotations

import os

import anyio

import jeeves
from jeeves import Agent
from jeeves.messages import ModelRequest
from jeeves.testing import FunctionModel, Reply, call


def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()


def _shouter(request: ModelRequest) -> Reply | str:
    results = [m.content for m in request.messages if m.role == "tool"]
    if not results:
        return Reply(tool_calls=[call("shout", {"text": request.messages[1].content or ""})])
    return f"shouted: {results[-1]}"


def shouter() -> Agent:
    """An agent that calls its one tool on the task, then reports the result."""
    return Agent(
        "Shout the task.", tools=[shout], model=FunctionModel(_shouter), description="shouts the task"
    )


async def _slow(request: ModelRequest) -> str:
    await anyio.sleep_forever()
    raise AssertionError("unreachable")


def sleeper() -> Agent:
    """An agent whose model never answers: a call to cancel."""
    return Agent("Take your time.", model=FunctionModel(_slow), description="sleeps")


@jeeves.tool(approval="destructive")
def record_call(path: str) -> str:
    """Append a line to the file at `path` (the tasks tests count the lines: it ran once)."""
    with open(path, "a") as file:
        file.write("ran\n")
    return f"recorded in {path}"


@jeeves.tool(approval="destructive")
def record_pid(path: str) -> str:
    """Append the id of the process running this tool to the file at `path` (the durable tests
    check the run's tool ran once, and on a worker)."""
    with open(path, "a") as file:
        file.write(f"{os.getpid()}\n")
    return f"recorded in {path}"


def _clerk(request: ModelRequest) -> Reply | str:
    results = [m.content for m in request.messages if m.role == "tool"]
    if not results:
        return Reply(tool_calls=[call("record_pid", {"path": request.messages[1].content or ""})])
    return f"clerk: {results[-1]}"


def clerk() -> Agent:
    """An agent that records which process ran its one (destructive: gated) tool."""
    return Agent(
        "Record the process.",
        tools=[record_pid],
        model=FunctionModel(_clerk),
        description="records its process",
    )
