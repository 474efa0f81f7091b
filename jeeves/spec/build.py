"""Building a Spec into ordinary objects: `build(spec) -> (Architecture, Router)`.

The architecture is made of the same classes code uses (Agent, ActorCritic, SelfRefine,
Supervisor, the critics), so a spec run and a code run of the same architecture are the
same run: same prompts, same session ids, same journal. A constructor's UserError is
re-raised with the file and the key path of the table that caused it.

Offline (`offline=True`), one `ScriptedModel` built from the spec's `[demo]` script
serves every route and every pinned model; their names show as `scripted:<model>`, so a
tree never passes a script off as a real model.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar, assert_never

from jeeves._run.context import Architecture, Caller
from jeeves._run.routes import callers, unmatched_key
from jeeves._run.source import import_object
from jeeves.agent.agent import Agent
from jeeves.agent.tools import Tool
from jeeves.architectures import ActorCritic, Goal, PlanExecute, SelfRefine, Supervisor
from jeeves.critics import CitationCritic, CodeCritic, Critic, FunctionCritic, LLMCritic, Watchdog
from jeeves.errors import UserError
from jeeves.mcp.client import MCPServer
from jeeves.models.base import ModelClient, Route
from jeeves.models.known import model_problem
from jeeves.models.router import Router
from jeeves.models.testing import Reply, ScriptedModel, call
from jeeves.spec.load import join_key_path
from jeeves.spec.mcp import build_servers
from jeeves.spec.models import (
    ActorCriticSpec,
    AgentSpec,
    ArchSpec,
    CitationCriticSpec,
    CodeCriticSpec,
    CriticSpec,
    CustomSpec,
    DemoSpec,
    FunctionCriticSpec,
    GoalSpec,
    LLMCriticSpec,
    PlanExecuteSpec,
    RouteSpec,
    SelfRefineSpec,
    Spec,
    SupervisorSpec,
    WatchdogSpec,
)
from jeeves.spec.stop import StopSpec, build_stop
from jeeves.stop import StopCondition

__all__ = ["build", "build_critics", "build_problems", "importable", "problems_message", "scripted_model"]

T = TypeVar("T")
KeyPath = list[str | int]
"""Keys from the file's top level down to a table (`["workers", "coder", "critic", 1]`)."""
RouteLike = str | Route | ModelClient


def build(
    spec: Spec, *, offline: bool = False, models: Mapping[str, RouteLike] | None = None
) -> tuple[Architecture, Router]:
    """The spec's architecture and the router its `[models]` table describes.

    Args:
        spec: A loaded spec (`load_spec`, `parse_spec`).
        offline: Serve every model call from the spec's `[demo]` script (a fresh
            ScriptedModel per build, so build once per run), `models` routes included:
            they only rename the model a session shows (`scripted:<model>`).
        models: Routes that replace or add to `[models]` (`{"critic": "openai/gpt-4o"}`),
            as `--model ROLE=MODEL` does on the command line.
    """
    builder = _Builder(spec, offline)
    arch, routes = builder.build(spec, models or {})
    if arch is None or builder.problems:
        raise UserError(problems_message(builder.where, builder.problems))
    if builder.scripted is not None and "default" not in routes:
        routes["default"] = Route(model="scripted", client=builder.scripted)
    routes.update({k: builder.override(v) for k, v in (models or {}).items()})
    return arch, Router(routes)


def build_problems(spec: Spec) -> list[str]:
    """Every problem `build(spec)` would report, one `key.path: problem` line each (none: [])."""
    builder = _Builder(spec, offline=False)
    builder.build(spec, {})
    return builder.problems


def build_critics(specs: Sequence[CriticSpec], *, where: str, path: Path | None, key: str) -> list[Critic]:
    """The critics of critic tables outside an architecture (a `jeeves rejudge` critic file),
    every problem in one UserError keyed under `key`; import paths resolve beside `path`."""
    builder = _Builder(None, offline=False)
    builder.where = where
    with importable(path):
        critics = [builder.critic(c, [key, i]) for i, c in enumerate(specs)]
    if builder.problems:
        raise UserError(problems_message(where, builder.problems))
    return [c for c in critics if c is not None]


def problems_message(where: str, problems: Sequence[str]) -> str:
    """One error for a stage's problems: one line when there is one, else one line each."""
    if len(problems) == 1:
        return f"{where}: {problems[0]}"
    return f"{where} has {len(problems)} problems:\n" + "\n".join(f"  - {p}" for p in problems)


def scripted_model(demo: DemoSpec) -> ScriptedModel:
    """A ScriptedModel that plays a `[demo]` script."""
    scripts = {
        key: [
            Reply(text=r.text, tool_calls=[call(c.name, c.arguments) for c in r.tool_calls])
            if r.tool_calls
            else r.text
            for r in replies
        ]
        for key, replies in demo.script.items()
    }
    return ScriptedModel(scripts, model_name="scripted")


def _base(spec: Spec) -> Path | None:
    return spec.path.resolve().parent if spec.path is not None else None


@contextmanager
def importable(spec_path: Path | None) -> Iterator[None]:
    """Make the spec's directory importable while its import paths are resolved."""
    folder = str(spec_path.resolve().parent) if spec_path is not None else None
    added = folder is not None and folder not in sys.path
    if added:
        sys.path.insert(0, str(folder))
    try:
        yield
    finally:
        if added:
            sys.path.remove(str(folder))


class _Builder:
    """Builds a spec's objects, noting every problem instead of stopping at the first.

    A table whose constructor fails, or whose child failed, builds as None; its siblings
    and children are still built, so one error lists every problem of this stage.
    """

    def __init__(self, spec: Spec | None, offline: bool) -> None:
        self.where = str(spec.path) if spec is not None and spec.path is not None else "spec"
        self.problems: list[str] = []
        self.demo = spec is not None and spec.demo is not None
        self.scripted: ScriptedModel | None = None
        self.servers: dict[str, MCPServer] = {}
        if spec is not None and spec.mcp:
            self.servers = self.attempt(["mcp"], lambda: build_servers(spec.mcp, _base(spec))) or {}
        if offline and spec is not None:
            if spec.demo is None:
                raise UserError(
                    f"{self.where} has no [demo] script, so it cannot run offline; add a [demo] table "
                    f"(see docs/specs.md) or run it with real models."
                )
            self.scripted = scripted_model(spec.demo)

    def build(
        self, spec: Spec, overrides: Mapping[str, object]
    ) -> tuple[Architecture | None, dict[str, RouteLike]]:
        with importable(spec.path):
            arch = self.arch(spec.architecture, [])
        found = callers(arch) if arch is not None else None
        if found is not None:
            self.check_keys(spec, found, overrides)
        self.check_overrides(overrides)
        routes = {k: self.route(r, ["models", k]) for k, r in spec.models.items()}
        return arch, {k: r for k, r in routes.items() if r is not None}

    def attempt(self, path: Sequence[str | int], make: Callable[[], T]) -> T | None:
        """`make()`, or None with its UserError noted under the key path of `path`."""
        try:
            return make()
        except UserError as exc:
            self.problems.append(f"{join_key_path(path) or '(top level)'}: {exc}")
            return None

    def check_keys(self, spec: Spec, found: Sequence[Caller], overrides: Mapping[str, object]) -> None:
        """Note each `[models]` key, override or `[demo.script]` key that no session uses."""
        routed = [c.routed for c in found if c.routed is not None]
        for key in spec.models:
            if problem := unmatched_key(key, routed, "routes"):
                self.problems.append(f"{join_key_path(['models', key])}: {problem}")
        for key in overrides:
            if problem := unmatched_key(key, routed, "routes"):
                self.problems.append(f"the model override {key!r} (--model {key}=...): {problem}")
        for key in spec.demo.script if spec.demo is not None else ():
            if problem := unmatched_key(key, [c.path for c in found], "calls a model"):
                self.problems.append(f"{join_key_path(['demo', 'script', key])}: {problem}")

    def check_overrides(self, overrides: Mapping[str, object]) -> None:
        """Note each `models=` / `--model` string litellm cannot route (offline, none is called)."""
        for key, value in overrides.items():
            if self.scripted is None and isinstance(value, str) and (problem := model_problem(value)):
                self.problems.append(f"--model {key}={value}: {problem}{self.offline_hint}")

    @property
    def offline_hint(self) -> str:
        """How to try the spec without a real model, when it has a [demo] script."""
        return " Or try the spec offline with --offline." if self.demo else ""

    def check_models(self, spec: RouteSpec, path: KeyPath) -> bool:
        """Whether litellm can route the route's model and fallbacks (each it cannot is noted)."""
        problems = [p for m in (spec.model, *spec.fallbacks) if (p := model_problem(m)) is not None]
        self.problems += [f"{join_key_path(path)}: {p}{self.offline_hint}" for p in problems]
        return not problems

    def route(self, spec: RouteSpec, path: KeyPath) -> Route | None:
        if self.scripted is not None:
            return Route(model=f"scripted:{spec.model}", client=self.scripted)
        if not self.check_models(spec, path):
            return None
        return self.attempt(
            path,
            lambda: Route(
                model=spec.model,
                params=spec.params,
                fallbacks=tuple(spec.fallbacks),
                retries=spec.retries,
                backoff_s=spec.backoff_s,
                timeout_s=spec.timeout_s,
            ),
        )

    def override(self, value: RouteLike) -> RouteLike:
        """A `models=` route as given; offline, the script answering in its name."""
        if self.scripted is None:
            return value
        name = value if isinstance(value, str) else getattr(value, "model", None) or "override"
        return Route(model=f"scripted:{name}", client=self.scripted)

    def pin(self, spec: RouteSpec | None, path: KeyPath) -> Route | None:
        return None if spec is None else self.route(spec, [*path, "model"])

    def imported(self, ref: str, path: KeyPath) -> Any:
        return self.attempt(path, lambda: import_object(ref))

    def then(self, before: int, path: KeyPath, make: Callable[[], T]) -> T | None:
        """`make()` under `path` if no problem was noted since `before` (a child failed: None)."""
        return self.attempt(path, make) if len(self.problems) == before else None

    def arch(self, spec: ArchSpec, path: KeyPath) -> Architecture | None:
        if isinstance(spec, AgentSpec):
            return self.agent(spec, path)
        if isinstance(spec, ActorCriticSpec):
            return self.actor_critic(spec, path)
        if isinstance(spec, SelfRefineSpec):
            return self.self_refine(spec, path)
        if isinstance(spec, SupervisorSpec):
            return self.supervisor(spec, path)
        if isinstance(spec, PlanExecuteSpec):
            return self.plan_execute(spec, path)
        if isinstance(spec, GoalSpec):
            return self.goal(spec, path)
        if isinstance(spec, CustomSpec):
            return self.custom(spec, path)
        assert_never(spec)

    def custom(self, spec: CustomSpec, path: KeyPath) -> Architecture | None:
        """An architecture of the user's own: its import path called with its parts built."""
        before = len(self.problems)
        target = self.imported(spec.architecture, [*path, "architecture"])
        kwargs: dict[str, Any] = dict(spec.args)
        kwargs |= {k: self.arch(a, [*path, "parts", k]) for k, a in spec.parts.items()}
        kwargs |= {k: self.critic(c, [*path, "critics", k]) for k, c in spec.critics.items()}
        if spec.role is not None:
            kwargs["role"] = spec.role
        return self.then(before, path, lambda: _call_custom(spec.architecture, target, kwargs))

    def agent(self, spec: AgentSpec, path: KeyPath) -> Agent | None:
        before = len(self.problems)
        tools: list[Tool | MCPServer | None] = [
            self.tool(ref, [*path, "tools", i]) for i, ref in enumerate(spec.tools)
        ]
        tools += [self.server(name, [*path, "mcp_servers", i]) for i, name in enumerate(spec.mcp_servers)]
        output_type = self.imported(spec.output_type, [*path, "output_type"]) if spec.output_type else None
        model = self.pin(spec.model, path)
        return self.then(
            before,
            path,
            lambda: Agent(
                spec.instructions,
                role=spec.role,
                tools=[t for t in tools if t is not None],
                output_type=output_type,
                max_turns=spec.max_turns,
                model=model,
                params=spec.params,
                description=spec.description,
            ),
        )

    def server(self, name: str, path: KeyPath) -> MCPServer | None:
        found = self.servers.get(name)
        if found is None:
            known = ", ".join(sorted(self.servers)) or "none"
            self.problems.append(
                f"{join_key_path(path)}: no [[mcp]] table is named {name!r} (the spec has: {known})."
            )
        return found

    def tool(self, ref: str, path: KeyPath) -> Tool | None:
        before = len(self.problems)
        found = self.imported(ref, path)
        if isinstance(found, Tool):
            return found
        if len(self.problems) > before:
            return None
        if not callable(found) or isinstance(found, type):
            self.problems.append(
                f"{join_key_path(path)}: {ref!r} is {found!r:.80}, not a function or a @tool."
            )
            return None
        return self.attempt(path, lambda: Tool(found))

    def stop(self, spec: StopSpec | None, path: KeyPath) -> StopCondition | None:
        """The stop condition of a `stop` table (None: the architecture's default)."""
        if spec is None:
            return None
        return self.attempt([*path, "stop"], lambda: build_stop(spec, import_object))

    def actor_critic(self, spec: ActorCriticSpec, path: KeyPath) -> ActorCritic | None:
        before = len(self.problems)
        actor = self.arch(spec.actor, [*path, "actor"])
        critics = [self.critic(c, [*path, "critic", i]) for i, c in enumerate(spec.critic)]
        stop = self.stop(spec.stop, path)
        if actor is None or None in critics:
            return None
        judges = [c for c in critics if c is not None]
        return self.then(
            before,
            path,
            lambda: ActorCritic(
                actor,
                judges if len(judges) > 1 or spec.weights else judges[0],
                threshold=spec.threshold,
                max_rounds=spec.max_rounds,
                no_improvement=spec.no_improvement or None,
                stop=stop,
                on_critic_error=spec.on_critic_error,
                critic_template=spec.critic_template,
                refine_template=spec.refine_template,
                weights=spec.weights or None,
                role=spec.role,
                description=spec.description,
            ),
        )

    def self_refine(self, spec: SelfRefineSpec, path: KeyPath) -> SelfRefine | None:
        before = len(self.problems)
        agent = self.arch(spec.agent, [*path, "agent"])
        stop = self.stop(spec.stop, path)
        if agent is None:
            return None
        return self.then(
            before,
            path,
            lambda: SelfRefine(
                agent,
                threshold=spec.threshold,
                max_rounds=spec.max_rounds,
                no_improvement=spec.no_improvement or None,
                stop=stop,
                on_critic_error=spec.on_critic_error,
                feedback_instructions=spec.feedback_instructions,
                feedback_template=spec.feedback_template,
                refine_template=spec.refine_template,
                role=spec.role,
                description=spec.description,
            ),
        )

    def supervisor(self, spec: SupervisorSpec, path: KeyPath) -> Supervisor | None:
        before = len(self.problems)
        workers = {name: self.arch(w, [*path, "workers", name]) for name, w in spec.workers.items()}
        model = self.pin(spec.model, path)
        return self.then(
            before,
            path,
            lambda: Supervisor(
                {name: w for name, w in workers.items() if w is not None},
                instructions=spec.instructions,
                role=spec.role,
                max_delegations=spec.max_delegations,
                share_task=spec.share_task,
                max_turns=spec.max_turns,
                model=model,
                params=spec.params,
                description=spec.description,
            ),
        )

    def plan_execute(self, spec: PlanExecuteSpec, path: KeyPath) -> PlanExecute | None:
        before = len(self.problems)
        planner = self.agent(spec.planner, [*path, "planner"])
        tools = [self.tool(ref, [*path, "tools", i]) for i, ref in enumerate(spec.tools)]
        workers = {name: self.arch(w, [*path, "workers", name]) for name, w in spec.workers.items()}
        evaluators = [self.critic(c, [*path, "evaluators", i]) for i, c in enumerate(spec.evaluators)]
        checks = [self.imported(ref, [*path, "checks", i]) for i, ref in enumerate(spec.checks)]
        evidence = self.imported(spec.evidence, [*path, "evidence"]) if spec.evidence else None
        if planner is None:
            return None
        return self.then(
            before,
            path,
            lambda: PlanExecute(
                planner,
                tools=[t for t in tools if t is not None],
                workers={n: w for n, w in workers.items() if w is not None},
                spec=spec.decision.build(),
                evaluators=[e for e in evaluators if e is not None],
                hard=spec.hard,
                checks=checks,
                evidence=evidence,
                replan_budget=spec.replan_budget,
                retry_budget=spec.retry_budget,
                step_budget=spec.step_budget.build() if spec.step_budget else None,
                estimate_headroom=spec.estimate_headroom or None,
                threshold=spec.threshold,
                role=spec.role,
                description=spec.description,
            ),
        )

    def goal(self, spec: GoalSpec, path: KeyPath) -> Goal | None:
        before = len(self.problems)
        agent = self.agent(spec.agent, [*path, "agent"])
        critics = [self.critic(c, [*path, "success", i]) for i, c in enumerate(spec.success)]
        watchdog = self.watchdog(spec.watchdog, [*path, "watchdog"]) if spec.watchdog else None
        stop = self.stop(spec.stop, path)
        if agent is None or None in critics:
            return None
        judges = [c for c in critics if c is not None]
        return self.then(
            before,
            path,
            lambda: Goal(
                agent,
                goal=spec.goal,
                success=judges if len(judges) > 1 else judges[0],
                watchdog=watchdog,
                stop=stop,
                threshold=spec.threshold,
                max_stuck=spec.max_stuck,
                role=spec.role,
                description=spec.description,
            ),
        )

    def watchdog(self, spec: WatchdogSpec, path: KeyPath) -> Watchdog | None:
        before = len(self.problems)
        model = self.pin(spec.model, path)
        return self.then(
            before,
            path,
            lambda: Watchdog(
                spec.every,
                instructions=spec.instructions,
                model=model,
                params=spec.params,
                repeat_limit=spec.repeat_limit or None,
                on_error=spec.on_error,
                preview=spec.preview,
            ),
        )

    def critic(self, spec: CriticSpec, path: KeyPath) -> Critic | None:
        """A critic; what it imports or pins is resolved first, so each error is keyed once."""
        before = len(self.problems)
        model = self.pin(spec.model, path) if isinstance(spec, LLMCriticSpec) else None
        function: Any = None
        if isinstance(spec, FunctionCriticSpec):
            function = self.imported(spec.function, [*path, "function"])
        return self.then(before, path, lambda: self._critic(spec, model, function))

    @staticmethod
    def _critic(spec: CriticSpec, model: Route | None, function: Any) -> Critic:
        if isinstance(spec, LLMCriticSpec):
            return LLMCritic(
                spec.instructions,
                name=spec.name,
                model=model,
                params=spec.params,
                repair=spec.repair,
            )
        if isinstance(spec, CodeCriticSpec):
            assert spec.tests_source is not None  # the model reads `tests` into it
            return CodeCritic(
                spec.tests_source,
                module=spec.module,
                test_file=spec.test_file,
                timeout_s=spec.timeout_s,
                memory_mb=spec.memory_mb or None,
                all_must_pass=spec.all_must_pass,
                name=spec.name,
                python=spec.python,
                plugins=spec.plugins,
                env=spec.env,
            )
        if isinstance(spec, CitationCriticSpec):
            return CitationCritic(
                spec.evidence_ids,
                uncited_penalty=spec.uncited_penalty,
                hedges=spec.hedges,
                require_citations=spec.require_citations,
                name=spec.name,
            )
        if isinstance(spec, FunctionCriticSpec):
            return FunctionCritic(function, name=spec.name)
        assert_never(spec)


def _call_custom(ref: str, target: Any, kwargs: dict[str, Any]) -> Architecture:
    """What `architecture = "module:attr"` names, called with the table's keywords."""
    if not callable(target) or _is_architecture(target):
        if _is_architecture(target) and not kwargs:
            return target  # type: ignore[no-any-return]
        raise UserError(
            f"architecture = {ref!r} is {target!r}; name an Architecture class or a function returning one."
        )
    try:
        arch = target(**kwargs)
    except TypeError as exc:
        raise UserError(
            f"architecture = {ref!r} does not take these keys ({exc}); give only its keyword arguments "
            f"under [parts], [critics] and [args]."
        ) from None
    if not _is_architecture(arch):
        raise UserError(
            f"architecture = {ref!r} gave {arch!r}, which is not an architecture (no `name` and `run`)."
        )
    return arch  # type: ignore[no-any-return]


def _is_architecture(value: object) -> bool:
    return not isinstance(value, type) and callable(getattr(value, "run", None)) and hasattr(value, "name")
