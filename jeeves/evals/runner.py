"""Run configurations over a dataset, concurrently, under one budget; and replay the lot.

An eval of one configuration is one journaled run, `EvalRun`, whose root id is the eval id
and whose children are the cases: case `i` is `{eval}__case_{i}` (with `samples > 1`, sample
`j` of it is `{eval}__case_{i}_sample_{j}`). With several configurations each one is its
own run, `{eval}-{config}`, with the same children under it, so each keeps its own model
routes. Every id is a pure function of the eval id, the configuration's name and the case's
position: a replay finds each run again, and running the same eval id into the same
journal resumes it (recorded steps are served, not paid for again).

The manifest (the dataset's hash and cases, the configurations, the samples) is stored
with each run as its source, so `jeeves replay JOURNAL EVAL_ID` rebuilds the eval from the
journal alone and prints the same report; a sidecar `{journal}.{eval_id}.eval.json` lists
the configurations, for `jeeves eval --replay` and an eval of several configurations.

One budget: configurations run one after another, each under what is left of the budget;
within one, its cases run `concurrency` at once under that run's budget. A case the
budget stops is reported as errored; the others still run (and stop at once if nothing
is left).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
from pydantic import BaseModel, Field

from jeeves._base.ids import validate_name
from jeeves._run.context import Architecture, Context, Output
from jeeves._run.runner import replay as replay_run
from jeeves._run.runner import run
from jeeves._run.source import register_loader
from jeeves.budget import Budget
from jeeves.errors import PROGRAM_ERRORS, InvalidCredentials, MissingCredentials, UserError
from jeeves.evals.case import CaseOutput, EvalCase
from jeeves.evals.dataset import Case, Dataset
from jeeves.evals.report import CaseResult, build_report, format_table
from jeeves.journal.open import close_journal, open_journal
from jeeves.journal.records import error_type_name
from jeeves.models.router import Router

__all__ = ["EvalConfig", "EvalOutput", "EvalRun", "Manifest", "manifest_path", "replay_eval", "run_eval"]

OnDone = Callable[[CaseResult], None]
SOURCE_KIND = "jeeves_eval"
"""The kind of source an eval run records (its manifest and configuration), for replay."""
_FATAL: tuple[type[Exception], ...] = (*PROGRAM_ERRORS, MissingCredentials, InvalidCredentials)
"""Errors that stop the whole eval (a bug, a journal that diverges, no key): not a case's failure."""


@dataclass
class EvalConfig:
    """One configuration under test: a name, how to build it, and the built architecture."""

    name: str
    ref: str
    """A spec file (`architectures/x.toml`) or `module:attr`, as the user gave it."""
    arch: Architecture
    router: Router = field(default_factory=Router)


class Manifest(BaseModel):
    """What an eval ran: with the journal, enough to rebuild its report offline."""

    schema_version: int = 1
    eval_id: str
    dataset: Dataset
    configs: list[dict[str, str]]
    """Each configuration's name and ref."""
    samples: int = 1

    def root_id(self, config: str) -> str:
        return self.eval_id if len(self.configs) == 1 else f"{self.eval_id}-{config}"


class EvalOutput(Output):
    """An eval run's result: every case's result; `text` is the report table."""

    results: list[CaseResult] = Field(default_factory=list)


def manifest_path(journal: str | Path, eval_id: str) -> Path:
    journal = Path(journal)
    return journal.with_name(f"{journal.name}.{eval_id}.eval.json")


def _result(
    config: str, i: int, case: Case, j: int, sid: str, out: CaseOutput | None, error: str | None
) -> CaseResult:
    if out is None:
        return CaseResult(
            config=config, case=i, case_id=case.id, sample=j, session_id=sid, error=error, passed=False
        )
    return CaseResult(
        config=config,
        case=i,
        case_id=case.id,
        sample=j,
        session_id=sid,
        passed=out.passed,
        round_passed=out.round_passed,
        rounds=len(out.round_passed),
        tokens=out.usage.total_tokens,
        usd=out.usage.cost_usd,
        model_calls=out.usage.model_calls,
        latency_s=out.latency_s,
        stop_reason=out.stop_reason,
        judgements=out.judgements,
        right_candidate=out.right_candidate,
    )


class EvalRun:
    """One configuration over every case of a manifest, as one run (module docstring)."""

    name = "eval"

    def __init__(
        self, manifest: Manifest, config: EvalConfig, *, concurrency: int = 4, on_done: OnDone | None = None
    ) -> None:
        self.manifest, self.config, self.concurrency = manifest, config, concurrency
        self.on_done = on_done or (lambda r: None)

    async def run(self, ctx: Context, task: str) -> EvalOutput:
        m, samples = self.manifest, self.manifest.samples
        jobs = [(i, case, j) for i, case in enumerate(m.dataset.cases) for j in range(samples)]
        results: list[CaseResult | None] = [None] * len(jobs)
        limiter = anyio.CapacityLimiter(self.concurrency)

        fatal: list[BaseException | None] = [None] * len(jobs)

        async def one(n: int, tg: anyio.abc.TaskGroup) -> None:
            i, case, j = jobs[n]
            role, index = ("case", i) if samples == 1 else (f"case_{i}_sample", j)
            sid = f"{ctx.session_id}__{role}_{index}"
            async with limiter:
                try:
                    results[n] = await self._case(ctx, case, role, index, i, j, sid)
                except _FATAL as exc:  # the eval cannot go on: stop every case, raise one error
                    fatal[n] = exc
                    tg.cancel_scope.cancel()
                    return
            self.on_done(results[n])  # type: ignore[arg-type]

        async with anyio.create_task_group() as tg:
            for n in range(len(jobs)):
                tg.start_soon(one, n, tg)
        first = next((e for e in fatal if e is not None), None)
        if first is not None:
            raise first
        done = [r for r in results if r is not None]
        report = build_report(
            m.eval_id, m.dataset.source, m.dataset.sha256, [self.config.name], done, samples
        )
        return EvalOutput(text=format_table(report), results=done)

    async def _case(
        self, ctx: Context, case: Case, role: str, index: int, i: int, j: int, sid: str
    ) -> CaseResult:
        name = self.config.name
        if case.error is not None:
            return _result(name, i, case, j, sid, None, case.error)
        try:
            out = await ctx.run(
                EvalCase(self.config.arch, case.tests, case.expected), case.task, role=role, index=index
            )
        except _FATAL:
            raise  # the eval cannot run at all: say so once, not once per case
        except Exception as exc:  # the case failed (its run, or the budget): reported, the others go on
            return _result(name, i, case, j, sid, None, f"{error_type_name(exc)}: {exc}")
        assert isinstance(out, CaseOutput)
        return _result(name, i, case, j, sid, out, None)


def check_names(eval_id: str, configs: Sequence[EvalConfig]) -> None:
    validate_name(eval_id, what="eval id")
    names = [validate_name(c.name, what="config") for c in configs]
    if len(set(names)) != len(names):
        raise UserError(f"Config names {names!r} repeat; give each --config its own NAME=.")


def _left(budget: Budget | None, spent: list[CaseResult]) -> Budget | None:
    if budget is None:
        return None
    tokens, usd = sum(r.tokens for r in spent), sum(r.usd for r in spent)
    return Budget(
        max_tokens=None if budget.max_tokens is None else max(budget.max_tokens - tokens, 0),
        max_usd=None if budget.max_usd is None else max(budget.max_usd - usd, 0.0),
        max_model_calls=None
        if budget.max_model_calls is None
        else max(budget.max_model_calls - sum(r.model_calls for r in spent), 0),
    )


_BUILDER: list[Callable[[str, str], EvalConfig]] = []


def _source(manifest: Manifest, config: str) -> dict[str, Any]:
    return {"kind": SOURCE_KIND, "manifest": manifest.model_dump(mode="json"), "config": config}


def _load(source: Mapping[str, Any]) -> Architecture:
    """Rebuild an eval run from its stored source (`jeeves replay JOURNAL EVAL_ID`)."""
    manifest = Manifest.model_validate(source["manifest"])
    name = str(source["config"])
    ref = next(c["ref"] for c in manifest.configs if c["name"] == name)
    if not _BUILDER:
        raise UserError(
            "Rebuilding an eval needs jeeves.cli.eval (import it, or use `jeeves eval --replay`)."
        )
    return EvalRun(manifest, _BUILDER[0](name, ref), concurrency=1)


register_loader(SOURCE_KIND, _load)


def set_builder(build: Callable[[str, str], EvalConfig]) -> None:
    """How a recorded configuration's ref becomes an EvalConfig again (the CLI sets it)."""
    _BUILDER[:] = [build]


async def run_eval(
    configs: Sequence[EvalConfig],
    dataset: Dataset,
    *,
    journal: str | Path,
    eval_id: str,
    samples: int = 1,
    concurrency: int = 4,
    budget: Budget | None = None,
    on_done: OnDone | None = None,
) -> list[CaseResult]:
    """Run every configuration on every case (`samples` times), journaled; write the manifest."""
    check_names(eval_id, configs)
    manifest = Manifest(
        eval_id=eval_id,
        dataset=dataset,
        configs=[{"name": c.name, "ref": c.ref} for c in configs],
        samples=samples,
    )
    manifest_path(journal, eval_id).write_text(manifest.model_dump_json(indent=1) + "\n")
    results: list[CaseResult] = []
    store = open_journal(journal)
    try:
        for config in configs:
            arch = EvalRun(manifest, config, concurrency=concurrency, on_done=on_done)
            result = await run(
                arch,
                f"eval {eval_id}: {config.name} on {dataset.source}",
                router=config.router,
                session_id=manifest.root_id(config.name),
                journal=store,
                budget=_left(budget, results),
                architecture_ref=_source(manifest, config.name),
            )
            assert isinstance(result.detail, EvalOutput)
            results += result.detail.results
    finally:
        await close_journal(store)
    return results


def read_manifest(journal: str | Path, eval_id: str) -> Manifest | None:
    """The manifest of eval `eval_id` beside `journal`; None when there is none (an id that
    cannot be part of a file name, `../x` or `a/b`, names no eval)."""
    try:
        path = manifest_path(journal, eval_id)
        if not path.is_file():
            return None
    except (ValueError, OSError):  # a separator or a NUL in the id, a name too long
        return None
    return Manifest.model_validate(json.loads(path.read_text()))


async def replay_eval(
    manifest: Manifest, journal: str | Path, on_done: OnDone | None = None
) -> list[CaseResult]:
    """Every configuration of a recorded eval replayed strictly, offline."""
    results: list[CaseResult] = []
    store = open_journal(journal, create=False)
    try:
        for c in manifest.configs:
            result = await replay_run(None, store, manifest.root_id(c["name"]))
            assert isinstance(result.detail, EvalOutput)
            results += result.detail.results
    finally:
        await close_journal(store)
    return results
