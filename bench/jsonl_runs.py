"""Many runs into one JSONL journal: what the next run costs as the file grows.

Each jeeves tree named on the command line (`NAME=PATH`: e.g. the commit before a change
exported to a folder, and the worktree) records `--runs` runs (1,000 by default), one after
the other, into one new JSONL file, in a fresh process with that tree on PYTHONPATH. The run:
an Agent with one tool, whose FunctionModel calls the tool once and then answers (three
steps and a session record). The store is opened by path for each run, as `jeeves run SPEC
--journal runs.jsonl` does, so each run reads the file. Prints, per tree, the wall
milliseconds of the first run and of the runs a tenth, half and all the way through, with
the file's size then; `--out FILE` writes the table with the JSON of every sample.

    python bench/jsonl_runs.py before=/tmp/jeeves-before after=. --out bench/results/JSONL_RUNS.md
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

CASES = ("series",)


def _child(runs: int) -> None:
    import anyio

    import jeeves
    from jeeves import Agent, ToolCall, tool
    from jeeves.testing import FunctionModel, Reply

    @tool
    async def lookup(key: str) -> str:
        """Look a key up."""
        return "r" * 200

    def answer(request: object) -> Reply:
        if len(request.messages) > 2:  # type: ignore[attr-defined]
            return Reply(text="found it")
        return Reply(tool_calls=[ToolCall(id="c0", name="lookup", arguments='{"key": "k"}')])

    marks = sorted({1, max(1, runs // 10), max(1, runs // 2), runs})
    samples = []

    async def main(path: Path) -> None:
        for i in range(1, runs + 1):
            start = time.perf_counter()
            agent = Agent("You look things up.", tools=[lookup])
            await jeeves.run(
                agent, f"task {i}", model=FunctionModel(answer), journal=path, session_id=f"run-{i}"
            )
            if i in marks:
                took = (time.perf_counter() - start) * 1000
                samples.append({"run": i, "ms": took, "kb": (await anyio.Path(path).stat()).st_size / 1024})

    with tempfile.TemporaryDirectory() as scratch:
        anyio.run(main, Path(scratch) / "runs.jsonl")
    print(json.dumps(samples))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="*", help="NAME=PATH of a jeeves tree to measure")
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--out", help="write the table and the samples here (markdown)")
    parser.add_argument("--child", type=int, metavar="RUNS", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return _child(args.child)
    if not args.trees or not all("=" in pair for pair in args.trees):
        sys.exit("error: name the trees to measure as NAME=PATH, e.g. `after=.`.")
    if args.runs < 1:
        sys.exit("error: --runs must be at least 1.")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from common import trees_in_turns, write_table

    trees = dict(pair.split("=", 1) for pair in args.trees)
    me = str(Path(__file__).resolve())
    samples = trees_in_turns(
        trees, CASES, 1, lambda name, case: [me, "--child", str(args.runs)], "record runs"
    )
    lines = [
        f"{args.runs:,} runs recorded one after the other into one JSONL journal, each opening it by path",
        "",
        "| tree | run | ms | file KB |",
        "|---|--:|--:|--:|",
    ]
    for name in trees:
        for sample in samples[name]["series"][0]:
            lines.append(f"| {name} | {sample['run']:,} | {sample['ms']:.1f} | {sample['kb']:,.0f} |")
    write_table(args.out, lines, samples)


if __name__ == "__main__":
    main()
