"""Evaluate two configurations over a small dataset, then rebuild the report offline from the journal.

`single` is one coder; `best_of_3` is `BestOfN`: up to three candidates, one after another, each
judged by the task's public examples run as tests (a `CodeCritic`); the first to pass ends it. Each
case's hidden tests (the oracle) decide whether the returned answer is right. Offline (the
default) the coder is a scripted model whose first candidate gets `slugify` wrong; the tests
really run. The report shows the pass rate with its 95 % interval, the candidates' cost, and
the critic measured as a classifier against the oracle; a strict replay of the journal then
rebuilds the same report without a model or a test run. With `--live`, real models:

    python examples/eval_offline.py
    JEEVES_MODEL=openai/gpt-4o-mini python examples/eval_offline.py --live --journal evals.db
    jeeves replay evals.db example            # the same report, offline
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import anyio

import jeeves
from jeeves import Agent, BestOfN, CodeCritic, FunctionModel, Router
from jeeves.critics import Review, Verdict
from jeeves.evals import Case, Dataset, EvalConfig, build_report, format_table, replay_eval, run_eval
from jeeves.evals.calibration import calibrate, format_calibration
from jeeves.evals.runner import read_manifest
from jeeves.messages import ModelRequest

CASES = {
    "add": (
        "Write a Python function add(a, b) that returns the sum of a and b.",
        "assert add(2, 3) == 5",
        "assert add(-1, 1) == 0\n    assert add(2.5, 0.5) == 3.0",
    ),
    "slugify": (
        "Write a Python function slugify(text) that lowercases text, turns every run of characters "
        "other than a-z and 0-9 into one '-', and strips '-' from both ends.",
        'assert slugify("Hello World") == "hello-world"\n    assert slugify("a  b") == "a-b"',
        'assert slugify("  a -- b  ") == "a-b"\n    assert slugify("Jeeves, at your service!") == "jeeves-at-your-service"',
    ),
}

CODER = Agent("You write Python. Reply with the function in one ```python block.")


def _tests(name: str, body: str) -> str:
    return f"from solution import {name}\n\n\ndef test_{name}():\n    {body}\n"


class PublicExamples:
    """The task's public examples as tests: what the coder may see, not the hidden oracle."""

    name = "examples"

    async def review(self, ctx: jeeves.Context, review: Review) -> Verdict:
        name = next(n for n in CASES if f" {n}(" in review.task)
        return await CodeCritic(_tests(name, CASES[name][1]), name="examples", timeout_s=30).review(
            ctx, review
        )


single = CODER
best_of_3 = BestOfN(CODER, [PublicExamples()], n=3, parallel=False)


def offline_router() -> Router:
    def coder(request: ModelRequest) -> str:
        task = next(m.content or "" for m in request.messages if m.role == "user")
        first = request.session_id.endswith(("__case_1", "__candidate_0"))
        if "add(" in task:
            return "```python\ndef add(a, b):\n    return a + b\n```"
        if first:  # a slugify that forgets to collapse runs of separators
            return '```python\ndef slugify(text):\n    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")\n```'
        return (
            "```python\nimport re\n\n\ndef slugify(text):\n"
            '    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")\n```'
        )

    return Router({"default": FunctionModel(coder, model_name="scripted-coder")})


def live_router() -> Router:
    return Router({"default": os.environ.get("JEEVES_MODEL", "openai/gpt-4o-mini")})


def dataset() -> Dataset:
    cases = [
        Case(id=name, task=task, tests=_tests(name, f"{public}\n    {hidden}"))
        for name, (task, public, hidden) in CASES.items()
    ]
    return Dataset(source="examples/eval_offline.py", sha256="inline", cases=cases)


async def main(live: bool, journal: Path) -> int:
    router = live_router() if live else offline_router()
    configs = [EvalConfig("single", "eval_offline:single", single, router)]
    configs.append(EvalConfig("best_of_3", "eval_offline:best_of_3", best_of_3, router))
    results = await run_eval(configs, dataset(), journal=journal, eval_id="example", concurrency=2)
    report = build_report(
        "example", "examples/eval_offline.py", "inline", ["single", "best_of_3"], results, 1
    )
    print(format_table(report))
    critic = calibrate([j for r in results for j in r.judgements], "precision>=0.9")
    print(format_calibration(critic))
    manifest = read_manifest(journal, "example")
    assert manifest is not None
    again = await replay_eval(manifest, journal)  # strict: no model, no test run
    same = build_report("example", "examples/eval_offline.py", "inline", ["single", "best_of_3"], again, 1)
    print(f"replayed offline from {journal.name}: identical report: {same == report}")
    return 0 if same == report else 1


if __name__ == "__main__":
    import jeeves.cli.eval  # rebuilds recorded configurations by their refs

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--live", action="store_true", help="use real models through litellm")
    parser.add_argument("--journal", type=Path, help="keep the journal in this file (.jsonl, or SQLite)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        try:
            sys.exit(anyio.run(main, args.live, args.journal or Path(scratch) / "evals.db"))
        except jeeves.JeevesError as exc:  # a missing API key, a provider that failed: one line
            sys.exit(f"error: {exc}")
