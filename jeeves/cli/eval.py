"""`jeeves eval`: run configurations over a dataset and print the report; replay a recorded eval.

```
jeeves eval architectures/codegen.toml --dataset cases.jsonl --journal evals.db --html report.html
jeeves eval --config one=a.toml --config best3=b.toml --dataset humaneval --limit 20 --samples 5
jeeves eval --replay EVAL_ID --journal evals.db          # or: jeeves replay evals.db EVAL_ID
```
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

import anyio

from jeeves.budget import Budget
from jeeves.errors import UserError
from jeeves.evals.calibration import (
    CalibrationReport,
    calibrate,
    flip_rate,
    format_calibration,
    load_labels,
    parse_thresholds,
)
from jeeves.evals.dataset import Dataset, load_dataset
from jeeves.evals.html import render_html
from jeeves.evals.report import CaseResult, EvalReport, build_report, format_table
from jeeves.evals.runner import EvalConfig, Manifest, read_manifest, replay_eval, run_eval, set_builder

__all__ = ["add_eval_command", "build_config", "eval_command", "replay_eval_command"]

DEFAULT_JOURNAL = "jeeves-evals.db"


def add_eval_command(commands: Any) -> None:
    p = commands.add_parser("eval", help="run architectures over a dataset; report pass rates and costs")
    p.add_argument("spec", nargs="?", help="the architecture: a spec file or module:attr (or use --config)")
    p.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="NAME=SPEC",
        help="a configuration to compare (repeatable)",
    )
    p.add_argument("--dataset", metavar="FILE.jsonl|humaneval", help="the cases: JSONL, or humaneval")
    p.add_argument("--limit", type=int, metavar="N", help="only the first N cases")
    p.add_argument("--samples", type=int, default=1, metavar="K", help="runs per case (for pass@k)")
    p.add_argument("--concurrency", type=int, default=4, metavar="N", help="cases in flight at once")
    p.add_argument(
        "--model", action="append", default=[], metavar="ROLE=MODEL", help="route a role to a model"
    )
    p.add_argument(
        "--journal",
        default=DEFAULT_JOURNAL,
        metavar="PATH",
        help=f"where runs are recorded ({DEFAULT_JOURNAL})",
    )
    p.add_argument(
        "--id", dest="eval_id", metavar="ID", help="the eval id (default: from the dataset and configs)"
    )
    p.add_argument("--max-usd", type=float, metavar="X", help="one budget in dollars for the whole eval")
    p.add_argument("--max-tokens", type=int, metavar="N", help="one budget in tokens for the whole eval")
    p.add_argument("--json", dest="json_out", metavar="OUT.json", help="write the report as JSON")
    p.add_argument("--html", dest="html_out", metavar="OUT.html", help="write a self-contained HTML report")
    p.add_argument(
        "--replay", metavar="EVAL_ID", help="rebuild a recorded eval's report offline from --journal"
    )
    p.add_argument(
        "--calibrated-if",
        metavar="RULES",
        default="",
        help='when a critic counts as calibrated, e.g. "precision>=0.9,far<=0.05"',
    )
    p.add_argument("--labels", metavar="FILE.jsonl", help="ground-truth labels that override the oracle")
    p.add_argument(
        "--rejudge",
        metavar="CRITIC.toml",
        help="re-judge the eval's verdicts with a critic version; report flips",
    )


def build_config(name: str, ref: str, models: dict[str, str] | None = None) -> EvalConfig:
    """A configuration from a spec file or a `module:attr` reference."""
    from jeeves._run.runner import build_router
    from jeeves._run.source import resolve_ref
    from jeeves.spec import build, load_spec

    if ref.endswith(".toml"):
        arch, router = build(load_spec(ref), models=models or None)
        return EvalConfig(name, ref, arch, router)
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    return EvalConfig(name, ref, resolve_ref(ref), build_router(None, None, models or None))


def _configs(args: argparse.Namespace, models: dict[str, str]) -> list[EvalConfig]:
    pairs: list[tuple[str, str]] = []
    if args.spec:
        pairs.append((_default_name(args.spec), args.spec))
    for value in args.config:
        name, sep, ref = value.partition("=")
        if not sep or not name or not ref:
            raise UserError(
                f"--config {value!r} is not NAME=SPEC; write e.g. --config best3=architectures/b.toml."
            )
        pairs.append((name, ref))
    if not pairs:
        raise UserError("jeeves eval needs an architecture: a spec file, module:attr, or --config NAME=SPEC.")
    return [build_config(name, ref, models) for name, ref in pairs]


def _default_name(ref: str) -> str:
    stem = Path(ref.rpartition(":")[2] if ":" in ref else ref).stem.lower()
    name = "".join(ch if ch.isalnum() else "_" for ch in stem).strip("_").replace("__", "_")
    return name if name[:1].isalpha() else f"c_{name}"


def _eval_id(dataset: Dataset, configs: Sequence[EvalConfig], samples: int) -> str:
    key = "|".join([dataset.sha256, str(samples), *(f"{c.name}={c.ref}" for c in configs)])
    return "eval_" + hashlib.sha256(key.encode()).hexdigest()[:10]


def _progress(total: int, err: TextIO) -> tuple[Callable[[CaseResult], None], Callable[[], None]]:
    """A rich progress bar on a terminal; a closing count line otherwise."""
    done = [0, 0]
    if err.isatty():
        from rich.console import Console
        from rich.progress import Progress

        bar = Progress(console=Console(file=err), transient=True)
        task = bar.add_task("cases", total=total)
        bar.start()

        def tick(r: CaseResult) -> None:
            done[0] += 1
            done[1] += bool(r.passed)
            bar.update(task, advance=1, description=f"cases ({done[1]} passed)")

        return tick, bar.stop

    def count(r: CaseResult) -> None:
        done[0] += 1
        done[1] += bool(r.passed)

    def close() -> None:
        err.write(f"{done[0]} runs, {done[1]} passed\n")

    return count, close


def _calibration(
    results: Sequence[CaseResult], args: argparse.Namespace, roots: list[str]
) -> CalibrationReport | None:
    judged = [j for r in results for j in r.judgements]
    if not judged:
        return None
    labels = load_labels(args.labels) if getattr(args, "labels", None) else None
    report = calibrate(judged, getattr(args, "calibrated_if", "") or "", labels=labels)
    if getattr(args, "rejudge", None):
        rate, n = anyio.run(_flips, args.journal, args.rejudge, roots)
        report = report.model_copy(update={"rejudge_flip_rate": rate, "rejudged": n})
    return report


async def _flips(journal: str, critic: str, roots: list[str]) -> tuple[float | None, int]:
    from jeeves.evals.rejudge import rejudge
    from jeeves.journal.open import close_journal, open_journal
    from jeeves.spec.critic_version import load_critic_version

    version = load_critic_version(critic)
    store = open_journal(journal, create=False)
    try:
        judgements = await rejudge(store, version, roots)
    finally:
        await close_journal(store)
    return flip_rate((j.before, j.after) for j in judgements)


def _check_before_running(args: argparse.Namespace) -> None:
    """The options the report reads at the end, checked before any case runs (and spends):
    the calibration rules, the labels and the critic version to re-judge with, and the
    files the report is written to."""
    parse_thresholds(args.calibrated_if or "")
    if args.labels:
        load_labels(args.labels)
    if args.rejudge:
        from jeeves.spec.critic_version import load_critic_version

        load_critic_version(args.rejudge)
    for flag, path in (("--json", args.json_out), ("--html", args.html_out)):
        if path:
            _writable(flag, Path(path))


def _writable(flag: str, path: Path) -> None:
    if path.is_dir():
        raise UserError(
            f"{flag} {str(path)!r} is a folder; give the report a file path, e.g. report{path.suffix or '.json'}."
        )
    if not path.parent.is_dir():
        raise UserError(
            f"{flag} {str(path)!r}: there is no folder {str(path.parent)!r}; make it, or give another path."
        )


def _emit(report: EvalReport, args: argparse.Namespace, out: TextIO) -> None:
    out.write(format_table(report))
    if report.calibration is not None:
        out.write("\n" + format_calibration(report.calibration))
    written: list[tuple[str, str | None, Callable[[], str]]] = [
        ("--json", args.json_out, lambda: report.model_dump_json(indent=1) + "\n"),
        ("--html", args.html_out, lambda: render_html(report)),
    ]
    for flag, path, text in written:
        if path:
            try:
                Path(path).write_text(text())
            except OSError as exc:  # what changed since the check: the report above is still printed
                raise UserError(
                    f"Cannot write {flag} {path!r} ({exc.strerror}); the table above is the report."
                ) from None


def _report(manifest: Manifest, results: Sequence[CaseResult], args: argparse.Namespace) -> EvalReport:
    names = [c["name"] for c in manifest.configs]
    data = manifest.dataset
    report = build_report(manifest.eval_id, data.source, data.sha256, names, results, manifest.samples)
    roots = [manifest.root_id(n) for n in names]
    return report.model_copy(update={"calibration": _calibration(results, args, roots)})


def eval_command(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out, err = out or sys.stdout, err or sys.stderr
    if args.replay:
        return replay_eval_command(args.journal, args.replay, args, out)
    if not args.dataset:
        raise UserError("jeeves eval needs --dataset FILE.jsonl (or --dataset humaneval).")
    if args.samples < 1 or args.concurrency < 1:
        raise UserError(
            f"--samples and --concurrency must be 1 or more, got {args.samples} and {args.concurrency}."
        )
    if args.limit is not None and args.limit < 1:
        raise UserError(f"--limit must be 1 or more cases, got {args.limit}.")
    if args.max_usd is not None and not 0 <= args.max_usd < math.inf:
        raise UserError(f"--max-usd must be a number of dollars >= 0, got {args.max_usd!r}.")
    if args.max_tokens is not None and args.max_tokens < 0:
        raise UserError(f"--max-tokens must be a count of tokens >= 0, got {args.max_tokens}.")
    from jeeves.cli.run import parse_model_flags

    _check_before_running(args)
    dataset = load_dataset(args.dataset)
    if args.limit is not None:
        dataset = dataset.model_copy(update={"cases": dataset.cases[: args.limit]})
    for case in dataset.cases:
        if case.error:
            err.write(f"error: {args.dataset}: {case.error} (reported as an errored case)\n")
    configs = _configs(args, parse_model_flags(args.model))
    eval_id = args.eval_id or _eval_id(dataset, configs, args.samples)
    budget = (
        Budget(max_usd=args.max_usd, max_tokens=args.max_tokens)
        if args.max_usd is not None or args.max_tokens is not None
        else None
    )
    tick, stop = _progress(len(dataset.cases) * len(configs) * args.samples, err)
    try:
        results = anyio.run(
            lambda: run_eval(
                configs,
                dataset,
                journal=args.journal,
                eval_id=eval_id,
                samples=args.samples,
                concurrency=args.concurrency,
                budget=budget,
                on_done=tick,
            )
        )
    finally:
        stop()
    manifest = read_manifest(args.journal, eval_id)
    assert manifest is not None
    _emit(_report(manifest, results, args), args, out)
    err.write(f"replay offline: jeeves replay {args.journal} {eval_id}\n")
    return 0


def replay_eval_command(journal: str, eval_id: str, args: argparse.Namespace | None, out: TextIO) -> int:
    """Rebuild eval `eval_id`'s report from `journal` and its manifest, offline."""
    manifest = read_manifest(journal, eval_id)
    if manifest is None:
        raise UserError(
            f"No eval {eval_id!r} beside {journal!r} (no {journal}.{eval_id}.eval.json); check the id."
        )
    results = anyio.run(lambda: replay_eval(manifest, journal))
    options = args or argparse.Namespace(json_out=None, html_out=None, journal=journal)
    _emit(_report(manifest, results, options), options, out)
    return 0


set_builder(build_config)


def is_eval(journal: str, eval_id: str | None) -> bool:
    """Whether `jeeves replay JOURNAL ID` names an eval (its manifest is beside the journal)."""
    return eval_id is not None and read_manifest(journal, eval_id) is not None
