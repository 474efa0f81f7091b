"""Durable runs on DBOS: a worker executes submitted runs from a queue; the journal replays them.

    python examples/durable_workers.py                      # offline: SQLite-backed DBOS, scripted models
    python examples/durable_workers.py --live               # real models through litellm
    python examples/durable_workers.py --database postgresql://jeeves@localhost/jeeves

A worker (`jeeves.durable.Worker`) serves this file's `build()` as a target; the script
submits two runs under their own session ids (`jeeves.durable.submit`), waits for each
(`jeeves.durable.wait`), lists what the journal holds and replays one run offline. Each run
is a DBOS workflow whose id is its root session id; the jeeves journal holds its steps, and
the worker persists the run's events beside it.

It also follows the first run as a browser would, from another process: `jeeves serve
--database JOURNAL` (the server started no run itself) streams the run's events over SSE
(`GET /runs/slug-1/events`); the script drops the connection after the first critique and
re-attaches with `Last-Event-ID`, getting exactly the events it missed.

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
import re
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # so `examples.durable_workers` imports

import jeeves
from jeeves import ActorCritic, Agent, ScriptedModel
from jeeves.durable import Worker, submit, wait
from jeeves.journal import list_runs

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


@contextmanager
def jeeves_serve(database: str) -> Iterator[str]:
    """`jeeves serve --database DATABASE` in another process; yields its address."""
    command = [sys.executable, "-m", "jeeves", "serve", "--port", "0", "--database", database]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert server.stdout is not None
        for line in server.stdout:
            found = re.search(r"serving .* at (http://\S+?)/?$", line.strip())
            if found:
                yield found.group(1)
                return
        raise RuntimeError("jeeves serve stopped before it was ready")
    finally:
        server.terminate()
        server.communicate(timeout=30)


def read_events(url: str, *, last_event_id: int = 0, until: str | None = None) -> list[tuple[int, dict]]:
    """(seq, event) from the run's SSE stream, to its `end` (then `(0, end)`) or to the first
    event of type `until` (then the connection is dropped)."""
    request = urllib.request.Request(url, headers={"Last-Event-ID": str(last_event_id)})
    got: list[tuple[int, dict]] = []
    fields: dict[str, str] = {}
    with urllib.request.urlopen(request, timeout=60) as stream:
        for raw in stream:
            line = raw.decode().rstrip("\n")
            if line and not line.startswith(":"):
                name, _, value = line.partition(": ")
                fields[name] = value
                continue
            if "data" not in fields:
                continue
            data = json.loads(fields["data"])
            if fields.get("event") == "end":
                return [*got, (0, data)]
            got.append((int(fields["id"]), data))
            fields = {}
            if data["type"] == until:
                return got
    return got


def wait_listed(base: str, session_id: str) -> None:
    """Until the server lists the run: a worker has started it (readiness, bounded)."""
    for _ in range(600):
        try:
            urllib.request.urlopen(f"{base}/runs/{session_id}", timeout=10).close()
            return
        except urllib.error.HTTPError as exc:
            if exc.code != 404:
                raise
        anyio.from_thread.run(anyio.sleep, 0.05)
    raise TimeoutError(f"no worker started {session_id} in 30 s")


def journal_created(journal: str) -> None:
    """Until the worker has created the SQLite journal (with its first run): `jeeves serve`
    refuses a path that holds no journal. A PostgreSQL journal is there already."""
    for _ in range(1200):
        if "://" in journal or Path(journal).exists():
            return
        anyio.from_thread.run(anyio.sleep, 0.05)
    raise TimeoutError(f"no worker created the journal {journal} in 60 s")


def follow(journal: str, session_id: str) -> None:
    """Follow run `session_id` from `jeeves serve --database`, drop it mid-way, re-attach."""
    journal_created(journal)
    with jeeves_serve(journal) as base:
        wait_listed(base, session_id)
        url = f"{base}/runs/{session_id}/events"
        before = read_events(url, until="critique")
        print(f"followed {session_id} from jeeves serve: {len(before)} events up to the first critique")
        after = read_events(url, last_event_id=before[-1][0])
        print(
            f"re-attached with Last-Event-ID {before[-1][0]}: {len(after) - 1} more, then end: {after[-1][1]['status']}"
        )
        seqs = [seq for seq, _ in before + after[:-1]]
        print(f"one sequence, no gap, no duplicate: {seqs == list(range(1, len(seqs) + 1))}")


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
            await anyio.to_thread.run_sync(follow, journal, "slug-1")
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
