"""Stream a Supervisor → ActorCritic team to a browser, to any AG-UI client, and to curl.

    python examples/stream_to_browser.py            # serve it offline; open http://127.0.0.1:8000/
    python examples/stream_to_browser.py --live     # real models through litellm
    python examples/stream_to_browser.py --once     # one run over HTTP, printed; then exit

The team:

    supervisor (Supervisor)
    ├── coder (ActorCritic)   an actor writes fizzbuzz, an LLM critic scores it, it revises
    └── docs  (ActorCritic)   an actor writes the docstring, the critic approves it

Served, the page at `/` starts runs and shows the session tree live: each worker, each
actor and critic round with its score, tokens and cost. The same run is on
`GET /runs/{id}/events` (jeeves events as SSE; `curl -N` it) and on `POST /agui` for an
AG-UI client (`@ag-ui/client`'s HttpAgent pointed at `http://127.0.0.1:8000/agui`).

`--once` starts the server on a free port, starts a run with `POST /runs`, follows it over
SSE printing the tree as it grows, then asks the AG-UI endpoint for a second run and counts
what came back. Offline, every reply comes from a scripted model (a fresh one per run);
`--live` routes every role to `$JEEVES_MODEL` (default `openai/gpt-4o-mini`) and critics to
`$JEEVES_CRITIC_MODEL` when set. Provider keys stay in the server process.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
from collections import Counter
from typing import TextIO

import anyio
import httpx
import uvicorn
from starlette.applications import Starlette

from jeeves import ActorCritic, Agent, LLMCritic, Router, ScriptedModel, Supervisor
from jeeves.server import create_app
from jeeves.testing import Reply, call

TASK = "Write fizzbuzz(n) in Python, with a docstring."

CODE_V1 = "def fizzbuzz(n):\n    return ['Fizz' if i % 3 == 0 else str(i) for i in range(n)]"
CODE_V2 = (
    "def fizzbuzz(n):\n"
    "    return ['FizzBuzz' if i % 15 == 0 else 'Fizz' if i % 3 == 0 else 'Buzz' if i % 5 == 0 else str(i)"
    " for i in range(1, n + 1)]"
)


def team() -> Supervisor:
    def reviewed(what: str) -> ActorCritic:
        return ActorCritic(Agent(f"You write {what}. Reply with it only."), LLMCritic(), max_rounds=2)

    return Supervisor({"coder": reviewed("Python code"), "docs": reviewed("docstrings")})


def offline_model() -> ScriptedModel:
    """One run's replies, keyed on role paths so the parallel workers read their own."""
    return ScriptedModel(
        {
            "supervisor": [
                Reply(
                    text="The coder writes it while docs drafts the docstring.",
                    tool_calls=[
                        call("delegate", {"worker": "coder", "instructions": "Write fizzbuzz(n)."}),
                        call("delegate", {"worker": "docs", "instructions": "Docstring for fizzbuzz(n)."}),
                    ],
                ),
                f"{CODE_V2}\n\nDocstring: Return the FizzBuzz words for 1..n.",
            ],
            "coder.actor": [CODE_V1, CODE_V2],
            "coder.critic": [
                '{"score": 0.35, "issues": ["no Buzz or FizzBuzz", "starts at 0"], "summary": "incomplete"}',
                '{"score": 0.95, "issues": [], "summary": "correct"}',
            ],
            "docs.actor": ['"""Return the FizzBuzz words for 1..n."""'],
            "docs.critic": ['{"score": 0.9, "issues": [], "summary": "clear"}'],
        },
        model_name="scripted",
    )


def router(live: bool) -> Router:
    if not live:
        return Router({"default": offline_model()})
    routes = {"default": os.environ.get("JEEVES_MODEL", "openai/gpt-4o-mini")}
    if os.environ.get("JEEVES_CRITIC_MODEL"):
        routes["critic"] = os.environ["JEEVES_CRITIC_MODEL"]
    return Router(routes)


def app(live: bool = False) -> Starlette:
    """The server: one architecture, a fresh router per run (scripted models are consumed)."""
    return create_app({"team": team}, router=lambda: router(live))


async def once(live: bool = False, out: TextIO = sys.stdout) -> dict[str, object]:
    """Serve on a free port, run the team over SSE and over AG-UI, print both; return a summary."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app(live), log_level="warning"))
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    async with anyio.create_task_group() as group:
        group.start_soon(server.serve, [sock])
        while not server.started:  # noqa: ASYNC110 - uvicorn offers no event for this
            await anyio.sleep(0.01)
        async with httpx.AsyncClient(base_url=base, timeout=60) as client:
            summary = await follow_sse(client, out)
            summary["agui"] = await count_agui(client, out)
        server.should_exit = True
    sock.close()
    return summary


async def follow_sse(client: httpx.AsyncClient, out: TextIO) -> dict[str, object]:
    started = await client.post("/runs", json={"architecture": "team", "task": TASK, "session_id": "demo"})
    sid = started.json()["session_id"]
    depth: dict[str, int] = {}
    end: dict[str, object] = {}
    async with client.stream("GET", f"/runs/{sid}/events") as response:
        event_name = None
        async for line in response.aiter_lines():
            if line.startswith("event: "):
                event_name = line[7:]
            elif line.startswith("data: ") and event_name == "end":
                end = json.loads(line[6:])
            elif line.startswith("data: "):
                show(json.loads(line[6:]), depth, out)
    run = (await client.get(f"/runs/{sid}")).json()
    if "error" in run:  # a missing API key, a provider that failed: the server says which
        print(f"\nthe run failed: {run['error']['type']}: {run['error']['message']}", file=out)
    else:
        print(f"\n{run['output']}\n\nend of stream: {end}", file=out)
    return {
        "session_id": sid,
        "status": end.get("status"),
        "output": run.get("output"),
        "sessions": list(depth),
    }


def show(event: dict[str, object], depth: dict[str, int], out: TextIO) -> None:
    sid = str(event["session_id"])
    if event["type"] == "session.started":
        depth[sid] = depth.get(str(event["parent_id"]), -1) + 1
        print(f"{'  ' * depth[sid]}▶ {event['role']} [{event['architecture']}]", file=out)
    elif event["type"] == "critique":
        mark = "approved" if event["passed"] else "revise"
        print(f"{'  ' * depth[sid]}  round {event['round']}: score {event['score']:.2f} ({mark})", file=out)


async def count_agui(client: httpx.AsyncClient, out: TextIO) -> dict[str, int]:
    body = {
        "threadId": "thread-1",
        "runId": "agui-demo",
        "messages": [{"id": "u1", "role": "user", "content": TASK}],
        "forwardedProps": {"architecture": "team"},
    }
    kinds: Counter[str] = Counter()
    async with client.stream("POST", "/agui", json=body, headers={"Accept": "text/event-stream"}) as response:
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                kinds[json.loads(line[6:])["type"]] += 1
    print("AG-UI events:", dict(sorted(kinds.items())), file=out)
    return dict(kinds)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--live", action="store_true", help="use real models through litellm")
    parser.add_argument("--once", action="store_true", help="run once over HTTP, print it, exit")
    parser.add_argument("--port", type=int, default=8000, help="port to serve on (default 8000)")
    args = parser.parse_args()
    if args.once:
        sys.exit(0 if anyio.run(once, args.live)["status"] == "completed" else 1)
    else:
        print(f"Open http://127.0.0.1:{args.port}/ and press Start (Ctrl-C stops).")
        uvicorn.run(app(args.live), host="127.0.0.1", port=args.port, log_level="warning")
