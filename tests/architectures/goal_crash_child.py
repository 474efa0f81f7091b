"""The process the Goal crash test kills: a watched Goal whose world and model calls live in files.

Run as `python -m tests.architectures.goal_crash_child DIR [BLOCK_AT]`. The agent is a
FunctionModel that appends a line to `DIR/calls` for every model call it answers, so calls
are counted across processes. The world (is the code fixed?) is `DIR/world.json`. With
BLOCK_AT set, the BLOCK_AT-th `run_tests` call writes `DIR/blocked` and hangs until killed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio

import jeeves
from jeeves import Agent, FunctionModel, Goal, Watchdog
from jeeves.messages import ModelRequest
from jeeves.testing import Reply, call
from tests.waiting import hang_until_killed


def build(root: Path, block_at: int | None) -> tuple[Goal, FunctionModel]:
    world = root / "world.json"
    if not world.exists():
        world.write_text(json.dumps({"fixed": False, "test_runs": 0}))

    def load() -> dict[str, object]:
        return dict(json.loads(world.read_text()))

    @jeeves.tool
    def run_tests() -> str:
        """Run the test suite."""
        state = load()
        state["test_runs"] = int(str(state["test_runs"])) + 1
        world.write_text(json.dumps(state))
        if state["test_runs"] == block_at:
            (root / "blocked").write_text("1")
            print("blocked", flush=True)  # the test waits for this line
            hang_until_killed()  # until SIGKILL (stdin held open by the test)
        if not state["fixed"]:
            raise RuntimeError("1 failed: test_add")
        return "all passed"

    @jeeves.tool
    def fix(change: str) -> str:
        """Change the code."""
        world.write_text(json.dumps({**load(), "fixed": change == "return a + b"}))
        return "edited"

    def act(request: ModelRequest) -> Reply:
        with (root / "calls").open("a") as f:
            f.write(f"{len(request.messages)}\n")
        told = any(
            "You appear to be stuck" in (m.content or "") for m in request.messages if m.role == "user"
        )
        if any(m.role == "tool" and m.name == "fix" for m in request.messages):
            return Reply(tool_calls=[call("claim_complete", {"report": "fixed add"})])
        if told:
            return Reply(tool_calls=[call("fix", {"change": "return a + b"})])
        return Reply(tool_calls=[call("run_tests")])

    goal = Goal(
        Agent("You maintain a small Python project.", tools=[run_tests, fix], max_turns=20),
        goal="the test suite passes",
        success=lambda task, report: bool(load()["fixed"]),
        watchdog=Watchdog(every=0, repeat_limit=3),
    )
    return goal, FunctionModel(act)


async def goal_run(root: Path, block_at: int | None = None) -> jeeves.RunResult:
    goal, model = build(root, block_at)
    return await jeeves.run(
        goal, "Make the tests pass.", model=model, journal=str(root / "runs.db"), session_id="g-1"
    )


if __name__ == "__main__":
    directory, *rest = sys.argv[1:]
    result = anyio.run(goal_run, Path(directory), int(rest[0]) if rest else None)
    print(json.dumps({"stop_reason": result.stop_reason}))
