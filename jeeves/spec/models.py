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

from jeeves.architectures._templates import ACTOR_REFINE_TEMPLATE, CRITIC_TEMPLATE, SELF_REFINE_TEMPLATE
from jeeves.architectures._templates import FEEDBACK_INSTRUCTIONS as _FEEDBACK
from jeeves.architectures.supervisor import DEFAULT_INSTRUCTIONS as _SUPERVISOR
from jeeves.gating import Approvals
from jeeves.spec.parts import (
    CRITIC_SPECS,
    CitationCriticSpec,
    CodeCriticSpec,
    CriticSpec,
    DemoSpec,
    FunctionCriticSpec,
    ImportPath,
    LLMCriticSpec,
    Name,
    ReplySpec,
    RouteKey,
    RouteSpec,
    SpecModel,
    ToolCallSpec,
    fill_type,
)

__all__ = [
    "ARCHITECTURE_SPECS",
    "CRITIC_SPECS",
    "ActorCriticSpec",
    "AgentSpec",
    "ArchSpec",
    "CitationCriticSpec",
    "CodeCriticSpec",
    "CriticSpec",
    "DemoSpec",
    "FunctionCriticSpec",
    "LLMCriticSpec",
    "ReplySpec",
    "RouteSpec",
    "SelfRefineSpec",
    "Spec",
    "SupervisorSpec",
    "ToolCallSpec",
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


def _arch_type(value: Any) -> str | None:
    if isinstance(value, dict):
        tag = value.get("type", "agent")
        return tag if isinstance(tag, str) else None
    return getattr(value, "type", "agent")  # not a table: AgentSpec says it should be one


ArchSpec = Annotated[
    Annotated[AgentSpec, Tag("agent")]
    | Annotated[ActorCriticSpec, Tag("actor_critic")]
    | Annotated[SelfRefineSpec, Tag("self_refine")]
    | Annotated[SupervisorSpec, Tag("supervisor")],
    Discriminator(_arch_type),
]
"""Any architecture table, told apart by `type` (default `agent`)."""

ARCHITECTURE_SPECS: dict[str, type[SpecModel]] = {
    "agent": AgentSpec,
    "actor_critic": ActorCriticSpec,
    "self_refine": SelfRefineSpec,
    "supervisor": SupervisorSpec,
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
    path: Path | None = Field(default=None, exclude=True)
    """The file the spec was loaded from; relative paths and import paths resolve beside it."""
