"""pydantic-ai per model call, plain and under DBOS durable execution on PostgreSQL, at 25 and 200 turns.

The workload of bench/journal_turns.py: a tool-using Agent ("You look things up.", prompt "Look
it up.") whose model answers at once, with a tool call `lookup(key="k")` at every turn (a new
tool call id each) and the text "done" at the last, each tool returning 200 bytes; usage 10 in /
5 out reported by the model (nothing estimated). The model is a `FunctionModel` with an async
function (a sync one would run in a thread executor at every call), the tool an async function.

Rows: `bare` (`agent.run`, no durability); with `--pg-url`, `dbos`: the same agent with the
`DBOSDurability` capability (pydantic-ai's documented way; its `DBOSAgent` wrapper is deprecated
in this version), run inside a `@DBOS.workflow`: each model request a DBOS step. It does not make
a function tool a step ("not automatically wrapped": the docs ask for `@DBOS.step` on a tool that
does I/O), so the durable agent's tool is decorated with `@DBOS.step()`: a step per model request
and per tool call, as jeeves journals both. `DBOS steps alone (no agent)`: DBOS's floor, a
`@DBOS.workflow` making the same steps (a step returning the model's reply, then the tool step).
Each run is a new workflow (a fresh id).

µs per model call: the run's wall time over its model calls, and this process's CPU time
(`time.process_time()`: its threads included, PostgreSQL's server not), best of `--runs`, after
one warm-up run at 25 turns. `--writes` adds, for one more 200-turn run per durable row, its rows
in `dbos.operation_outputs` and the transactions committed in its database meanwhile.

Runs in its own venv (requirements-pydantic_ai_dbos.txt); the JSON result is the last stdout line,
DBOS's logs go to stderr at WARNING.

    python bench/peers/journal_pydantic_ai.py --turns 25,200 --runs 3 --pg-url postgresql://...
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib.metadata import version
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage, UsageLimits

INSTRUCTIONS = "You look things up."
PROMPT = "Look it up."
RESULT = "r" * 200
"""Each tool call's result: 200 bytes."""
STEPS_ALONE = "DBOS steps alone (no agent)"

Run = Callable[[int, str], Awaitable[str]]
"""One run of `turns` model calls under a workflow id; returns the output."""


@dataclass
class Script:
    """What the model answers: set before each run (the model is built once, before DBOS launches)."""

    turns: int = 0
    calls: int = 0

    def start(self, turns: int) -> None:
        self.turns, self.calls = turns, 0

    async def answer(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return self.reply(len(messages) // 2)  # turn k's messages: k requests and k responses, then one

    def reply(self, made: int) -> ModelResponse:
        self.calls += 1
        usage = RequestUsage(input_tokens=10, output_tokens=5)
        if made + 1 >= self.turns:
            return ModelResponse(parts=[TextPart("done")], usage=usage)
        call = ToolCallPart(tool_name="lookup", args='{"key": "k"}', tool_call_id=f"c{made}")
        return ModelResponse(parts=[call], usage=usage)


async def lookup(key: str) -> str:
    """Look a key up."""
    return RESULT


def _agent(script: Script, tool: Any, **kwargs: Any) -> Agent[None, str]:
    return Agent(FunctionModel(script.answer), instructions=INSTRUCTIONS, tools=[tool], **kwargs)


def _limits(turns: int) -> UsageLimits:
    return UsageLimits(request_limit=turns + 1)  # the default (50) would stop a 200-turn run


async def _one(row: str, script: Script, run: Run, turns: int) -> dict[str, float]:
    script.start(turns)
    start, cpu = time.perf_counter(), time.process_time()
    output = await run(turns, f"{row}-{turns}-{uuid.uuid4().hex}")
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    if output != "done" or script.calls != turns:
        raise RuntimeError(f"{row} at {turns} turns made {script.calls} model calls: {output!r}")
    return {"wall": elapsed / turns * 1e6, "cpu": cpu / turns * 1e6}


async def _measure(row: str, script: Script, run: Run, turns: list[int], runs: int) -> dict[str, Any]:
    await _one(row, script, run, 25)  # imports, caches, the DBOS tables and pool
    best: dict[str, dict[str, float]] = {}
    for _ in range(runs):
        for t in turns:
            got = await _one(row, script, run, t)
            at = best.setdefault(str(t), got)
            best[str(t)] = {metric: min(at[metric], value) for metric, value in got.items()}
    return best


def bare_run(script: Script) -> Run:
    agent = _agent(script, lookup)

    async def run(turns: int, workflow_id: str) -> str:
        return (await agent.run(PROMPT, usage_limits=_limits(turns))).output

    return run


def durable_runs(script: Script, pg_url: str) -> dict[str, Run]:
    """The DBOS rows' runs, registered with DBOS (configured on `pg_url`) and launched."""
    from dbos import DBOS, SetWorkflowID
    from pydantic_ai.durable_exec.dbos import DBOSDurability

    DBOS(config={"name": "journal_peers", "system_database_url": pg_url, "log_level": "WARNING"})
    step = DBOS.step(name="lookup")(lookup)
    capable = _agent(script, step, name="lookup_capability", capabilities=[DBOSDurability()])

    @DBOS.workflow(name="journal_peers.capability_run")
    async def capability_workflow(turns: int) -> str:
        return (await capable.run(PROMPT, usage_limits=_limits(turns))).output

    async def run_capability(turns: int, workflow_id: str) -> str:
        with SetWorkflowID(workflow_id):
            return await capability_workflow(turns)

    @DBOS.step(name="journal_peers.model")
    async def model_step(made: int) -> ModelResponse:
        return script.reply(made)

    @DBOS.workflow(name="journal_peers.steps_run")
    async def steps_workflow(turns: int) -> str:
        for made in range(turns):
            response = await model_step(made)
            if not isinstance(response.parts[0], ToolCallPart):
                return response.text or ""
            await step(key="k")
        raise AssertionError("unreachable: the model answers text at the last turn")

    async def run_steps(turns: int, workflow_id: str) -> str:
        with SetWorkflowID(workflow_id):
            return await steps_workflow(turns)

    DBOS.launch()
    return {"dbos": run_capability, STEPS_ALONE: run_steps}


async def _writes(script: Script, run: Run, row: str, pg_url: str) -> dict[str, float]:
    """One 200-turn run's rows in dbos.operation_outputs, and the transactions committed in its
    database meanwhile (pg_stat_database, read after waiting for the backends to flush their
    statistics, at most 10 s idle), less DBOS's background commits at the rate of an idle window."""
    import psycopg

    async def commits() -> tuple[float, int]:
        await asyncio.sleep(11)
        with psycopg.connect(pg_url) as conn, conn.transaction():  # one transaction, one commit
            sql = "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
            got = conn.execute(sql).fetchone()
        assert got is not None
        return time.perf_counter(), int(got[0])

    (t0, c0), (t1, c1) = await commits(), await commits()
    script.start(200)
    workflow_id = f"{row}-writes-{uuid.uuid4().hex}"
    if await run(200, workflow_id) != "done" or script.calls != 200:
        raise RuntimeError(f"{row}: the 200-turn run for --writes failed")
    t2, c2 = await commits()
    idle_rate = (c1 - c0 - 1) / (t1 - t0)  # less the reading's own commit
    with psycopg.connect(pg_url) as conn:
        sql = "SELECT count(*) FROM dbos.operation_outputs WHERE workflow_uuid = %s"
        got = conn.execute(sql, (workflow_id,)).fetchone()
    assert got is not None
    return {
        "turns": 200,
        "operation_outputs": int(got[0]),
        "xact_commit": round(c2 - c1 - 1 - idle_rate * (t2 - t1)),
        "idle_commits_per_s": round(idle_rate, 1),
    }


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    turns: list[int] = args.turns
    script = Script()
    rows = {"bare": await _measure("bare", script, bare_run(script), turns, args.runs)}
    versions = {"pydantic-ai-slim": version("pydantic-ai-slim")}
    out: dict[str, Any] = {"framework": "pydantic-ai", "versions": versions, "rows": rows, "notes": {}}
    if args.pg_url is None:
        return out
    from dbos import DBOS

    versions["dbos"] = version("dbos")
    try:
        runs = durable_runs(script, args.pg_url)
        for row, run in runs.items():
            rows[row] = await _measure(row, script, run, turns, args.runs)
        if args.writes:
            out["writes"] = {row: await _writes(script, run, row, args.pg_url) for row, run in runs.items()}
    finally:
        DBOS.destroy(destroy_registry=True)
    step = (
        "each model request a DBOS step, and each tool call (the tool decorated @DBOS.step()); a step is"
        " 2 transactions: a read (workflow status, recorded output) and a write (lock the workflow row,"
        " insert one dbos.operation_outputs row: the pickled result), each after a pool pre-ping"
    )
    out["notes"] = {
        "dbos": f"the DBOSDurability capability, agent.run inside a @DBOS.workflow: {step}",
        STEPS_ALONE: "DBOS alone, no agent: a @DBOS.workflow making the same steps (the model's reply, the tool)",
    }
    return out


def turn_list(text: str) -> list[int]:
    """`--turns`: comma-separated run lengths, each a positive number of model calls."""
    try:
        turns = [int(part) for part in text.split(",")]
    except ValueError:
        turns = []
    if not turns or min(turns) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give comma-separated positive integers, e.g. 25,200")
    return turns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=turn_list, default=[25, 200], help="run lengths, e.g. 25,200")
    parser.add_argument("--runs", type=int, default=3, help="best of this many runs")
    parser.add_argument("--pg-url", help="PostgreSQL URL for DBOS's system database (else only `bare`)")
    parser.add_argument("--writes", action="store_true", help="count a 200-turn run's rows and commits")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error(f"--runs {args.runs}: give at least 1")
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    print(json.dumps(asyncio.run(main_async(args))))


if __name__ == "__main__":
    main()
