"""What a watchdog saves on long-running agents: tool calls and tokens until the run ends.

    python bench/watchdog.py                 # prints the table, writes bench/results/WATCHDOG.md
    python bench/watchdog.py --out /tmp/w    # elsewhere

Four scripted scenarios, each run with `Watchdog(every=3)` and without a watchdog (both under
`MaxToolCalls(60)`, the budget a stuck agent burns):

- stuck: the agent reruns the failing tests until someone tells it it is stuck;
- drifting: the agent polishes the docs until someone restates the goal;
- silently done: the agent fixes the bug at once, then keeps reading files and claims late;
- healthy: the agent fixes the bug and claims.

The agent and the watchdog are FunctionModels (token counts are words, as the scripted models
count them); the watchdog model judges the window it is shown the way a cheap model would:
the same tool over the whole window is STUCK, docs edits are MISLED, a passing test run is
ACHIEVED. The numbers are counts, not timings: they are the same on every machine.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import anyio

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))

import jeeves  # noqa: E402
from jeeves import Agent, FunctionModel, Goal, Router, Watchdog  # noqa: E402
from jeeves.architectures import GoalOutput  # noqa: E402
from jeeves.messages import ModelRequest  # noqa: E402
from jeeves.stop import MaxToolCalls  # noqa: E402
from jeeves.testing import Reply, call  # noqa: E402


class World:
    def __init__(self) -> None:
        self.fixed = False

    def tools(self) -> list[jeeves.Tool]:
        world = self

        @jeeves.tool
        def run_tests() -> str:
            """Run the test suite."""
            return "all 12 passed" if world.fixed else "FAILED test_parse_duration: '1h30m' gave 90"

        @jeeves.tool
        def fix(change: str) -> str:
            """Edit the code."""
            world.fixed = True
            return "edited src/duration.py"

        @jeeves.tool
        def edit_docs(text: str) -> str:
            """Edit the documentation."""
            return "edited README.md"

        @jeeves.tool
        def read_file(path: str) -> str:
            """Read a file."""
            return f"contents of {path}: " + "lorem ipsum " * 20

        return [run_tests, fix, edit_docs, read_file]


def told(request: ModelRequest, phrase: str) -> bool:
    return any(phrase in (m.content or "") for m in request.messages if m.role == "user")


def turns(request: ModelRequest) -> int:
    return sum(1 for m in request.messages if m.role == "assistant")


def claim() -> Reply:
    return Reply(tool_calls=[call("claim_complete", {"report": "fixed parse_duration; tests pass"})])


def stuck(request: ModelRequest) -> Reply:
    if told(request, "You appear to be stuck"):
        return (
            claim()
            if any(m.name == "fix" for m in request.messages)
            else Reply(tool_calls=[call("fix", {"change": "h"})])
        )
    return Reply(tool_calls=[call("run_tests")])


def drifting(request: ModelRequest) -> Reply:
    if told(request, "drifted from the goal"):
        return (
            claim()
            if any(m.name == "fix" for m in request.messages)
            else Reply(tool_calls=[call("fix", {"change": "h"})])
        )
    return Reply(tool_calls=[call("edit_docs", {"text": f"wording {turns(request)}"})])


def silently_done(request: ModelRequest) -> Reply:
    n = turns(request)
    if n == 0:
        return Reply(tool_calls=[call("fix", {"change": "h"})])
    if n == 1:
        return Reply(tool_calls=[call("run_tests")])
    if n < 40:
        return Reply(tool_calls=[call("read_file", {"path": f"src/module_{n}.py"})])
    return claim()


def healthy(request: ModelRequest) -> Reply:
    plan = [call("read_file", {"path": "src/duration.py"}), call("fix", {"change": "h"}), call("run_tests")]
    n = turns(request)
    return Reply(tool_calls=[plan[n]]) if n < len(plan) else claim()


def watchdog_model(request: ModelRequest) -> str:
    steps = [line for line in (request.messages[-1].content or "").splitlines() if line[:1].isdigit()]
    names = {line.split(". ", 1)[1].split("(", 1)[0] for line in steps}
    if any("all 12 passed" in line for line in steps):
        verdict, reason = "ACHIEVED", "the test run passes."
    elif names == {"edit_docs"}:
        verdict, reason = "MISLED", "it edits the docs, not the failing code."
    elif len(names) == 1 and len(steps) >= 3:
        verdict, reason = "STUCK", "it repeats the same call without progress."
    else:
        verdict, reason = "PROGRESSING", "it is working on the code."
    return json.dumps({"verdict": verdict, "reason": reason})


SCENARIOS = {"stuck": stuck, "drifting": drifting, "silently done": silently_done, "healthy": healthy}


@dataclass
class Row:
    scenario: str
    watched: bool
    stop_reason: str
    tool_calls: int
    agent_tokens: int
    watchdog_tokens: int
    firings: int

    @property
    def share(self) -> float:
        total = self.agent_tokens + self.watchdog_tokens
        return self.watchdog_tokens / total if total else 0.0


async def measure(name: str, watched: bool) -> Row:
    world = World()
    goal = Goal(
        Agent("You maintain a Python project.", tools=world.tools(), max_turns=80),
        goal="the test suite passes",
        success=lambda task, report: world.fixed,
        watchdog=Watchdog(every=3) if watched else None,
        stop=MaxToolCalls(60),
    )
    router = Router({"agent": FunctionModel(SCENARIOS[name]), "watchdog": FunctionModel(watchdog_model)})
    result = await jeeves.run(goal, "Fix parse_duration.", router=router, session_id="bench")
    detail = result.detail
    assert isinstance(detail, GoalOutput)
    by_path = result.usage_by_path
    return Row(
        name,
        watched,
        result.stop_reason,
        detail.steps,
        by_path.get("goal.agent", jeeves.Usage()).total_tokens,
        by_path.get("goal.watchdog", jeeves.Usage()).total_tokens,
        len(detail.watchdog),
    )


def table(rows: list[Row]) -> str:
    lines = [
        "| scenario | watchdog | stop reason | tool calls | agent tokens | watchdog tokens | watchdog share | firings |",
        "|---|---|---|--:|--:|--:|--:|--:|",
    ]
    for r in rows:
        lines.append(
            f"| {r.scenario} | {'every=3' if r.watched else 'none'} | {r.stop_reason} | {r.tool_calls} | "
            f"{r.agent_tokens:,} | {r.watchdog_tokens:,} | {r.share:.0%} | {r.firings} |"
        )
    return "\n".join(lines)


async def measure_all() -> list[Row]:
    return [await measure(name, watched) for name in SCENARIOS for watched in (True, False)]


def main(out: Path) -> None:
    rows = anyio.run(measure_all)
    header = "# Watchdog benchmark\n\nGenerated by `python bench/watchdog.py` (counts, not timings).\n\n"
    out.mkdir(parents=True, exist_ok=True)
    (out / "WATCHDOG.md").write_text(header + table(rows) + "\n")
    print(table(rows))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=BENCH / "results")
    main(parser.parse_args().out)
