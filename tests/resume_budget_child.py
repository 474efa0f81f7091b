"""The process the resume-budget tests kill: an agent that works through six tool calls under
a budget of four model calls, printing every progress envelope.

Run as `python -m tests.resume_budget_child DIR [BLOCK]`. Every model call appends `model` to
`DIR/calls` and every tool call `work N`, so calls are counted across processes. With BLOCK
(an int), the tool call `work BLOCK` prints `blocked` and hangs until killed (once: a marker
file says it did). Each progress envelope is printed as one JSON line; the run's result as a
last JSON line `{"stop_reason": ...}`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio

import jeeves
from jeeves import Agent, Budget
from jeeves.messages import ModelRequest, Usage
from jeeves.testing import FunctionModel, Reply, call
from tests.waiting import hang_until_killed

BUDGET = Budget(max_model_calls=4, max_tokens=1000)
CALL_TOKENS = 100
"""Every model call reports 60 input + 40 output tokens."""


def build(root: Path, block: int | None) -> tuple[Agent, FunctionModel]:
    def note(line: str) -> None:
        with (root / "calls").open("a") as f:
            f.write(line + "\n")

    @jeeves.tool(approval="read_only")
    def work(n: int) -> str:
        """Do piece n of the work."""
        note(f"work {n}")
        marker = root / f"blocked_{n}"
        if n == block and not marker.exists():
            marker.write_text("1")
            print("blocked", flush=True)  # the test waits for this line, then kills
            hang_until_killed()  # until SIGKILL (stdin held open by the test)
        return f"piece {n} done"

    def act(request: ModelRequest) -> Reply:
        note("model")
        done = sum(1 for m in request.messages if m.role == "tool")
        usage = Usage(input_tokens=60, output_tokens=40, model_calls=1)
        if done == 6:
            return Reply(text="all six pieces done", usage=usage)
        return Reply(tool_calls=[call("work", {"n": done})], usage=usage)

    return Agent("Do the work, one piece per tool call.", tools=[work], max_turns=20), FunctionModel(act)


async def resume_run(root: Path, block: int | None = None) -> str:
    agent, model = build(root, block)
    async with jeeves.stream(
        agent,
        "Do the six pieces.",
        model=model,
        budget=BUDGET,
        journal=str(root / "runs.db"),
        session_id="job",
        progress_s=0,
    ) as events:
        async for event in events:
            if event.type == "progress":
                print(event.model_dump_json(exclude={"ts"}), flush=True)
        result = await events.result()
    return result.stop_reason or ""


if __name__ == "__main__":
    directory, *rest = sys.argv[1:]
    stop = anyio.run(resume_run, Path(directory), int(rest[0]) if rest else None)
    print(json.dumps({"stop_reason": stop}), flush=True)
