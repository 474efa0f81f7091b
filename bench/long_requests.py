"""What a long run's model requests cost the server in time: the request log a served run
keeps, and the explorer's read of a recorded session's requests (issue 33, target 5's
time side: `bench/long_runs.py` measures their memory).

The agent: a `FunctionModel` that answers every turn with one tool call (a 200-byte result)
until the last, which answers in text; it keeps no requests and reports its usage, so the
fake itself does no work that grows with the conversation. For each length (`--turns`,
250 to 2,000 by default), each case runs in a fresh process per jeeves tree (`NAME=PATH`,
e.g. the commit before a change exported to a folder, and the worktree), the trees taking
turns round by round:

- `bare run`: the run alone, µs of CPU per turn;
- `served run`: the same run with the server's `RecordingTracer` filling a `RequestLog`,
  as every run `jeeves serve` starts has (`jeeves.server.requests`), µs of CPU per turn;
- `explorer read`: `JournalBrowser.requests` of the run's session from a SQLite journal
  (what `GET /journal/runs/{id}/requests/{session}` sends, `jeeves view`), µs per turn.

Linear work keeps each per-turn figure flat as the run grows. Each process freezes what its
imports and warm-up made (`gc.freeze()`) before the clock starts, so no full collection of
the interpreter's own objects lands in one measured run and not another. Best of `--rounds`; prints a
markdown table, `--out FILE` writes it with the JSON of every sample.

    python bench/long_requests.py before=/tmp/jeeves-before after=. --out bench/results/LONG_REQUESTS.md
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

CASES = ("bare run", "served run", "explorer read")
TURNS = (250, 500, 1000, 2000)
ROOT = "long"


def _agent(turns: int) -> Any:
    from jeeves import Agent, FunctionModel, ToolCall, Usage, tool
    from jeeves.testing import Reply

    usage = Usage(input_tokens=10, output_tokens=5, model_calls=1)

    @tool
    async def step(n: int) -> str:
        """Take one step."""
        return "x" * 200

    def act(request: Any) -> Reply:
        model.requests.clear()  # the fake keeps no conversation of its own
        done = (len(request.messages) - 2) // 2
        if done < turns - 1:
            return Reply(
                tool_calls=[ToolCall(id=f"c{done}", name="step", arguments=f'{{"n": {done}}}')], usage=usage
            )
        return Reply(text="All steps done.", usage=usage)

    model = FunctionModel(act)
    return Agent("Take the steps one by one.", tools=[step], model=model, max_turns=turns + 1)


def _child(case: str, turns: int, scratch: str) -> None:
    import gc
    import json
    import time

    import anyio

    import jeeves

    async def run(**options: Any) -> None:
        result = await jeeves.run(_agent(turns), "Go.", session_id=ROOT, **options)
        if result.text != "All steps done.":
            raise RuntimeError(f"the run ended early: {result.text!r}")

    async def measured() -> float:
        if case == "explorer read":
            from jeeves.journal.sqlite import SQLiteJournal
            from jeeves.server.recorded import JournalBrowser

            path = Path(scratch) / f"journal-{turns}.db"
            async with SQLiteJournal(path) as journal:
                await run(journal=journal)
            browser = JournalBrowser(path)
            gc.collect()
            gc.freeze()
            start = time.process_time()
            calls = await browser.requests(ROOT)
            spent = time.process_time() - start
            if len(calls) != turns:
                raise RuntimeError(f"read {len(calls)} calls of {turns}")
            return spent
        from jeeves.server.requests import RecordingTracer, RequestLog

        def options() -> dict[str, Any]:  # a served run's tracer, with a log of its own
            return {"tracer": RecordingTracer(RequestLog())} if case == "served run" else {}

        await run(**options())  # warm: imports, schemas
        gc.collect()
        gc.freeze()  # what import and warm-up made: no full collection of it lands in the measured run
        served = options()
        start = time.process_time()
        await run(**served)
        return time.process_time() - start

    spent = anyio.run(measured)
    print(json.dumps({"us_per_turn": spent / turns * 1e6}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="*", help="NAME=PATH of a jeeves tree to measure")
    parser.add_argument("--turns", default=",".join(map(str, TURNS)), help="comma-separated run lengths")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", help="write the table and the samples here (markdown)")
    parser.add_argument("--child", nargs=3, metavar=("CASE", "TURNS", "SCRATCH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return _child(args.child[0], int(args.child[1]), args.child[2])
    if not args.trees or not all("=" in pair for pair in args.trees):
        sys.exit("error: name the trees to measure as NAME=PATH, e.g. `after=.`.")
    try:
        lengths = [int(n) for n in args.turns.split(",")]
    except ValueError:
        sys.exit(f"error: --turns {args.turns!r} is not a list of counts; e.g. --turns 250,500.")
    if args.rounds < 1 or not lengths or min(lengths) < 2:
        sys.exit("error: --rounds must be at least 1 and every --turns at least 2.")
    trees = dict(pair.split("=", 1) for pair in args.trees)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from common import trees_in_turns, write_table

    me = str(Path(__file__).resolve())
    cases = [f"{case}@{n}" for n in lengths for case in CASES]
    with tempfile.TemporaryDirectory() as scratch:

        def argv(name: str, case: str) -> list[str]:
            what, n = case.split("@")
            folder = Path(scratch) / name
            folder.mkdir(exist_ok=True)
            return [me, "--child", what, n, str(folder)]

        samples = trees_in_turns(trees, cases, args.rounds, argv, "measure a long run's requests")
    head = f"µs of CPU per turn, best of {args.rounds} fresh processes (flat: linear in the run's length)"
    lines = [head, "", "| tree | case | " + " | ".join(f"{n:,} turns" for n in lengths) + " |"]
    lines.append("|---|---|" + "--:|" * len(lengths))
    for name in trees:
        for case in CASES:
            cells = [min(s["us_per_turn"] for s in samples[name][f"{case}@{n}"]) for n in lengths]
            lines.append(f"| {name} | {case} | " + " | ".join(f"{c:,.0f}" for c in cells) + " |")
    write_table(args.out, lines, samples)


if __name__ == "__main__":
    main()
