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

import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    SerializerFunctionWrapHandler,
    Tag,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from jeeves.architectures._templates import ACTOR_REFINE_TEMPLATE, CRITIC_TEMPLATE, SELF_REFINE_TEMPLATE
from jeeves.architectures._templates import FEEDBACK_INSTRUCTIONS as _FEEDBACK
from jeeves.architectures.supervisor import DEFAULT_INSTRUCTIONS as _SUPERVISOR
from jeeves.critics.citations import HEDGES
from jeeves.critics.llm import REVIEW_INSTRUCTIONS

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
    "Spec",
    "SelfRefineSpec",
    "SupervisorSpec",
    "ToolCallSpec",
]

_NAME = re.compile(r"[a-z][a-z0-9_]*")
_IMPORT = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")


def _name(value: str) -> str:
    if not _NAME.fullmatch(value) or "__" in value:
        raise ValueError(
            f"{value!r} is not a valid name: use lowercase letters, digits and single underscores, "
            f"starting with a letter (e.g. 'critic', 'code_reviewer')"
        )
    return value


def _import_path(value: str) -> str:
    if not _IMPORT.fullmatch(value):
        raise ValueError(f"{value!r} is not an import path; write 'package.module:attribute'")
    return value


def _route_key(value: str) -> str:
    if value != "default" and not all(_NAME.fullmatch(p) and "__" not in p for p in value.split(".")):
        raise ValueError(
            f"{value!r} is not a route key: use 'default' or a role path of names joined by dots "
            f"(e.g. 'critic', 'coder.critic')"
        )
    return value


Name = Annotated[str, AfterValidator(_name)]
RouteKey = Annotated[str, AfterValidator(_route_key)]
ImportPath = Annotated[str, AfterValidator(_import_path)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, use_attribute_docstrings=True)


def _fill_type(data: Any, tag: str) -> Any:
    if isinstance(data, dict) and "type" not in data:
        return {"type": tag, **data}
    return data


# -- routes ------------------------------------------------------------------------------
class RouteSpec(_Model):
    """Where a role's model calls go. A plain string is a route with only `model`."""

    model: str = Field(min_length=1)
    """The litellm model string, e.g. "anthropic/claude-sonnet-4-5"."""
    fallbacks: list[str] = Field(default_factory=list)
    """Models tried in order when `model` keeps failing with retryable errors."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Provider parameters for every call on the route (temperature, max_tokens…)."""
    retries: int = Field(default=2, ge=0)
    """Extra attempts per model on a retryable error (rate limit, timeout, 5xx)."""
    backoff_s: float = Field(default=0.5, ge=0)
    """First retry delay in seconds; doubles per attempt."""

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, data: Any) -> Any:
        return {"model": data} if isinstance(data, str) else data

    @model_serializer(mode="wrap")
    def _as_string(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        return data["model"] if isinstance(data, dict) and set(data) == {"model"} else data


# -- critics -----------------------------------------------------------------------------
class LLMCriticSpec(_Model):
    """`type = "llm"`: a model asked for a verdict (jeeves.LLMCritic)."""

    type: Literal["llm"]
    instructions: str = REVIEW_INSTRUCTIONS
    """The reviewer's system prompt; end your own with the verdict format (see docs/critics.md)."""
    name: Name = "llm"
    """The critic's name: tags its verdicts and issues, and keys `weights`."""
    model: RouteSpec | None = None
    """Pin the critic to a model (a string or a route table); unset, the `[models]` table decides."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Provider parameters for the critic's calls."""
    repair: bool = True
    """Ask once more when the reply has no readable score."""


class CodeCriticSpec(_Model):
    """`type = "code"`: run the candidate's Python against a pytest file (jeeves.CodeCritic)."""

    type: Literal["code"]
    tests: str | None = None
    """Path of the pytest file, relative to the spec file. Give this or `tests_source`."""
    tests_source: str | None = None
    """The pytest file's text, inline; read from `tests` when the spec is loaded (and used when both are set)."""
    module: str = "solution"
    """The module name the tests import the candidate's code as."""
    test_file: str = "test_solution.py"
    """The file name the tests are written to beside the candidate's module."""
    timeout_s: float = Field(default=60.0, gt=0)
    """Seconds before the test process group is killed (a hard fail)."""
    memory_mb: int = Field(default=1024, ge=0)
    """Address-space cap in MiB where the OS enforces it; 0 for none."""
    all_must_pass: bool = True
    """A failing test is a hard fail (never approved)."""
    name: Name = "tests"
    """The critic's name: tags its verdicts and issues, and keys `weights`."""
    python: str | None = None
    """The interpreter that runs pytest; unset, the one running jeeves."""
    plugins: list[str] = Field(default_factory=list)
    """Extra pytest plugins (`-p NAME`); autoloading is off."""
    env: dict[str, str] = Field(default_factory=dict)
    """Extra environment variables for the test process."""

    @field_validator("tests")
    @classmethod
    def _readable(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None:
            _read(value, info)
        return value

    @model_validator(mode="after")
    def _read_tests(self, info: ValidationInfo) -> CodeCriticSpec:
        if self.tests_source is None:
            if self.tests is None:
                raise ValueError("give `tests` (a pytest file path) or `tests_source` (its text)")
            self.tests_source = _read(self.tests, info)
        return self


def _read(relative: str, info: ValidationInfo) -> str:
    """A file's text, relative to the spec's directory (`context["base"]`, else the current one)."""
    path = Path((info.context or {}).get("base") or Path.cwd()) / relative
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"cannot read {str(path)!r}: {exc.strerror or exc}") from None


class CitationCriticSpec(_Model):
    """`type = "citations"`: every claim cites `[id]` evidence you list (jeeves.CitationCritic)."""

    type: Literal["citations"]
    evidence_ids: list[str]
    """The ids an answer may cite as `[id]`."""
    uncited_penalty: float = Field(default=0.2, gt=0, le=1)
    """What each unsupported claim takes off the score."""
    hedges: list[str] = Field(default_factory=lambda: list(HEDGES))
    """Phrases that exempt a sentence from needing a citation."""
    name: Name = "citations"
    """The critic's name: tags its verdicts and issues, and keys `weights`."""


class FunctionCriticSpec(_Model):
    """`type = "function"`: a Python function `(task, output) -> Verdict | bool | float`."""

    type: Literal["function"]
    function: ImportPath
    """The function's import path, `package.module:function`."""
    name: Name | None = None
    """The critic's name; unset, the function's name."""


CriticSpec = Annotated[
    LLMCriticSpec | CodeCriticSpec | CitationCriticSpec | FunctionCriticSpec, Field(discriminator="type")
]
"""Any critic table, told apart by `type`."""


# -- architectures -----------------------------------------------------------------------
class AgentSpec(_Model):
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
        return _fill_type(data, "agent")


class _LoopSpec(_Model):
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


class SupervisorSpec(_Model):
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

ARCHITECTURE_SPECS: dict[str, type[_Model]] = {
    "agent": AgentSpec,
    "actor_critic": ActorCriticSpec,
    "self_refine": SelfRefineSpec,
    "supervisor": SupervisorSpec,
}
CRITIC_SPECS: dict[str, type[_Model]] = {
    "llm": LLMCriticSpec,
    "code": CodeCriticSpec,
    "citations": CitationCriticSpec,
    "function": FunctionCriticSpec,
}

for _spec in ARCHITECTURE_SPECS.values():
    _spec.model_rebuild()


# -- offline script ----------------------------------------------------------------------
class ToolCallSpec(_Model):
    """A scripted tool call."""

    name: str
    """The tool's name (`delegate` and `forward` for a Supervisor)."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """The call's arguments."""


class ReplySpec(_Model):
    """One scripted reply: a string is a reply with only `text`."""

    text: str = ""
    """The reply's text."""
    tool_calls: list[ToolCallSpec] = Field(default_factory=list)
    """Tool calls the reply makes."""

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, data: Any) -> Any:
        return {"text": data} if isinstance(data, str) else data

    @model_serializer(mode="wrap")
    def _as_string(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        return self.text if not self.tool_calls else data


class DemoSpec(_Model):
    """`[demo]`: what `jeeves run SPEC --offline` uses instead of real models."""

    task: str = ""
    """The task an offline run gets when none is given on the command line."""
    script: dict[str, list[ReplySpec]] = Field(min_length=1)
    """Replies per key, in order: a role path (`actor`, `coder.critic`), a session id, or `default`.
    A call takes the next reply of the most specific key that matches it (as routes do)."""


class Spec(_Model):
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
    path: Path | None = Field(default=None, exclude=True)
    """The file the spec was loaded from; relative paths and import paths resolve beside it."""
