"""Many clients following one served run: each event encoded once, and re-attaching exact.

    python examples/many_followers.py                  # offline: 50 followers of one run
    python examples/many_followers.py --followers 200
    python examples/many_followers.py --live           # the writer on $JEEVES_MODEL via litellm

A run shown on many screens at once (a dashboard, a team watching an agent work) is one
run with many followers of `GET /runs/{id}/events`. The server turns each event into its
SSE bytes once and every follower is sent those same bytes, so a hundred followers cost
one encoding per event, not a hundred; a follower that is behind gets all the ready
events in one write.

This starts the server on a free port, starts one run, and follows it from `--followers`
clients at once. One of them disconnects halfway and comes back with `Last-Event-ID`, as
a browser's EventSource does after a network drop; it gets exactly the events it missed.
It prints what every client read and how many encodings the server made
(`RunRecord.wire.encoded`). Offline the writer is a scripted model that streams its notes
word by word; `--live` routes it to `$JEEVES_MODEL` (default `openai/gpt-4o-mini`).
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import sys
from typing import TextIO

import anyio
import httpx
import uvicorn
from starlette.applications import Starlette

from jeeves import Agent, Router, ScriptedModel
from jeeves.server import create_app

NOTES = (
    "Release 2.4 makes streaming cheaper: every event is encoded once however many clients "
    "follow the run, slow clients catch up in one write, and a client that reconnects with "
    "Last-Event-ID gets exactly the events it missed, in order, none twice."
)
ID = re.compile(r"^id: (\d+)$", re.MULTILINE)
COMMENT = re.compile(r"^:.*\n\n", re.MULTILINE)
"""A keep-alive comment: sent per connection while a run is quiet, so not part of the events."""


def app(live: bool) -> Starlette:
    model = os.environ.get("JEEVES_MODEL", "openai/gpt-4o-mini") if live else ScriptedModel([NOTES])
    writer = Agent("You write short release notes.", role="writer")
    return create_app({"notes": lambda: (writer, Router({"default": model}))})


async def read(client: httpx.AsyncClient, sid: str, last: int = 0, stop_after: int | None = None) -> str:
    """The SSE text of the run after `last`; with `stop_after`, disconnect after that many events."""
    text = ""
    headers = {"Last-Event-ID": str(last)}
    async with client.stream("GET", f"/runs/{sid}/events", headers=headers) as response:
        async for chunk in response.aiter_text():
            text += chunk
            if stop_after is not None and len(ID.findall(text)) >= stop_after:
                return text[: _end_of_message(text, stop_after)]
    return text


def _end_of_message(text: str, count: int) -> int:
    """Where the `count`-th message ends (a client keeps only whole messages)."""
    match = list(ID.finditer(text))[count - 1]
    return text.index("\n\n", match.end()) + 2


async def follow(base: str, followers: int, out: TextIO, server_app: Starlette) -> dict[str, object]:
    async with httpx.AsyncClient(base_url=base, timeout=60) as client:
        sid = (await client.post("/runs", json={"architecture": "notes", "task": "Notes for 2.4."})).json()[
            "session_id"
        ]
        bodies: list[str] = [""] * followers

        async def one(i: int) -> None:
            bodies[i] = COMMENT.sub("", await read(client, sid))

        async with anyio.create_task_group() as group:
            for i in range(followers):
                group.start_soon(one, i)
        events = len(ID.findall(bodies[0]))
        half = max(1, events // 2)
        first = await read(client, sid, stop_after=half)  # drops the connection halfway
        last_seen = int(ID.findall(first)[-1])
        rest = COMMENT.sub("", await read(client, sid, last=last_seen))  # comes back, as EventSource does
        first = COMMENT.sub("", first)
        record = server_app.state.runs.get(sid)
        run = (await client.get(f"/runs/{sid}")).json()
    if "error" in run:  # a missing API key, a provider that failed: the server says which
        print(f"the run failed: {run['error']['type']}: {run['error']['message']}", file=out)
        return {"status": run["status"]}
    seqs = [int(s) for s in ID.findall(first + rest)]
    summary: dict[str, object] = {
        "status": run["status"],
        "events": events,
        "identical": len(set(bodies)) == 1,
        "encoded": record.wire.encoded,
        "reattach_exact": first + rest == bodies[0] and seqs == list(range(1, events + 1)),
        "last_seen": last_seen,
    }
    print(f"run {sid}: {events} events, then `event: end`", file=out)
    print(f"{followers} followers read them all; identical streams: {summary['identical']}", file=out)
    print(
        f"encodings the server made for all of them: {record.wire.encoded}; "
        f"one per event: {record.wire.encoded == events}",
        file=out,
    )
    print(
        f"a follower that left after event {last_seen} came back with Last-Event-ID: {last_seen} "
        f"and got events {last_seen + 1}..{events}; exact: {summary['reattach_exact']}",
        file=out,
    )
    return summary


async def main(live: bool = False, followers: int = 50, out: TextIO = sys.stdout) -> dict[str, object]:
    """Serve on a free port, follow one run from `followers` clients; return what they saw."""
    served = app(live)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(served, log_level="warning"))
    async with anyio.create_task_group() as group:
        group.start_soon(server.serve, [sock])
        while not server.started:  # noqa: ASYNC110 - uvicorn offers no event for this
            await anyio.sleep(0.01)
        summary = await follow(f"http://127.0.0.1:{sock.getsockname()[1]}", followers, out, served)
        server.should_exit = True
    sock.close()
    return summary


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--live", action="store_true", help="route the writer to $JEEVES_MODEL through litellm"
    )
    parser.add_argument("--followers", type=int, default=50, help="clients following the run at once")
    args = parser.parse_args()
    if args.followers < 1:
        parser.error(f"--followers must be at least 1, got {args.followers!r}")
    sys.exit(0 if anyio.run(main, args.live, args.followers)["status"] == "completed" else 1)
