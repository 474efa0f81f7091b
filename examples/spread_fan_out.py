"""A Supervisor's parallel workers spread over durable workers as branches, then adopted.

    python examples/spread_fan_out.py                        # offline: one worker, SQLite-backed DBOS
    python examples/spread_fan_out.py --database postgresql://jeeves@localhost/jeeves

A `jeeves.durable.Worker` in this process (on PostgreSQL: as many `jeeves worker
examples.spread_fan_out:build` as you like, on any machines) serves `build()`: a Supervisor
that delegates a coder and a tester in one reply. The run is a DBOS workflow on one worker;
each delegation becomes a branch (`jeeves.branch` workflow, id = the child's session id) that
any worker executes into the shared journal; the run adopts each from the journal when it
ends, so its output, events and usage are those of a run that did everything itself. The
script prints which worker ran the run and each branch, the output, and replays the run
offline from the journal.

Offline the models are functions of the request (the coder drafts, the tester lists cases,
the supervisor delegates then combines), so any worker that builds the target answers the
same; with real models, set `JEEVES_MODEL` and an API key and pass `--live`.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # so `examples.spread_fan_out` imports

import jeeves
from jeeves import Agent, FunctionModel, Supervisor
from jeeves.durable import Worker, submit, wait
from jeeves.messages import ModelRequest
from jeeves.testing import Reply, call

TARGET = "examples.spread_fan_out:build"
LIVE = "JEEVES_SPREAD_EXAMPLE_LIVE"


def _supervise(request: ModelRequest) -> str | Reply:
    results = [m.content or "" for m in request.messages if m.role == "tool"]
    if not results:
        return Reply(
            text="Splitting the work.",
            tool_calls=[
                call("delegate", {"worker": "coder", "instructions": "Write slugify(text)."}),
                call("delegate", {"worker": "tester", "instructions": "List test cases for slugify."}),
            ],
        )
    return "Ready to merge:\n" + "\n".join(results)


def _code(request: ModelRequest) -> str:
    return "def slugify(text):\n    return '-'.join(text.lower().split())"


def _cases(request: ModelRequest) -> str:
    return "cases: 'Hello World' -> 'hello-world'; '' -> ''"


def build() -> Supervisor:
    """The target every worker builds (afresh for each run and each branch)."""
    if os.environ.get(LIVE) == "1":
        model: str | FunctionModel = os.environ.get("JEEVES_MODEL", "openai/gpt-4o-mini")
        coder, tester, lead = model, model, model
    else:
        coder = FunctionModel(_code, model_name="offline-coder")
        tester = FunctionModel(_cases, model_name="offline-tester")
        lead = FunctionModel(_supervise, model_name="offline-lead")
    return Supervisor(
        {
            "coder": Agent("You write small, correct Python functions.", model=coder),
            "tester": Agent("You list the test cases a function must pass.", model=tester),
        },
        model=lead,
    )


async def main(database: str | None, live: bool) -> int:
    if live:
        os.environ[LIVE] = "1"
    with tempfile.TemporaryDirectory() as folder:
        if database is None:
            database, journal = f"sqlite:///{folder}/dbos.sqlite", f"{folder}/runs.db"
        else:
            journal = database
        worker = Worker([TARGET], database=database, journal=journal, polling_interval_s=0.2, spread=True)
        async with anyio.create_task_group() as tg:
            ready = anyio.Event()
            tg.start_soon(lambda: worker.run(ready=ready))
            await ready.wait()
            print(f"worker {worker.worker_id} serves {TARGET}, spreading")
            await submit(TARGET, "Ship slugify with its tests.", session_id="ship-1", database=database)
            outcome = await wait("ship-1", database=database, timeout_s=300)
            tg.cancel_scope.cancel()
        print(f"ship-1: {outcome['status']}")
        if outcome["status"] != "completed":
            print(f"error: {outcome.get('error')}", file=sys.stderr)
            return 1
        for branch in await anyio.to_thread.run_sync(branches, database, "ship-1"):
            print(f"branch {branch.workflow_id}: {branch.status}")
        print(outcome["text"])
        replayed = await jeeves.replay(None, journal, "ship-1")
        print(
            f"replayed ship-1 offline, branches included: same output: {replayed.text == outcome.get('text')}"
        )
    return 0


def branches(database: str, root: str) -> list[object]:
    """The run's branch workflows, by id (DBOS's record of where each child ran)."""
    from jeeves.durable.engine import BRANCH_WORKFLOW, client

    dbos = client(database)
    try:
        found = dbos.list_workflows(workflow_id_prefix=root + "__", name=BRANCH_WORKFLOW, load_input=False)
        return sorted(found, key=lambda w: w.workflow_id)
    finally:
        dbos.destroy()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--live", action="store_true", help="use real models through litellm")
    parser.add_argument(
        "--database", default=None, help="a PostgreSQL URL (default: SQLite in a temp folder)"
    )
    args = parser.parse_args()
    try:
        sys.exit(anyio.run(main, args.database, args.live, backend="asyncio"))
    except jeeves.MissingCredentials as exc:
        sys.exit(f"error: {exc}")
