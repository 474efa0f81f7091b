"""Record a run, stop it half-way, resume it, then replay it offline and watch a replay diverge.

    python examples/replay_and_resume.py                         # offline: scripted models
    python examples/replay_and_resume.py --live                  # real models through litellm
    python examples/replay_and_resume.py --journal runs.jsonl    # keep the journal, then:
    jeeves runs runs.jsonl
    jeeves replay runs.jsonl example                             # from the repository root

The run is an ActorCritic: a coder drafts `add(a, b)`, an LLM critic and a test function
review it, and the coder revises until both approve. It is recorded in a JSONL journal
under the root session id `example`; its children are `example__actor_0`,
`example__critic_0`, `example__actor_1`… The script then:

1. stops the run after its second model call, as a crash would;
2. runs it again with the same session id: the recorded calls are served from the
   journal, the rest runs live;
3. replays it with no model and no tool reachable, and checks that every session's
   events are the recorded ones;
4. replays it with a changed prompt, which raises ReplayDivergence with a diff.

The journal names this file's `build()` as the architecture (`architecture_ref=`), so
`jeeves replay` can rebuild it without being told. `--live` routes every role to
`$JEEVES_MODEL` (default `openai/gpt-4o-mini`; set the provider's API key), and the
critic to `$JEEVES_CRITIC_MODEL` when that is set.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any, TextIO

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # so `examples.replay_and_resume` imports

import jeeves
from jeeves import ActorCritic, Agent, FunctionModel, ReplayDivergence, Router
from jeeves.critics import LLMCritic
from jeeves.events import Event
from jeeves.journal import list_runs
from jeeves.messages import ModelRequest

TASK = "Write a Python function add(a, b) that returns the sum of two numbers."
REF = "examples.replay_and_resume:build"


def passes_tests(task: str, output: str) -> bool:
    """A code critic standing in for a test run (journaled as a step, so a replay skips it)."""
    return "return a + b" in " ".join(output.split())


def build(
    instructions: str = "You write small, correct Python functions. Reply with the code only.",
) -> ActorCritic:
    """The architecture the journal names: a coder reviewed by an LLM critic and a test."""
    return ActorCritic(Agent(instructions), [LLMCritic(), passes_tests], max_rounds=2)


def _last_user(request: ModelRequest) -> str:
    return next((m.content or "" for m in reversed(request.messages) if m.role == "user"), "")


def offline_router() -> Router:
    """Scripted replies that depend only on the request, so a resumed run gets the same ones."""

    def coder(request: ModelRequest) -> str:
        fixed = "subtracts" in _last_user(request)
        return f"def add(a, b):\n    return a {'+' if fixed else '-'} b\n"

    def critic(request: ModelRequest) -> str:
        if "a - b" in _last_user(request):
            return (
                '{"score": 0.1, "issues": ["add subtracts b instead of adding it"], "summary": "Wrong sign."}'
            )
        return '{"score": 1.0, "issues": [], "summary": "Correct."}'

    return Router(
        {
            "actor": FunctionModel(coder, model_name="coder"),
            "critic": FunctionModel(critic, model_name="critic"),
        }
    )


def live_router() -> Router:
    routes = {"default": os.environ.get("JEEVES_MODEL", "openai/gpt-4o-mini")}
    if os.environ.get("JEEVES_CRITIC_MODEL"):
        routes["critic"] = os.environ["JEEVES_CRITIC_MODEL"]
    return Router(routes)


def per_session(events: list[Event]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for event in events:
        out[event.session_id].append(event.model_dump(mode="json", exclude={"seq", "ts", "replayed"}))
    return dict(out)


async def interrupted(router: Router, journal: Path, out: TextIO) -> None:
    """Start the run and stop it after two model calls: leaving the stream cancels the tree."""
    calls = 0
    async with jeeves.stream(
        build(), TASK, router=router, journal=journal, session_id="example", architecture_ref=REF
    ) as events:
        async for event in events:
            calls += event.type == "model.completed"
            if calls == 2:
                break
    print(f"1. recorded {calls} model calls, then stopped the run", file=out)


async def main(live: bool = False, journal: Path | None = None, out: TextIO = sys.stdout) -> jeeves.RunResult:
    router = live_router() if live else offline_router()
    with tempfile.TemporaryDirectory() as scratch:
        path = journal or Path(scratch) / "runs.jsonl"
        await interrupted(router, path, out)

        recorded: list[Event] = []
        async with jeeves.stream(build(), TASK, router=router, journal=path, session_id="example") as events:
            async for event in events:
                recorded.append(event)
            result = await events.result()
        served = sum(e.type == "model.completed" and e.replayed for e in recorded)
        print(
            f"2. resumed: {served} calls served from the journal, {result.usage.model_calls} made live",
            file=out,
        )
        print(f"   {result.stop_reason} after {len(result.detail.rounds)} rounds:\n{result.text}", file=out)  # type: ignore[union-attr]

        replayed: list[Event] = []
        async with jeeves.stream(build(), TASK, journal=path, session_id="example", mode="replay") as events:
            async for event in events:
                replayed.append(event)
            again = await events.result()
        same = per_session(replayed) == per_session(recorded) and again.text == result.text
        print(
            f"3. replayed offline: {len(replayed)} events, identical per session: {same}, "
            f"model calls: {again.usage.model_calls}",
            file=out,
        )

        try:
            await jeeves.replay(build("You write Python functions."), path, "example")
        except ReplayDivergence as exc:
            print(f"4. a changed prompt diverges at session {exc.session_id!r}, step {exc.step}:", file=out)
            print("   " + "\n   ".join(str(exc).splitlines()[1:8]), file=out)

        for run in await list_runs(path):
            print(
                f"runs: {run.session_id} {run.status}, {run.rounds} rounds, ${run.usage.cost_usd:.4f}",
                file=out,
            )
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--live", action="store_true", help="use real models through litellm")
    parser.add_argument("--journal", type=Path, help="keep the journal in this file (.jsonl, or SQLite)")
    args = parser.parse_args()
    try:
        anyio.run(main, args.live, args.journal)
    except jeeves.JeevesError as exc:  # a missing API key, a provider that failed: one line, no traceback
        sys.exit(f"error: {exc}")
