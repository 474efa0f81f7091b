"""Durable runs on DBOS: a worker executes submitted runs from a queue; the journal replays them.

    python examples/durable_workers.py                      # offline: SQLite-backed DBOS, scripted models
    python examples/durable_workers.py --live               # real models through litellm
    python examples/durable_workers.py --database postgresql://jeeves@localhost/jeeves

A worker (`jeeves.durable.Worker`) serves this file's `build()` as a target; the script
submits two runs under their own session ids (`jeeves.durable.submit`), waits for each
(`jeeves.durable.wait`), lists what the journal holds and replays one run offline. Each run
is a DBOS workflow whose id is its root session id; the jeeves journal holds its steps.

Without `--database` everything lives in a temporary folder: DBOS's tables in a SQLite file
and the journal in another (one machine, no takeover). With a PostgreSQL URL both live in
that database, and `jeeves worker examples.durable_workers:build --database URL` on other
machines would share the queue; a worker that dies has its runs taken over by another.

`build()` is an ActorCritic that drafts `slugify`; offline its models are scripted (the
critic rejects the first draft), `--live` sends the actor to `$JEEVES_MODEL` (default
`openai/gpt-4o-mini`; set the provider's API key) and the critic to `$JEEVES_CRITIC_MODEL`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # so `examples.durable_workers` imports

import jeeves
from jeeves import ActorCritic, Agent, ScriptedModel
from jeeves.durable import Worker, submit, wait
from jeeves.replay import list_runs

TARGET = "examples.durable_workers:build"
LIVE = "JEEVES_DURABLE_EXAMPLE_LIVE"
"""Set by `--live` for the worker's factory, which runs in this process."""

FIRST = "```python\ndef slugify(text):\n    return text.lower().replace(' ', '-')\n```"
SECOND = (
    "```python\nimport re\n\n\ndef slugify(text: str) -> str:\n"
    '    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")\n```'
)
REVIEWS = [
    {"issues": ["punctuation is kept"], "score": 0.6, "summary": "Close."},
    {"issues": [], "score": 0.95, "summary": "Correct."},
]


def build() -> ActorCritic:
    """The worker calls this for every run: fresh scripted models each time (a script is
    consumed by the run it answers), or live routes."""
    if os.environ.get(LIVE) == "1":
        actor_model: str | ScriptedModel = os.environ.get("JEEVES_MODEL", "openai/gpt-4o-mini")
        critic_model: str | ScriptedModel = os.environ.get("JEEVES_CRITIC_MODEL", str(actor_model))
    else:
        actor_model = ScriptedModel([FIRST, SECOND], model_name="scripted-coder")
        critic_model = ScriptedModel([json.dumps(r) for r in REVIEWS], model_name="scripted-reviewer")
    return ActorCritic(
        actor=Agent(
            "You write correct, simple Python. Reply with the code in one ```python block.", model=actor_model
        ),
        critic=Agent("You are a strict Python reviewer. Judge correctness first.", model=critic_model),
        max_rounds=3,
    )


async def main(database: str | None, live: bool) -> int:
    if live:
        os.environ[LIVE] = "1"
    with tempfile.TemporaryDirectory() as folder:
        if database is None:
            database, journal = f"sqlite:///{folder}/dbos.sqlite", f"{folder}/runs.db"
        else:
            journal = database
        worker = Worker([TARGET], database=database, journal=journal, concurrency=4, polling_interval_s=0.2)
        async with anyio.create_task_group() as tg:
            ready = anyio.Event()
            tg.start_soon(lambda: worker.run(ready=ready))
            await ready.wait()
            print(f"worker {worker.worker_id} serves {TARGET}")
            for session_id, task in [
                ("slug-1", "Write slugify(text)."),
                ("slug-2", "Write slugify(text) again."),
            ]:
                await submit(TARGET, task, session_id=session_id, database=database)
                print(f"submitted {session_id}")
            outcomes = {
                sid: await wait(sid, database=database, timeout_s=300) for sid in ("slug-1", "slug-2")
            }
            tg.cancel_scope.cancel()
        for session_id, outcome in outcomes.items():
            print(f"{session_id}: {outcome['status']}, {outcome.get('stop_reason')}")
        print(outcomes["slug-1"].get("text", outcomes["slug-1"].get("error")))
        for run in await list_runs(journal):
            print(f"journal: {run.session_id} {run.status}, {run.rounds} rounds")
        replayed = await jeeves.replay(None, journal, "slug-1")
        print(
            f"replayed slug-1 offline: {replayed.stop_reason}, same output: {replayed.text == outcomes['slug-1'].get('text')}"
        )
    return 0


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
