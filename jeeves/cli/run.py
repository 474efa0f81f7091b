"""`jeeves run SPEC`, `jeeves validate SPEC`, and what `jeeves resume` runs a spec's run with.

`run` loads and builds the spec, streams the run to the live tree (or one JSON event per
line), and prints the output, the stop reason and what each role spent. A configuration
problem (a bad spec, a missing API key, a bad `--model`) is one `error:` line on stderr
and exit code 2, never a traceback; a run that fails is exit code 1, one stopped at
approval gates 3 (every code: `jeeves.cli.exits`).
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import anyio

from jeeves._run.context import Architecture
from jeeves._run.replay import offline_script, skip_served
from jeeves._run.routes import callers, describe
from jeeves._run.runner import RunResult, stream
from jeeves._run.source import resolve_ref
from jeeves.approvals.decide import Approvals
from jeeves.budget import Budget
from jeeves.cli.exits import ExitCode, exit_code
from jeeves.cli.gates import REFRESH_PER_SECOND, ResumeTarget, outcome_lines
from jeeves.cli.invocation import command_line
from jeeves.cli.terminal import follow
from jeeves.errors import JeevesError, JournalError, MissingCredentials, UserError
from jeeves.journal.open import close_journal, open_journal
from jeeves.journal.records import error_type_name
from jeeves.models.router import Router
from jeeves.models.testing import ScriptedModel
from jeeves.spec.build import build
from jeeves.spec.load import join_key_path, load_spec
from jeeves.spec.models import (
    ActorCriticSpec,
    AgentSpec,
    ArchSpec,
    CustomSpec,
    GoalSpec,
    PlanExecuteSpec,
    SelfRefineSpec,
    Spec,
    SupervisorSpec,
)
from jeeves.spec.routes import RoutedCall, routing
from jeeves.spec.source import spec_source

__all__ = [
    "RunOptions",
    "describe_command",
    "describe_spec",
    "parse_model_flags",
    "resume_target",
    "run_command",
    "spec_catalog",
    "validate_command",
]


@dataclass
class RunOptions:
    """What `jeeves run` was given."""

    spec: str
    task: str | None = None
    models: Sequence[str] = field(default_factory=list)
    journal: str | None = None
    session_id: str | None = None
    budget_usd: float | None = None
    as_json: bool = False
    offline: bool = False


def parse_model_flags(values: Sequence[str]) -> dict[str, str]:
    """`["critic=openai/gpt-4o"]` → `{"critic": "openai/gpt-4o"}`."""
    routes: dict[str, str] = {}
    for value in values:
        role, sep, model = value.partition("=")
        if not sep or not role.strip() or not model.strip():
            raise UserError(f"--model {value!r} is not ROLE=MODEL; write e.g. --model critic=openai/gpt-4o.")
        routes[role.strip()] = model.strip()
    return routes


def _error(exc: BaseException, out: TextIO) -> None:
    out.write(f"error: {exc}\n")


async def run_command(options: RunOptions, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run a spec; returns the exit code (`jeeves.cli.exits`: 0 done, 1 the run failed, 2 a
    configuration problem, 3 stopped at approval gates, 4 out of budget)."""
    out, err = out or sys.stdout, err or sys.stderr
    try:
        spec = load_spec(options.spec)
        overrides = parse_model_flags(options.models)
        arch, router = build(spec, offline=options.offline, models=overrides)
        task = options.task or (spec.demo.task if spec.demo else "")
        if not task.strip():
            raise UserError(f"Give a TASK: {options.spec} has no [demo] task to fall back on.")
        if options.budget_usd is not None and not 0 <= options.budget_usd < math.inf:
            raise UserError(f"--budget-usd must be a number of dollars >= 0, got {options.budget_usd!r}.")
        budget = Budget(max_usd=options.budget_usd) if options.budget_usd is not None else None
        if problem := unrouted_error(spec, arch, router):
            raise problem
    except UserError as exc:
        _error(exc, err)
        return ExitCode.BAD_INPUT
    root: str | None = None
    try:
        if options.journal and options.session_id and (scripted := offline_script(router)) is not None:
            await _go_on_from(options.journal, options.session_id, scripted)
        async with stream(
            arch,
            task,
            router=router,
            session_id=options.session_id,
            budget=budget,
            journal=options.journal,
            architecture_ref=spec_source(spec, overrides, offline=options.offline),
            approvals=spec.approvals,
        ) as events:
            root = events.session_id
            await follow(events, as_json=options.as_json, file=out, refresh_per_second=REFRESH_PER_SECOND)
            result = await events.result()
    except MissingCredentials as exc:
        hint = "; or try it offline with --offline (the spec's [demo] script answers)"
        err.write(f"error: {str(exc).rstrip('.')}{hint if spec.demo and not options.offline else '.'}\n")
        err.write(_resume_hint(options, root))
        return ExitCode.BAD_INPUT
    except (UserError, JournalError) as exc:
        _error(exc, err)
        return ExitCode.BAD_INPUT
    except JeevesError as exc:
        err.write(f"error: the run failed: {error_type_name(exc)}: {exc}\n")
        err.write(_resume_hint(options, root))
        return ExitCode.FAILED
    except anyio.get_cancelled_exc_class():  # Ctrl-C: the runner cancels this task
        err.write(_resume_hint(options, root, then="resume it"))
        raise
    if not options.as_json:
        out.write(_summary(result, options))
    return exit_code(result.status, result.stop_reason)


async def _go_on_from(journal: str, session_id: str, scripted: ScriptedModel) -> None:
    """An offline run given the id of a run its journal holds goes on where that run stopped,
    as `jeeves resume --offline` does: the journal serves the model calls it recorded, so the
    `[demo]` script skips their replies (else the first live call would get the script's first
    reply again, and repeat tool calls the run already made)."""
    try:
        store = open_journal(journal, create=False)
        try:
            await skip_served(scripted, store, session_id)
        finally:
            await close_journal(store)
    except UserError:  # no journal yet: nothing was recorded, the script starts at its top
        return


def _resume_hint(options: RunOptions, root: str | None, then: str = "once fixed, resume") -> str:
    """How to go on from a run that stopped: with its journal, the same command and root id
    serve every completed step from the journal and make only the rest live."""
    if not options.journal or root is None:
        return ""
    command = ["run", options.spec, *([options.task] if options.task else [])]
    command += [f"--model={m}" for m in options.models]
    command += [
        "--journal",
        options.journal,
        "--session-id",
        root,
        *(["--offline"] if options.offline else []),
    ]
    return (
        f"The steps it completed are in {options.journal}; {then} without repeating them:\n"
        f"  {command_line(*command)}\n"
    )


def _summary(result: RunResult, options: RunOptions) -> str:
    return "\n".join(outcome_lines(result, options.journal, offline=options.offline)) + "\n"


async def resume_target(
    journal: str, session_id: str, spec: str | None, *, offline: bool = False, models: Sequence[str] = ()
) -> ResumeTarget:
    """What `jeeves resume` goes on with: the spec `spec` (a file, or `module:attr`) or, without
    it, the spec the run was recorded from (its file, read now) with the `--model` routes the
    run was given; `models` (`ROLE=MODEL` flags) win over both. The approval policy is the
    spec file's `[approvals]`, never one read from the journal. `offline` plays the spec's
    `[demo]` script from where the run stopped."""
    overrides = parse_model_flags(models)
    if spec is not None and not spec.endswith(".toml"):
        if offline:
            raise UserError(f"--offline plays a spec's [demo] script, and {spec!r} is not a spec file.")
        return ResumeTarget(arch=resolve_ref(spec), router=_routes(overrides), hints=list(models))
    if spec is None:
        source = await _recorded_source(journal, session_id)
        if source.get("kind") != "spec":
            if offline:
                raise UserError(
                    f"Run {session_id!r} was not recorded from a spec, so it has no [demo] script to go on "
                    f"offline; resume it without --offline (with --model ROLE=MODEL for its routes)."
                )
            return ResumeTarget(router=_routes(overrides), hints=list(models))
        spec = _recorded_spec_file(source, session_id)
        recorded = source.get("models")
        if isinstance(recorded, dict):
            overrides = {str(k): str(v) for k, v in recorded.items()} | overrides
    loaded = load_spec(spec)
    arch, router = build(loaded, offline=offline, models=overrides)
    if problem := unrouted_error(loaded, arch, router):
        raise problem
    return ResumeTarget(arch, router, loaded.approvals, offline_script(router), offline, hints=list(models))


def _routes(overrides: dict[str, str]) -> Router | None:
    return Router(dict(overrides)) if overrides else None


async def _recorded_source(journal: str, session_id: str) -> dict[str, object]:
    store = open_journal(journal, create=False)
    try:
        record = await store.get_session(session_id)
    finally:
        await close_journal(store)
    if record is None:
        runs = command_line("runs", journal)
        raise UserError(f"{journal} holds no run {session_id!r}; `{runs}` lists its runs.")
    return dict(record.source or {})


def _recorded_spec_file(source: dict[str, object], session_id: str) -> str:
    path = source.get("path")
    if not isinstance(path, str) or not Path(path).is_file():
        raise UserError(
            f"Run {session_id!r} was recorded from the spec {path!r}, which is not there any more; "
            f"name the spec to go on with: --spec FILE.toml."
        )
    return path


async def validate_command(path: str, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Load and build a spec (and its offline script); print its outline. Exit 0, or 2 with the problems."""
    out, err = out or sys.stdout, err or sys.stderr
    try:
        spec = load_spec(path)
        arch, router = build(spec)
        if spec.demo is not None:
            build(spec, offline=True)
    except UserError as exc:
        _error(exc, err)
        return 2
    out.write(f"{path}: valid\n{describe_spec(spec, arch, router)}")
    return 0


async def describe_command(path: str, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Print the role paths a spec's tree routes, one a line, with the route each gets under
    its `[models]` (what `jeeves.describe(arch)` returns). Exit 0, or 2 with the problem."""
    out, err = out or sys.stdout, err or sys.stderr
    try:
        arch, router = build(load_spec(path))
        paths = describe(arch)
    except UserError as exc:
        _error(exc, err)
        return 2
    rows = {".".join(r.path): r for r in routing(callers(arch) or [], router)}
    width = max(len(p) for p in paths) if paths else 0
    out.writelines(
        f"{p:<{width}}  → {_destination(rows[p]) if p in rows else 'its own model'}\n" for p in paths
    )
    return 0


def spec_catalog(
    paths: Sequence[str], *, offline: bool = False
) -> dict[str, Callable[[], tuple[Architecture, Router, Approvals | None]]]:
    """What `jeeves serve SPEC…` serves: each spec by its file name, built afresh for every run
    (a fresh offline script each time) with its own routes and its `[approvals]` policy.
    Every spec is loaded and built now, so a bad one stops the server before it starts."""
    catalog: dict[str, Callable[[], tuple[Architecture, Router, Approvals | None]]] = {}
    for path in paths:
        spec = load_spec(path)
        build(spec, offline=offline)
        name = Path(path).stem
        if name in catalog:
            raise UserError(
                f"Two specs are named {name!r} ({path!r} and another); serve files with distinct names."
            )
        catalog[name] = functools.partial(_served, spec, offline)
    return catalog


def _served(spec: Spec, offline: bool) -> tuple[Architecture, Router, Approvals | None]:
    arch, router = build(spec, offline=offline)
    return arch, router, spec.approvals


def describe_spec(spec: Spec, arch: Architecture, router: Router) -> str:
    """An outline of a spec: the architecture tree, where each session's model calls go
    (or, for a tree that cannot say, the routes), its offline script."""
    lines: list[str] = []
    _outline(spec.architecture, _root_role(spec.architecture), 1, lines)
    found = callers(arch)
    if found is not None:
        rows = routing(found, router)
        if rows:
            lines.append("  routing:")
            width = max(len(".".join(r.path)) for r in rows)
            lines += [f"    {'.'.join(r.path):<{width}}  → {_destination(r)}" for r in rows]
    elif router.routes:
        lines.append("  models:")
        lines += [f"    {key} → {route.model}" for key, route in router.routes.items()]
    if spec.demo is not None:
        counts = ", ".join(f"{key} ({len(replies)})" for key, replies in spec.demo.script.items())
        lines.append(f"  offline script: {counts}")
    return "\n".join(lines) + "\n"


def _destination(row: RoutedCall) -> str:
    if row.pinned:
        return "its own model (pinned in the spec)"
    if row.route is None:
        return "no route: add a [models] key for it, or pass --model"
    fallbacks = f" (falls back to {', '.join(row.route.fallbacks)})" if row.route.fallbacks else ""
    return f"{row.route.model}{fallbacks}  ({join_key_path(['models', row.key or ''])})"


def unrouted_error(spec: Spec, arch: Architecture, router: Router) -> UserError | None:
    """A UserError naming the sessions no route reaches, found before the run spends anything."""
    found = callers(arch)
    missing = [r for r in routing(found, router) if not r.pinned and r.route is None] if found else []
    if not missing:
        return None
    paths = ", ".join(".".join(r.path) for r in missing)
    role = missing[0].path[-1]
    return UserError(
        f"{spec.path or 'the spec'}: no model route for {paths}; add a [models] route for each "
        f"(or a 'default' one), or pass e.g. --model {role}=openai/gpt-4o-mini."
    )


def _root_role(arch: ArchSpec) -> str:
    if isinstance(arch, SelfRefineSpec):
        return arch.role or _root_role(arch.agent)
    if isinstance(arch, CustomSpec):
        return arch.role or arch.architecture.rsplit(":", 1)[-1].rsplit(".", 1)[-1].lower()
    return arch.role


def _outline(arch: ArchSpec, role: str, depth: int, lines: list[str]) -> None:
    pad = "  " * depth
    if isinstance(arch, AgentSpec):
        tools = f"  tools: {', '.join(t.rsplit(':', 1)[-1] for t in arch.tools)}" if arch.tools else ""
        lines.append(f"{pad}{role}  agent{tools}")
    elif isinstance(arch, ActorCriticSpec):
        critics = ", ".join(c.name or c.type for c in arch.critic)
        lines.append(f"{pad}{role}  actor_critic  critics: {critics}")
        _outline(arch.actor, "actor", depth + 1, lines)
    elif isinstance(arch, SelfRefineSpec):
        lines.append(f"{pad}{role}  self_refine")
        _outline(arch.agent, "draft", depth + 1, lines)
    elif isinstance(arch, SupervisorSpec):
        lines.append(f"{pad}{role}  supervisor")
        for name, worker in arch.workers.items():
            _outline(worker, name, depth + 1, lines)
    elif isinstance(arch, PlanExecuteSpec):
        names = [c.name or getattr(c, "function", c.type).rsplit(":", 1)[-1] for c in arch.evaluators]
        evaluators = ", ".join(names) or "none"
        lines.append(f"{pad}{role}  plan_execute  evaluators: {evaluators}")
        _outline(arch.planner, "planner", depth + 1, lines)
        for name, worker in arch.workers.items():
            _outline(worker, name, depth + 1, lines)
    elif isinstance(arch, GoalSpec):
        success = ", ".join(c.name or c.type for c in arch.success)
        watchdog = f"  watchdog: every {arch.watchdog.every}" if arch.watchdog else ""
        lines.append(f"{pad}{role}  goal  success: {success}{watchdog}")
        _outline(arch.agent, "agent", depth + 1, lines)
    elif isinstance(arch, CustomSpec):
        critics = f"  critics: {', '.join(arch.critics)}" if arch.critics else ""
        lines.append(f"{pad}{role}  {arch.architecture}{critics}")
        for name, part in arch.parts.items():
            _outline(part, name, depth + 1, lines)
