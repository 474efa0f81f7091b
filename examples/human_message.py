"""A person's message reaches a running agent between two of its turns, and a replay brings it back.

An operator agent is fixing a web service. While its first tool call is still running, a
person watching the stream tells it where the config really is: `handle.inject(text)` on the
handle `jeeves.stream(...)` yields. The message is applied at the agent's next turn boundary,
so the agent's next model request ends with it, right after the tool's result; a
`steering.injected` event (source `human`) says so, and the step that applied it is
journaled. Then the recorded run is replayed offline, with no model and nobody injecting:
the same message comes back at the same turn, from the journal, and the run ends the same way.

    python examples/human_message.py                        # offline: a scripted model
    python examples/human_message.py --journal runs.jsonl   # keep the journal
    python examples/human_message.py --live                 # the agent on $JEEVES_MODEL

`--live` sends the agent to `$JEEVES_MODEL` (default `openai/gpt-4o-mini`) through litellm.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import anyio

import jeeves
from jeeves import Agent, FunctionModel
from jeeves.events import SessionStarted
from jeeves.messages import ModelRequest
from jeeves.telemetry.tracer import NullTracer, SpanHandle
from jeeves.testing import Reply, call

TASK = "The web service answers 503. Find out why and fix it."
ADVICE = "The config is in /etc/web.conf, not /etc/nginx: it points at port 9090."


class RequestLog(NullTracer):
    """A tracer that keeps every model request a run sends live (a served one opens no span)."""

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    def model_call(
        self, started: SessionStarted, request: ModelRequest
    ) -> AbstractContextManager[SpanHandle]:
        self.requests.append(request)
        return super().model_call(started, request)


def build(person_spoke: anyio.Event) -> Agent:
    """The operator: its one tool waits until the person has spoken, so the message lands mid-run."""

    @jeeves.tool
    async def look_around() -> str:
        """Look at the box: its running services and their logs."""
        await person_spoke.wait()
        return "web: running, 503 on /health; nginx: not installed"

    return Agent("You operate a small deploy box through your tools.", tools=[look_around], max_turns=5)


def scripted(request: ModelRequest) -> Reply:
    """Offline: look around first; then follow a person's advice if there is any."""
    if not any(m.role == "tool" for m in request.messages):
        return Reply(tool_calls=[call("look_around")])
    told = any(m.role == "user" and m.content == ADVICE for m in request.messages)
    return Reply(text="Set port 8080 in /etc/web.conf and restarted web." if told else "I found nothing.")


def model(live: bool) -> Any:
    return os.environ.get("JEEVES_MODEL", "openai/gpt-4o-mini") if live else FunctionModel(scripted)


async def record(live: bool, journal: Path) -> tuple[list[dict[str, Any]], jeeves.RunResult]:
    """The live run: a person injects a message while the agent's tool runs."""
    person_spoke, log = anyio.Event(), RequestLog()
    seen: list[dict[str, Any]] = []
    async with jeeves.stream(
        build(person_spoke), TASK, model=model(live), session_id="ops", journal=journal, tracer=log
    ) as handle:
        async for event in handle:
            seen.append(event.model_dump(mode="json", exclude={"seq", "ts", "replayed"}))
            if event.type == "tool.started":
                print(f"1. the agent called {event.name}; a person says: {ADVICE!r}")
                handle.inject(ADVICE)
                person_spoke.set()
            elif event.type == "steering.injected":
                print(f"2. steering.injected ({event.source}) → {event.target_session_id}")
        result = await handle.result()
    last = log.requests[-1].messages
    print(f"3. the agent's next model request ends with: {[m.role for m in last[-2:]]}")
    print(f"   {last[-1].role}: {last[-1].content}")
    print(f"   the agent answered: {result.text}")
    return seen, result


async def replay(journal: Path) -> tuple[list[dict[str, Any]], jeeves.RunResult, int]:
    """The offline replay: no model, no tool, nobody injecting; the journal has the message."""
    person_spoke, log = anyio.Event(), RequestLog()
    person_spoke.set()  # a replayed tool does not run; this is only so the architecture is the same
    async with jeeves.stream(
        build(person_spoke), TASK, session_id="ops", journal=journal, mode="replay", tracer=log
    ) as handle:
        seen = [e.model_dump(mode="json", exclude={"seq", "ts", "replayed"}) async for e in handle]
        result = await handle.result()
    return seen, result, len(log.requests)


async def main(live: bool = False, journal: Path | None = None) -> int:
    with tempfile.TemporaryDirectory() as scratch:
        path = journal or Path(scratch) / "runs.jsonl"
        recorded, result = await record(live, path)
        replayed, again, asked = await replay(path)
    human = [e["message"] for e in replayed if e["type"] == "steering.injected" and e["source"] == "human"]
    print(f"4. replayed offline: the journal brought back {human!r}")
    print(
        f"   identical events: {replayed == recorded}, same answer: {again.text == result.text}, model requests: {asked}"
    )
    return 0 if replayed == recorded and asked == 0 else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--live", action="store_true", help="use a real model through litellm")
    parser.add_argument("--journal", type=Path, help="keep the journal in this file (.jsonl, or SQLite)")
    args = parser.parse_args()
    try:
        sys.exit(anyio.run(main, args.live, args.journal))
    except jeeves.JeevesError as exc:  # a missing API key, a provider that failed: one line, no traceback
        sys.exit(f"error: {exc}")
