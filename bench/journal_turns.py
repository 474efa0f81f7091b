"""Per model call cost of a journaled Agent run as it grows: 25 turns against 200 turns.

A tool-using Agent whose FunctionModel answers at once (a tool call every turn, text at the
last), each tool returning 200 bytes: per model call µs (the run's wall time over its model
calls), best of 3 runs, with no journal (bare), a memory journal, SQLite (a temp file) and
PostgreSQL (a throwaway cluster, `fsync=off`, as bench/durable.py's).

Side by side in one run: each jeeves tree named on the command line (`NAME=PATH`, e.g. the
commit before a change exported to a folder, and the worktree) is measured in its own
subprocess with that tree on PYTHONPATH; the trees take turns round by round, so a change in
the machine's load falls on all of them alike. `--profile` adds cProfile's top functions of a
200-turn run per journal, for the last tree. `--callgrind` adds instructions per model call
(valgrind's callgrind, counting only the measured run: a count, not a time, so it does not move
with the machine's load), one valgrind process per tree and journal.

    python bench/journal_turns.py before=/tmp/jeeves-before after=. --out bench/results/JOURNAL_TURNS
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
TURNS = (25, 200)
JOURNALS = ("bare", "memory", "sqlite", "postgres")
RESULT = "r" * 200
"""Each tool call's result: 200 bytes."""


# -- one measurement, in a subprocess whose PYTHONPATH holds the tree under test ------------------
def _agent_and_model(turns: int) -> tuple[Any, Any]:
    from jeeves import Agent, ToolCall, Usage, tool
    from jeeves.testing import FunctionModel, Reply

    usage = Usage(input_tokens=10, output_tokens=5, model_calls=1)  # given: the fake counts no words

    @tool
    async def lookup(key: str) -> str:
        """Look a key up."""
        return RESULT

    def answer(request: Any) -> Any:
        made = (len(request.messages) - 2) // 2  # turn k's request holds 2 + 2k messages
        if made + 1 >= turns:
            return Reply(text="done", usage=usage)
        call = ToolCall(id=f"c{made}", name="lookup", arguments='{"key": "k"}')
        return Reply(tool_calls=[call], usage=usage)

    return Agent("You look things up.", tools=[lookup], max_turns=turns + 1), FunctionModel(answer)


def _open(kind: str, scratch: Path, pg_url: str | None, tag: str) -> Any:
    """The store a process records into, opened once (as a worker's): its tables are made by
    the warm-up run, so no run pays for a new file or connection."""
    from jeeves.journal.memory import MemoryJournal
    from jeeves.journal.postgres import PostgresJournal
    from jeeves.journal.sqlite import SQLiteJournal

    if kind == "memory":
        return MemoryJournal()
    if kind == "sqlite":
        return SQLiteJournal(scratch / f"turns-{tag}.db")
    if kind == "postgres":
        assert pg_url is not None
        return PostgresJournal(pg_url)
    return None


async def _one(kind: str, journal: Any, turns: int, run_id: str) -> dict[str, float]:
    """µs per model call of one run of `turns` model calls: wall time, and this process's CPU
    time (its threads included: SQLite writes in a worker thread; PostgreSQL's server not)."""
    import jeeves

    arch, model = _agent_and_model(turns)
    start, cpu = time.perf_counter(), time.process_time()
    result = await jeeves.run(arch, "Look it up.", model=model, journal=journal, session_id=run_id)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    if result.text != "done" or len(model.requests) != turns:
        raise RuntimeError(f"{kind} at {turns} turns made {len(model.requests)} calls: {result.text!r}")
    return {"wall": elapsed / turns * 1e6, "cpu": cpu / turns * 1e6}


async def _measure(kinds: list[str], scratch: Path, pg_url: str | None, tag: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in kinds:
        journal = _open(kind, scratch, pg_url, tag)
        try:
            await _one(kind, journal, 25, f"{tag}-{kind}-warm")  # imports, caches, tables
            out[kind] = {str(t): await _one(kind, journal, t, f"{tag}-{kind}-{t}") for t in TURNS}
        finally:
            if journal is not None:
                await journal.aclose()
    return out


async def _profile(kinds: list[str], scratch: Path, pg_url: str | None, tag: str) -> dict[str, str]:
    import cProfile
    import io
    import pstats

    out = {}
    for kind in kinds:
        journal = _open(kind, scratch, pg_url, tag)
        await _one(kind, journal, 25, f"{tag}-{kind}-pwarm")
        profiler = cProfile.Profile()
        profiler.enable()
        await _one(kind, journal, 200, f"{tag}-{kind}-prof")
        profiler.disable()
        if journal is not None:
            await journal.aclose()
        text = io.StringIO()
        stats = pstats.Stats(profiler, stream=text)
        stats.sort_stats("tottime").print_stats(14)
        out[kind] = "\n".join(line for line in text.getvalue().splitlines() if line.strip())
    return out


async def _marked(kinds: list[str], scratch: Path, pg_url: str | None, tag: str) -> dict[str, str]:
    """Each run measured is bracketed by `os.getppid()` and `os.getpgrp()`, which callgrind is
    told to zero its counts before and dump them before (`_callgrind`): a dump per run, in order."""
    for kind in kinds:
        journal = _open(kind, scratch, pg_url, tag)
        await _one(kind, journal, 25, f"{tag}-{kind}-warm")
        for turns in TURNS:
            os.getppid()
            await _one(kind, journal, turns, f"{tag}-{kind}-{turns}")
            os.getpgrp()
        if journal is not None:
            await journal.aclose()
    return {}


def _child(args: argparse.Namespace) -> None:
    import anyio

    kinds = args.kinds.split(",")
    scratch = Path(args.scratch)
    work = _marked if args.callgrind else _profile if args.profile else _measure
    result = anyio.run(work, kinds, scratch, args.pg_url, args.tag, backend="asyncio")
    print(json.dumps(result))


# -- the driver ----------------------------------------------------------------------------------
def _run_child(
    tree: Path, kinds: list[str], scratch: Path, pg_url: str | None, tag: str, profile: bool
) -> Any:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    command = [sys.executable, str(Path(__file__).resolve()), "--child", "--kinds", ",".join(kinds)]
    command += ["--scratch", str(scratch), "--tag", tag]
    if pg_url is not None:
        command += ["--pg-url", pg_url]
    if profile:
        command.append("--profile")
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"{tree}: the measurement failed: {done.stderr[-3000:]}")
    return json.loads(done.stdout.splitlines()[-1])


def _callgrind(name: str, tree: Path, kind: str, scratch: Path, pg_url: str | None) -> dict[str, float]:
    """Instructions per model call at each length in TURNS, for `kind` on `tree` (called `name`)."""
    out = scratch / f"callgrind-{kind}"
    command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}.%p"]
    command += ["--zero-before=os_getppid", "--dump-before=os_getpgrp", sys.executable]
    command += [str(Path(__file__).resolve()), "--child", "--callgrind", "--kinds", kind]
    command += ["--scratch", str(scratch), "--tag", f"cg-{name}"]
    if pg_url is not None:
        command += ["--pg-url", pg_url]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise RuntimeError(f"{tree}: the callgrind run failed: {done.stderr[-3000:]}")
    dumps = sorted(scratch.glob(f"callgrind-{kind}.*.*"), key=lambda p: int(p.name.rsplit(".", 1)[1]))
    counts = [_summary(path) for path in dumps]
    for path in scratch.glob(f"callgrind-{kind}.*"):
        path.unlink()
    return {str(turns): count / turns for turns, count in zip(TURNS, counts, strict=True)}


def _summary(path: Path) -> int:
    for line in path.read_text().splitlines():
        if line.startswith("summary:"):
            return int(line.split()[1])
    raise RuntimeError(f"{path}: no summary line")


def _postgres() -> tuple[Any, dict[str, str]]:
    import pgcluster

    bin_dir = pgcluster.find_binaries()
    if bin_dir is None:
        return None, {}
    cluster = pgcluster.Cluster(bin_dir)
    cluster.start()
    return cluster, {}


def _table(
    trees: list[str], best: dict[str, dict[str, dict[str, float]]], unit: str = "µs/call"
) -> list[str]:
    head = "| journal | " + " | ".join(
        f"{name} {unit} @25 | {name} {unit} @200 | {name} 200/25 | {name} ×bare @200" for name in trees
    )
    lines = [head + " |", "|---|" + "--:|" * (4 * len(trees))]
    for kind in JOURNALS:
        if not all(kind in best[name] for name in trees):
            continue
        cells = []
        for name in trees:
            row, bare = best[name][kind], best[name]["bare"]
            cells += [f"{row['25']:,.0f}", f"{row['200']:,.0f}", f"{row['200'] / row['25']:.2f}"]
            cells.append(f"{row['200'] / bare['200']:.2f}")
        lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    return lines


def _driver(args: argparse.Namespace) -> None:
    import tempfile

    trees = dict(pair.split("=", 1) for pair in args.trees)
    cluster, _ = _postgres() if not args.no_postgres else (None, {})
    kinds = [k for k in JOURNALS if k != "postgres" or cluster is not None]
    samples: dict[str, dict[str, dict[str, dict[str, list[float]]]]] = {name: {} for name in trees}
    profiles: dict[str, str] = {}
    try:
        with tempfile.TemporaryDirectory() as scratch:
            urls = {name: cluster.database() if cluster else None for name in trees}
            for round_ in range(args.runs):
                for name, tree in trees.items():
                    got = _run_child(Path(tree), kinds, Path(scratch), urls[name], f"{name}{round_}", False)
                    for kind, by_turns in got.items():
                        for turns, us in by_turns.items():
                            for metric, value in us.items():
                                at = samples[name].setdefault(metric, {}).setdefault(kind, {})
                                at.setdefault(turns, []).append(value)
            if args.profile:
                last = list(trees)[-1]
                profiles = _run_child(Path(trees[last]), kinds, Path(scratch), urls[last], "prof", True)
            if args.callgrind:
                for name, tree in trees.items():
                    by_kind = samples[name].setdefault("instructions", {})
                    for kind in kinds:
                        counted = _callgrind(name, Path(tree), kind, Path(scratch), urls[name])
                        by_kind[kind] = {turns: [value] for turns, value in counted.items()}
    finally:
        if cluster is not None:
            cluster.stop()
    metrics = ("wall", "cpu", "instructions") if args.callgrind else ("wall", "cpu")
    best = {
        metric: {
            name: {kind: {t: min(v) for t, v in by.items()} for kind, by in samples[name][metric].items()}
            for name in trees
        }
        for metric in metrics
    }
    report = {"trees": trees, "runs": args.runs, "samples": samples, "best": best, "profiles": profiles}
    lines = []
    for metric in ("wall", "cpu"):
        lines += ["", f"{metric} time, best of {args.runs} runs, µs per model call:", ""]
        lines += _table(list(trees), best[metric])
    if args.callgrind:
        lines += ["", "instructions per model call (callgrind, one run each):", ""]
        lines += _table(list(trees), best["instructions"], "Ir/call")
    print("\n".join(lines))
    if args.out:
        out = Path(args.out)
        out.with_suffix(".json").write_text(json.dumps(report, indent=1) + "\n")
        body = [*lines]
        for kind, text in profiles.items():
            body += ["", f"### cProfile, {kind}, 200 turns ({list(trees)[-1]})", "", "```", text, "```"]
        out.with_suffix(".table.md").write_text("\n".join(body) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="*", help="NAME=PATH of a jeeves tree to measure")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", help="write OUT.json and OUT.table.md")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--callgrind", action="store_true", help="add instructions per call (valgrind)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--kinds", default=",".join(JOURNALS), help=argparse.SUPPRESS)
    parser.add_argument("--scratch", help=argparse.SUPPRESS)
    parser.add_argument("--pg-url", help=argparse.SUPPRESS)
    parser.add_argument("--tag", default="t", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args)
    else:
        sys.path.insert(0, str(BENCH))
        _driver(args)


if __name__ == "__main__":
    main()
