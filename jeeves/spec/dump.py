"""Dumping an Architecture built in code to a spec: `dump(arch) -> dict`, `dumps(arch) -> TOML`.

The dump holds only what differs from the defaults, and loads back (`parse_spec`, then
`build`) into an architecture that dumps to the same table. What a spec names by import
path (tools, output types, function critics) must be importable by that path from a
module, and a model pin must be a model string, not a client object: anything else is a
UserError saying which object and why, never a spec that would load into something else.
Subclasses of the jeeves classes are refused too: their behaviour is not in the table.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from jeeves._run.routes import callers, unmatched_key
from jeeves._run.source import import_object
from jeeves.agent.agent import Agent
from jeeves.agent.tools import Tool
from jeeves.architectures import ActorCritic, Goal, PlanExecute, SelfRefine, Supervisor
from jeeves.architectures._templates import Template
from jeeves.critics import (
    VERDICT_FORMAT,
    CitationCritic,
    CodeCritic,
    CombinedCritic,
    FunctionCritic,
    LLMCritic,
    Watchdog,
)
from jeeves.errors import UserError
from jeeves.models.base import Route
from jeeves.models.router import Router
from jeeves.spec.load import TOP_LEVEL_TABLES
from jeeves.spec.mcp import MCPServerSpec
from jeeves.spec.models import (
    ActorCriticSpec,
    AgentSpec,
    ArchSpec,
    CitationCriticSpec,
    CodeCriticSpec,
    CriticSpec,
    DecisionTable,
    DemoSpec,
    FunctionCriticSpec,
    GoalSpec,
    LLMCriticSpec,
    PlanExecuteSpec,
    RouteSpec,
    SelfRefineSpec,
    Spec,
    StepBudgetTable,
    StopSpec,
    SupervisorSpec,
    WatchdogSpec,
)
from jeeves.spec.stop import stop_spec
from jeeves.spec.toml import to_toml
from jeeves.stop import MaxToolCalls, StopCondition

__all__ = ["dump", "dumps", "spec_dict", "spec_of"]


def dump(arch: object, *, router: Router | None = None, demo: DemoSpec | None = None) -> dict[str, Any]:
    """`arch` as a spec file's table; with `router`, its routes as `[models]`.

    Routes that no session of `arch` would look up (a router shared by several
    architectures) are left out: they change nothing about this one, and a spec refuses them.
    """
    found = callers(arch)
    routed = None if found is None else [c.routed for c in found if c.routed is not None]
    models = {
        key: _route(route, f"route {key!r}")
        for key, route in (router.routes if router else {}).items()
        if routed is None or unmatched_key(key, routed, "routes") is None
    }
    servers: dict[str, MCPServerSpec] = {}
    token = _SERVERS.set(servers)
    try:
        architecture = spec_of(arch)
    finally:
        _SERVERS.reset(token)
    return spec_dict(Spec(architecture=architecture, models=models, demo=demo, mcp=list(servers.values())))


def dumps(arch: object, *, router: Router | None = None, demo: DemoSpec | None = None) -> str:
    """`dump` as TOML text, ready to save as `name.toml`."""
    return to_toml(dump(arch, router=router, demo=demo))


def spec_dict(spec: Spec) -> dict[str, Any]:
    """A Spec as the file's table: the architecture's keys at the top, non-default values only.

    A `code` critic loaded from a file keeps its test source inline (`tests_source`) and
    drops the path, so the table is whole wherever it is loaded again (a journal, say).
    """
    data = spec.model_dump(mode="json", exclude_defaults=True)
    top = _tidy(data.pop("architecture"))
    assert isinstance(top, dict)
    return {**top, **{k: data[k] for k in TOP_LEVEL_TABLES if k in data}}


def _tidy(data: Any) -> Any:
    """`type` first in every table; a code critic's test source inline, without its path."""
    if isinstance(data, dict):
        if data.get("type") == "code" and "tests_source" in data:
            data.pop("tests", None)
        ordered = {"type": data["type"]} if "type" in data else {}
        return ordered | {k: _tidy(v) for k, v in data.items() if k != "type"}
    if isinstance(data, list):
        return [_tidy(v) for v in data]
    return data


def spec_of(arch: object) -> ArchSpec:
    """The spec model of an architecture built in code (the inverse of `build`)."""
    dumper = _ARCHITECTURES.get(type(arch))  # the exact class: a subclass's behaviour is not in the table
    if dumper is None:
        raise UserError(
            f"Cannot dump {arch!r} to a spec: only jeeves.Agent, ActorCritic, SelfRefine, Supervisor, PlanExecute and Goal "
            f"(not subclasses) have a spec form. Build it from those, or keep it in code."
        )
    return dumper(arch)


def _ref(obj: object, what: str) -> str:
    """The import path that gives back `obj` (or the Tool wrapping it)."""
    target = obj.function if isinstance(obj, Tool) else obj
    module, name = getattr(target, "__module__", None), getattr(target, "__qualname__", None)
    ref = f"{module}:{name}"
    if not module or not name or module == "__main__" or "<" in name:
        raise UserError(
            f"Cannot dump {what} {obj!r}: a spec names it by import path, and {ref!r} cannot be imported "
            f"by another process. Define it at the top level of a module."
        )
    try:
        found = import_object(ref)
    except UserError as exc:
        raise UserError(
            f"Cannot dump {what} {obj!r}: its import path {ref!r} does not resolve ({exc})."
        ) from None
    if isinstance(obj, Tool):
        rebuilt = found if isinstance(found, Tool) else Tool(obj.function) if found is target else None
        same = rebuilt is not None and (rebuilt.function, rebuilt.name, rebuilt.description) == (
            obj.function,
            obj.name,
            obj.description,
        )
    else:
        same = found is obj
    if not same:
        raise UserError(
            f"Cannot dump {what} {obj!r}: {ref!r} imports {found!r}, not this object. Give it its own "
            f"module-level name (a @tool at module level, for tools)."
        )
    return ref


def _route(route: Route, what: str) -> RouteSpec:
    if route.client is not None:
        raise UserError(
            f"Cannot dump {what}: it is served by the client {route.client!r}, which a spec cannot name. "
            f"Use a litellm model string, or leave the model to the router."
        )
    return RouteSpec(
        model=route.model,
        fallbacks=list(route.fallbacks),
        params=dict(route.params),
        retries=route.retries,
        backoff_s=route.backoff_s,
        timeout_s=route.timeout_s,
    )


def _pin(route: Route | None, what: str) -> RouteSpec | None:
    return None if route is None else _route(route, what)


_SERVERS: ContextVar[dict[str, MCPServerSpec] | None] = ContextVar("jeeves_dump_mcp", default=None)
"""The `[[mcp]]` tables of the dump in progress, by name (the agents name them in `mcp_servers`)."""


def _mcp_server(toolset: object) -> str:
    """An agent's MCP server as an `[[mcp]]` table of the dump; its name for `mcp_servers`."""
    from jeeves.mcp.client import MCPServer

    if type(toolset) is not MCPServer:
        raise UserError(
            f"Cannot dump toolset {toolset!r} to a spec: only a jeeves.mcp.MCPServer has a spec form."
        )
    if toolset.startup_timeout_s != 60.0:
        raise UserError(
            f"Cannot dump MCP server {toolset.name!r}: startup_timeout_s={toolset.startup_timeout_s:g} has no "
            f"[[mcp]] key; leave the default or keep it in code."
        )
    table = MCPServerSpec(
        name=toolset.name,
        command=[toolset.command, *toolset.args] if toolset.transport == "stdio" else [],
        url=toolset.url,
        env=dict(toolset.env or {}),
        cwd=os.path.abspath(toolset.cwd)
        if toolset.cwd
        else "",  # a spec resolves a relative one beside itself
        headers=toolset.headers,
        mode=toolset.mode,
        modes=toolset.modes,
        unannotated=toolset.unannotated,
        timeout_s=toolset.timeout_s,
        max_result_chars=toolset.max_result_chars,
        resources=toolset.resources,
    )
    found = _SERVERS.get()
    if found is not None:
        if found.setdefault(table.name, table) != table:
            raise UserError(
                f"Cannot dump two different MCP servers named {table.name!r}; give one another name=."
            )
    return table.name


def _agent(agent: Agent) -> AgentSpec:
    default_description = agent.instructions.split("\n", 1)[0][:200]
    return AgentSpec(
        type="agent",
        instructions=agent.instructions,
        role=agent.role,
        tools=[_ref(t, "tool") for t in agent.tools],
        mcp_servers=[_mcp_server(t) for t in agent.toolsets],
        output_type=_ref(agent.output_type, "output type") if agent.output_type is not None else None,
        max_turns=agent.max_turns,
        model=_pin(agent.route, f"the model of agent {agent.role!r}"),
        params=dict(agent.params),
        description="" if agent.description == default_description else agent.description,
    )


def _description(arch: object, inner: object) -> str:
    described = getattr(arch, "description", "")
    return "" if described == getattr(inner, "description", "") else str(described)


def _text(template: Template) -> str:
    if not isinstance(template, str):
        raise UserError(
            f"The prompt template {template!r} is a Python function, which a spec cannot hold; "
            f"give the architecture a format-string template to dump it."
        )
    return template


def _loop_stop(arch: ActorCritic | SelfRefine) -> StopSpec | None:
    """A loop's `stop` table, when it was given one (the keywords dump as themselves)."""
    return _stop(arch.settings.stop) if arch.settings.custom_stop else None


def _stop(condition: StopCondition) -> StopSpec:
    return stop_spec(condition, _ref)


def _actor_critic(arch: ActorCritic) -> ActorCriticSpec:
    s = arch.settings
    combined = type(arch.critic) is CombinedCritic
    critics = arch.critic.critics if combined else [arch.critic]  # type: ignore[attr-defined]
    weights = arch.critic.weights if combined else None  # type: ignore[attr-defined]
    return ActorCriticSpec(
        type="actor_critic",
        actor=spec_of(arch.actor),
        critic=[_critic(c) for c in critics],
        threshold=s.threshold,
        max_rounds=s.max_rounds,
        no_improvement=s.no_improvement or 0,
        stop=_loop_stop(arch),
        on_critic_error=s.on_critic_error,
        critic_template=_text(s.critic_template),
        refine_template=_text(s.refine_template),
        weights=dict(weights or {}),
        role=arch.role,
        description=_description(arch, arch.actor),
    )


def _self_refine(arch: SelfRefine) -> SelfRefineSpec:
    s = arch.settings
    suffix = "\n" + VERDICT_FORMAT
    feedback = arch.feedback.instructions
    agent_role = getattr(arch.agent, "role", None) or SelfRefine.name
    return SelfRefineSpec(
        type="self_refine",
        agent=spec_of(arch.agent),
        threshold=s.threshold,
        max_rounds=s.max_rounds,
        no_improvement=s.no_improvement or 0,
        stop=_loop_stop(arch),
        on_critic_error=s.on_critic_error,
        feedback_instructions=feedback.removesuffix(suffix),
        feedback_template=_text(s.critic_template),
        refine_template=_text(s.refine_template),
        role=None if arch.role == agent_role else arch.role,
        description=_description(arch, arch.agent),
    )


def _supervisor(arch: Supervisor) -> SupervisorSpec:
    default_description = f"Coordinates workers: {', '.join(arch.workers)}."
    return SupervisorSpec(
        type="supervisor",
        workers={name: spec_of(w) for name, w in arch.workers.items()},
        instructions=arch.instructions,
        role=arch.role,
        max_delegations=arch.max_delegations,
        share_task=arch.share_task,
        max_turns=arch.max_turns,
        model=_pin(arch.route, f"the model of supervisor {arch.role!r}"),
        params=dict(arch.params),
        description="" if arch.description == default_description else arch.description,
    )


def _plan_execute(arch: PlanExecute) -> PlanExecuteSpec:
    d = arch.spec
    return PlanExecuteSpec(
        type="plan_execute",
        planner=_agent(arch.given_planner),
        tools=[_ref(t, "tool") for t in arch.tools.values()],
        workers={name: spec_of(w) for name, w in arch.workers.items()},
        decision=DecisionTable(
            required_outputs=list(d.required_outputs),
            max_steps=d.max_steps,
            max_plan_tokens=d.max_plan_tokens or 0,
            safety_mode=d.safety_mode,
            requires_evidence={k: list(v) for k, v in d.requires_evidence.items()},
        ),
        evidence=_ref(arch.evidence, "evidence retriever") if arch.evidence is not None else None,
        evaluators=[_critic(e) for e in arch.evaluators],
        hard=sorted(arch.hard),
        checks=[_ref(c, "plan check") for c in arch.checks],
        replan_budget=arch.replan_budget,
        retry_budget=arch.retry_budget,
        step_budget=StepBudgetTable(**arch.step_budget.model_dump()) if arch.step_budget else None,
        estimate_headroom=arch.estimate_headroom or 0,
        threshold=arch.threshold,
        role=arch.role,
        description=_description(arch, arch.given_planner),
    )


def _goal(arch: Goal) -> GoalSpec:
    combined = type(arch.success) is CombinedCritic
    critics = arch.success.critics if combined else [arch.success]  # type: ignore[attr-defined]
    default_description = f"Works toward a goal until it is verified: {arch.goal[:150]}"
    return GoalSpec(
        type="goal",
        goal=arch.goal,
        agent=_agent(arch.base_agent),
        success=[_critic(c) for c in critics],
        watchdog=_watchdog(arch.watchdog) if arch.watchdog is not None else None,
        stop=None if arch.stop == MaxToolCalls(100) else _stop(arch.stop),
        threshold=arch.threshold,
        max_stuck=arch.max_stuck,
        role=arch.role,
        description="" if arch.description == default_description else arch.description,
    )


def _watchdog(watchdog: Watchdog) -> WatchdogSpec:
    if type(watchdog) is not Watchdog:
        raise UserError(
            f"Cannot dump the watchdog {watchdog!r}: a spec knows jeeves.Watchdog, not subclasses."
        )
    return WatchdogSpec(
        every=watchdog.every,
        instructions=watchdog.instructions,
        model=_pin(watchdog.route, "the watchdog's model"),
        params=dict(watchdog.params),
        repeat_limit=watchdog.repeat_limit or 0,
        on_error=watchdog.on_error,
        preview=watchdog.preview,
    )


def _llm_critic(critic: LLMCritic) -> LLMCriticSpec:
    return LLMCriticSpec(
        type="llm",
        instructions=critic.instructions,
        name=critic.name,
        model=_pin(critic.route, f"the model of critic {critic.name!r}"),
        params=dict(critic.params),
        repair=critic.repair,
    )


def _code_critic(critic: CodeCritic) -> CodeCriticSpec:
    return CodeCriticSpec(
        type="code",
        tests_source=critic.tests,
        module=critic.module,
        test_file=critic.test_file,
        timeout_s=critic.timeout_s,
        memory_mb=critic.memory_mb or 0,
        all_must_pass=critic.all_must_pass,
        name=critic.name,
        python=None if critic.python == sys.executable else critic.python,
        plugins=list(critic.plugins),
        env=dict(critic.env),
    )


def _citation_critic(critic: CitationCritic) -> CitationCriticSpec:
    return CitationCriticSpec(
        type="citations",
        evidence_ids=sorted(critic.evidence_ids),
        uncited_penalty=critic.uncited_penalty,
        hedges=list(critic.hedges),
        require_citations=critic.require_citations,
        name=critic.name,
    )


def _function_critic(critic: FunctionCritic) -> FunctionCriticSpec:
    default = FunctionCritic(critic.function).name
    return FunctionCriticSpec(
        type="function",
        function=_ref(critic.function, "critic function"),
        name=None if critic.name == default else critic.name,
    )


def _critic(critic: object) -> CriticSpec:
    dumper = _CRITICS.get(type(critic))
    if dumper is None:
        raise UserError(
            f"Cannot dump the critic {critic!r}: a spec knows LLMCritic, CodeCritic, CitationCritic and "
            f"FunctionCritic (a function critic must be importable by path)."
        )
    return dumper(critic)


_ARCHITECTURES: dict[type, Callable[[Any], ArchSpec]] = {
    Agent: _agent,
    ActorCritic: _actor_critic,
    SelfRefine: _self_refine,
    Supervisor: _supervisor,
    PlanExecute: _plan_execute,
    Goal: _goal,
}
_CRITICS: dict[type, Callable[[Any], CriticSpec]] = {
    LLMCritic: _llm_critic,
    CodeCritic: _code_critic,
    CitationCritic: _citation_critic,
    FunctionCritic: _function_critic,
}
