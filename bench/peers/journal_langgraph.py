"""LangGraph, journaled: bench/journal_turns.py's tool-using agent with and without a checkpointer.

The graph is LangGraph's own tool loop (a model node, `ToolNode`, `tools_condition`) over
`add_messages` state; its fake chat model answers at once: a tool call `lookup(key="k")` every
turn until it has made `turns` calls, then the text "done", with the usage a provider reports
(10 in, 5 out). The tool returns 200 bytes. Rows, each run a new thread:

- `bare`: no checkpointer;
- `memory`: `InMemorySaver`, LangGraph's default durability (`"async"`: a step's checkpoint
  is written while the next step runs);
- `sqlite`: `AsyncSqliteSaver` on a file, the default durability;
- `sqlite, sync`: the same with `durability="sync"`: each checkpoint written before the next
  step starts, the guarantee a jeeves journal gives (a step is committed before its result
  is used).

µs per model call (the run's wall time, and this process's CPU time, over its model calls),
best of `--runs` runs, after one warm-up run. Runs in its own venv (bench/venvs.py); prints
JSON as its last line.

    python bench/peers/journal_langgraph.py --turns 25,200 --runs 3 --scratch /tmp/x
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
import uuid
from contextlib import AsyncExitStack
from importlib.metadata import version
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition

RESULT = "r" * 200
USAGE = UsageMetadata(input_tokens=10, output_tokens=5, total_tokens=15)
ROWS = ("bare", "memory", "sqlite", "sqlite, sync")


@tool
async def lookup(key: str) -> str:
    """Look a key up."""
    return RESULT


class LoopChat(BaseChatModel):
    """Answers at once: a tool call each turn until `turns` calls were made, then "done"."""

    turns: int
    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "bench-loop"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        self.calls += 1
        made = (len(messages) - 2) // 2  # turn k's request holds 2 + 2k messages
        if made + 1 >= self.turns:
            message = AIMessage(content="done", usage_metadata=USAGE)
        else:
            call = {"name": "lookup", "args": {"key": "k"}, "id": f"c{made}", "type": "tool_call"}
            message = AIMessage(content="", tool_calls=[call], usage_metadata=USAGE)
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _agenerate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        return self._generate(messages)


class State(TypedDict):
    messages: Annotated[list[BaseMessage], add_messages]


def _graph(model: LoopChat, checkpointer: Any) -> Any:
    async def agent(state: State) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    graph = StateGraph(State)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode([lookup]))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=checkpointer)


async def _one(row: str, checkpointer: Any, turns: int) -> dict[str, float]:
    """µs per model call of one run of `turns` model calls, on a new thread."""
    model = LoopChat(turns=turns)
    graph = _graph(model, checkpointer)
    config: dict[str, Any] = {
        "configurable": {"thread_id": uuid.uuid4().hex},
        "recursion_limit": 2 * turns + 10,
    }
    start = {"messages": [SystemMessage("You look things up."), HumanMessage("Look it up.")]}
    durability = "sync" if row == "sqlite, sync" else None
    began, cpu = time.perf_counter(), time.process_time()
    final = await graph.ainvoke(start, config, durability=durability)
    elapsed, cpu = time.perf_counter() - began, time.process_time() - cpu
    last = final["messages"][-1]
    if last.content != "done" or model.calls != turns:
        raise RuntimeError(f"{row} at {turns} turns made {model.calls} calls: {last.content!r}")
    return {"wall": elapsed / turns * 1e6, "cpu": cpu / turns * 1e6}


async def measure(turns: list[int], runs: int, scratch: Path) -> dict[str, Any]:
    best: dict[str, dict[str, dict[str, float]]] = {}
    async with AsyncExitStack() as stack:
        sqlite = await stack.enter_async_context(AsyncSqliteSaver.from_conn_string(str(scratch / "lg.db")))
        savers = {"bare": None, "memory": InMemorySaver(), "sqlite": sqlite, "sqlite, sync": sqlite}
        for row in ROWS:
            await _one(row, savers[row], min(turns))  # imports, caches, tables
        for _ in range(runs):
            for row in ROWS:
                for n in turns:
                    got = await _one(row, savers[row], n)
                    kept = best.setdefault(row, {}).get(str(n))
                    if kept is None or got["cpu"] < kept["cpu"]:
                        best[row][str(n)] = got
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", default="25,200")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--scratch", default=None, help="folder for the SQLite file (a temp dir)")
    args = parser.parse_args()
    turns = [int(t) for t in args.turns.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        rows = asyncio.run(measure(turns, args.runs, Path(args.scratch or tmp)))
    versions = {p: version(p) for p in ("langgraph", "langgraph-checkpoint", "langgraph-checkpoint-sqlite")}
    notes = {
        "memory": "InMemorySaver, default durability (async)",
        "sqlite": "AsyncSqliteSaver on a file, default durability (async)",
        "sqlite, sync": "AsyncSqliteSaver, durability='sync' (a checkpoint before each next step)",
    }
    print(json.dumps({"framework": "langgraph", "versions": versions, "rows": rows, "notes": notes}))


if __name__ == "__main__":
    main()
