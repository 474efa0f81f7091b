"""The spec models: one pydantic model per architecture and per critic, discriminated on `type`.

A spec file is TOML. Its top level is the root architecture's table (with `type`), plus
two optional tables: `[models]` (per-role routes) and `[demo]` (scripted replies for
offline runs). Architectures nest to any depth: an ActorCritic's `actor`, a SelfRefine's
`agent` and each of a Supervisor's `workers` is another architecture table.

Values a TOML file cannot hold are spelled so it can: "no limit" is `0`
(`no_improvement`, `memory_mb`), a model is a string or a route table, and code is named
by import path (`package.module:attribute`). Types are strict: `max_rounds = "3"` is an
error, not a 3. Every field's docstring is its line in docs/specs.md (generated from
these models by `jeeves.spec.reference`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag, field_validator, model_validator

from jeeves.approvals.policy import Approvals
from jeeves.architectures._templates import ACTOR_REFINE_TEMPLATE, CRITIC_TEMPLATE, SELF_REFINE_TEMPLATE
from jeeves.architectures._templates import FEEDBACK_INSTRUCTIONS as _FEEDBACK
from jeeves.architectures.supervisor import DEFAULT_INSTRUCTIONS as _SUPERVISOR
from jeeves.critics.watchdog import WATCHDOG_INSTRUCTIONS as _WATCHDOG
from jeeves.spec.mcp import MCPServerSpec
from jeeves.spec.parts import (
    CRITIC_SPECS,
    CitationCriticSpec,
    CodeCriticSpec,
    CriticSpec,
    DecisionTable,
    DemoSpec,
    FunctionCriticSpec,
    ImportPath,
    LLMCriticSpec,
    Name,
    ReplySpec,
    RouteKey,
    RouteSpec,
    SpecModel,
    StepBudgetTable,
    ToolCallSpec,
    fill_type,
)
from jeeves.spec.stop import StopSpec, StopWhenSpec

__all__ = [
    "ARCHITECTURE_SPECS",
    "CRITIC_SPECS",
    "ActorCriticSpec",
    "AgentSpec",
    "ArchSpec",
    "CitationCriticSpec",
    "CodeCriticSpec",
    "CriticSpec",
    "CustomSpec",
    "DecisionTable",
    "DemoSpec",
    "FunctionCriticSpec",
    "GoalSpec",
    "LLMCriticSpec",
    "PlanExecuteSpec",
    "ReplySpec",
    "RouteSpec",
    "SelfRefineSpec",
    "Spec",
    "StopSpec",
    "StepBudgetTable",
    "StopWhenSpec",
    "SupervisorSpec",
    "ToolCallSpec",
    "WatchdogSpec",
]


# -- architectures -----------------------------------------------------------------------
class AgentSpec(SpecModel):
    """`type = "agent"` (the default when `type` is left out): one model with tools (jeeves.Agent)."""

    type: Literal["agent"]
    instructions: str
    """The system prompt."""
    role: Name = "agent"
    """The role routing uses when the agent is the root; as a child, its parent names its role."""
    tools: list[ImportPath] = Field(default_factory=list)
    """Tools by import path: `@tool` objects or typed functions."""
    mcp_servers: list[Name] = Field(default_factory=list)
    """MCP servers (the names of `[[mcp]]` tables) whose tools the agent may call too."""
    output_type: ImportPath | None = None
    """A pydantic model (by import path) the reply must validate against; unset, text."""
    max_turns: int = Field(default=10, ge=1)
    """Model calls allowed before the run fails with MaxTurnsExceeded."""
    model: RouteSpec | None = None
    """Pin the agent to a model (a string or a route table); unset, the `[models]` table decides."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Provider parameters for every call (temperature, max_tokens…)."""
    description: str = ""
    """What the agent does, for a Supervisor's model; unset, the first line of `instructions`."""

    @model_validator(mode="before")
    @classmethod
    def _default_type(cls, data: Any) -> Any:
        return fill_type(data, "agent")


class _LoopSpec(SpecModel):
    threshold: float = Field(default=0.8, ge=0, le=1)
    """The score a candidate needs to be approved."""
    max_rounds: int = Field(default=3, ge=0)
    """Refinements allowed after the first draft."""
    on_critic_error: Literal["keep_draft", "raise"] = "keep_draft"
    """When the critic fails: return the best draft so far, or raise CriticError."""
    stop: StopSpec | None = None
    """A stop condition table instead of `max_rounds` / `no_improvement` (see "Stop conditions");
    it must cap the rounds or the time."""
    refine_template: str = ACTOR_REFINE_TEMPLATE
    """The prompt the actor revises from (placeholders: see docs/architectures/actor-critic.md)."""
    description: str = ""
    """What this architecture does, for a Supervisor's model; unset, the inner architecture's."""


class ActorCriticSpec(_LoopSpec):
    """`type = "actor_critic"`: an actor drafts, separate critics judge, the actor revises."""

    type: Literal["actor_critic"]
    actor: ArchSpec
    """The architecture that drafts and revises (an agent table, or any architecture)."""
    critic: list[CriticSpec] = Field(min_length=1)
    """One critic table, or an array of them (`[[critic]]`), combined into one verdict."""
    no_improvement: int = Field(default=0, ge=0)
    """Stop after this many refinements in a row without a better candidate; 0 never stops early."""
    critic_template: str = CRITIC_TEMPLATE
    """What the critic is shown."""
    weights: dict[str, float] = Field(default_factory=dict)
    """Score weights by critic name, for several critics; empty: the lowest score counts."""
    role: Name = "actor_critic"
    """The role routing uses when this is the root."""

    @field_validator("critic", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, dict) else value


class SelfRefineSpec(_LoopSpec):
    """`type = "self_refine"`: one model drafts, critiques itself and refines, with the whole history."""

    type: Literal["self_refine"]
    agent: ArchSpec
    """The architecture that drafts (usually an agent table)."""
    no_improvement: int = Field(default=1, ge=0)
    """Stop after this many attempts in a row without a better score; 0 never stops early."""
    feedback_instructions: str = _FEEDBACK
    """The feedback system prompt; the verdict format is appended."""
    feedback_template: str = CRITIC_TEMPLATE
    """What the feedback call is shown."""
    refine_template: str = SELF_REFINE_TEMPLATE
    """The refine prompt; the default holds every attempt with its feedback."""
    role: Name | None = None
    """The role routing uses when this is the root; unset, the agent's role."""


class SupervisorSpec(SpecModel):
    """`type = "supervisor"`: a coordinator model delegates to named workers, several at once."""

    type: Literal["supervisor"]
    workers: dict[Name, ArchSpec] = Field(min_length=1)
    """Worker name → architecture table (`[workers.coder]`); the name is the worker's role."""
    instructions: str = _SUPERVISOR
    """The coordinator's system prompt."""
    role: Name = "supervisor"
    """The role routing uses when this is the root."""
    max_delegations: int = Field(default=10, ge=1)
    """Delegations accepted per run; more are refused with an error the model reads."""
    share_task: bool = True
    """Give each worker the user's task after its instructions."""
    max_turns: int = Field(default=10, ge=1)
    """Coordinator model calls allowed."""
    model: RouteSpec | None = None
    """Pin the coordinator to a model; unset, the `[models]` table decides."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Provider parameters for the coordinator's calls."""
    description: str = ""
    """What this supervisor does, for a parent Supervisor's model; unset, its workers' names."""


class PlanExecuteSpec(SpecModel):
    """`type = "plan_execute"`: a planner proposes a typed plan, the critic verifies it before anything
    runs, the steps run, evaluators score the result (jeeves.PlanExecute)."""

    type: Literal["plan_execute"]
    planner: AgentSpec
    """The planning agent's table (its output type is the plan; the surface and spec are added to its prompt)."""
    tools: list[ImportPath] = Field(default_factory=list)
    """Tools plan steps may call, by import path; their approval modes are checked against `safety_mode`."""
    workers: dict[Name, ArchSpec] = Field(default_factory=dict)
    """Worker name → architecture table, for steps that delegate (approval mode `delegated`)."""
    decision: DecisionTable = Field(default_factory=DecisionTable)
    """`[decision]`: what a plan must satisfy (required outputs, max steps, plan tokens, safety mode)."""
    evaluators: list[CriticSpec] = Field(default_factory=list)
    """Critic tables (`[[evaluators]]`) that score the executed plan's result."""
    hard: list[Name] = Field(default_factory=list)
    """Evaluators whose failure fails the run whatever the others say."""
    checks: list[ImportPath] = Field(default_factory=list)
    """Extra verify checks by import path: functions `(plan, spec) -> VerifyVerdict | None`."""
    evidence: ImportPath | None = None
    """A read-only evidence retriever by import path, `(task) -> list[Evidence]`: the run's
    evidence manifest, which plan steps pin evidence from."""
    replan_budget: int = Field(default=2, ge=0)
    """New plans allowed after the first."""
    retry_budget: int = Field(default=1, ge=0)
    """Re-executions of a verified plan allowed when an evaluator scored its result under the threshold."""
    step_budget: StepBudgetTable | None = None
    """`[step_budget]`: each step's own slice of the run's budget; unset, steps share the run's."""
    estimate_headroom: float = Field(default=0, ge=0)
    """A step's `estimated_tokens` times this caps its tokens too (1 or more); 0 for no cap."""
    threshold: float = Field(default=0.8, ge=0, le=1)
    """The score each evaluator must reach."""
    role: Name = "plan_execute"
    """The role routing uses when this is the root."""
    description: str = ""
    """What this architecture does, for a Supervisor's model; unset, the planner's."""

    @model_validator(mode="before")
    @classmethod
    def _planner_is_an_agent(cls, data: Any) -> Any:
        return (
            {**data, "planner": fill_type(data["planner"], "agent")}
            if isinstance(data, dict) and isinstance(data.get("planner"), dict)
            else data
        )


class WatchdogSpec(SpecModel):
    """`[watchdog]` of a goal: a cheap model that judges the agent's trajectory (jeeves.Watchdog)."""

    every: int = Field(default=5, ge=0)
    """Tool calls between two reviews by the watchdog's model; 0 turns them off (loop signals stay)."""
    instructions: str = _WATCHDOG
    """The watchdog's system prompt."""
    model: RouteSpec | None = None
    """Pin the watchdog to a model; unset, `[models]` decides (route `watchdog` to a cheap model)."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Provider parameters for the watchdog's calls."""
    repeat_limit: int = Field(default=3, ge=0)
    """The same call, or the same failure, this many times in a row is a STUCK loop signal; 0 turns
    the signals off, otherwise at least 2."""
    on_error: Literal["continue", "raise"] = "continue"
    """When the watchdog's model fails: count it as PROGRESSING (flagged) and go on, or raise."""
    preview: int = Field(default=200, ge=1)
    """Characters of each tool result the watchdog is shown."""


class GoalSpec(SpecModel):
    """`type = "goal"`: a tool agent works toward a goal until a success critic verifies it, watched by a watchdog."""

    type: Literal["goal"]
    goal: str = Field(min_length=1)
    """What must be true at the end, in a sentence or two."""
    agent: AgentSpec
    """The tool agent (an agent table); the goal adds its `claim_complete` and `abort` tools."""
    success: list[CriticSpec] = Field(min_length=1)
    """The success critic: one critic table, or an array of them (`[[success]]`), combined."""
    watchdog: WatchdogSpec | None = None
    """The watchdog (`[watchdog]`); unset, no reviews and no loop signals."""
    stop: StopSpec | None = None
    """When to give up short of success (see "Stop conditions"); unset, `{max_tool_calls = 100}`."""
    threshold: float = Field(default=0.8, ge=0, le=1)
    """The success critic's score needed to pass."""
    max_stuck: int = Field(default=3, ge=1)
    """STUCK verdicts in a row that end the run `stuck`."""
    role: Name = "goal"
    """The role routing uses when this is the root."""
    description: str = ""
    """What this goal run does, for a Supervisor's model; unset, built from the goal."""

    @field_validator("success", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, dict) else value


class CustomSpec(SpecModel):
    """An architecture of your own, named by import path (`architecture = "debate:Debate"`).

    The class (or factory function) is called with keyword arguments: each `[parts.NAME]`
    table built as an architecture, each `[critics.NAME]` table built as a critic, and
    `[args]` as given. Import paths resolve beside the spec file, as tools' do.
    """

    type: Literal["custom"] = "custom"
    architecture: str
    """`module:attr`: an Architecture class or a function returning one."""
    role: str | None = None
    """The role its session runs as; unset, what the architecture says."""
    parts: dict[str, ArchSpec] = Field(default_factory=dict)
    """Keyword → architecture table (`[parts.pro]`), built and passed to it."""
    critics: dict[str, CriticSpec] = Field(default_factory=dict)
    """Keyword → critic table (`[critics.judge]`), built and passed to it."""
    args: dict[str, Any] = Field(default_factory=dict)
    """Other keyword arguments, passed as they are (`[args]`, e.g. `turns = 2`)."""


def _arch_type(value: Any) -> str | None:
    if isinstance(value, dict):
        tag = value.get("type", "custom" if "architecture" in value else "agent")
        return tag if isinstance(tag, str) else None
    return getattr(value, "type", "agent")  # not a table: AgentSpec says it should be one


ArchSpec = Annotated[
    Annotated[AgentSpec, Tag("agent")]
    | Annotated[ActorCriticSpec, Tag("actor_critic")]
    | Annotated[SelfRefineSpec, Tag("self_refine")]
    | Annotated[SupervisorSpec, Tag("supervisor")]
    | Annotated[PlanExecuteSpec, Tag("plan_execute")]
    | Annotated[GoalSpec, Tag("goal")]
    | Annotated[CustomSpec, Tag("custom")],
    Discriminator(_arch_type),
]
"""Any architecture table, told apart by `type` (default `agent`)."""

ARCHITECTURE_SPECS: dict[str, type[SpecModel]] = {
    "agent": AgentSpec,
    "actor_critic": ActorCriticSpec,
    "self_refine": SelfRefineSpec,
    "supervisor": SupervisorSpec,
    "plan_execute": PlanExecuteSpec,
    "goal": GoalSpec,
    "custom": CustomSpec,
}

for _spec in ARCHITECTURE_SPECS.values():
    _spec.model_rebuild()


class Spec(SpecModel):
    """A whole spec file: the root architecture, its routes and its offline script.

    In the file the architecture's keys sit at the top level beside `[models]` and `[demo]`;
    here it is `architecture`. `path` is where it was loaded from (not part of equality's
    meaning for code, and never dumped).
    """

    architecture: ArchSpec
    """The root architecture (the file's top-level keys)."""
    models: dict[RouteKey, RouteSpec] = Field(default_factory=dict)
    """`[models]`: role path (`actor`, `coder.critic`, `default`) → route."""
    demo: DemoSpec | None = None
    """`[demo]`: scripted replies so the spec runs offline."""
    approvals: Approvals | None = None
    """`[approvals]`: the run's approval policy (`jeeves.approvals.Approvals`: auto, ask,
    refuse_above, rules, deny_ends_run, gate_ttl_s); None: nothing is gated."""
    mcp: list[MCPServerSpec] = Field(default_factory=list)
    """`[[mcp]]`: MCP servers the agents name in their `mcp_servers` (see the `[[mcp]]` table below)."""
    path: Path | None = Field(default=None, exclude=True)
    """The file the spec was loaded from; relative paths and import paths resolve beside it."""
