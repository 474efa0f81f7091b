"""The pieces spec tables are made of: names, import paths, routes, critics, the offline script.

`jeeves.spec.models` builds the architecture tables from these. Every model forbids
unknown keys and validates strictly (TOML gives exact types, so nothing is coerced).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from jeeves.agent.tools import ApprovalMode
from jeeves.budget import Budget
from jeeves.critics.citations import HEDGES
from jeeves.critics.llm import REVIEW_INSTRUCTIONS
from jeeves.critics.plan import DecisionSpec
from jeeves.models.base import DEFAULT_TIMEOUT_S

__all__ = [
    "CRITIC_SPECS",
    "CitationCriticSpec",
    "CodeCriticSpec",
    "CriticSpec",
    "DecisionTable",
    "DemoSpec",
    "FunctionCriticSpec",
    "ImportPath",
    "LLMCriticSpec",
    "Name",
    "ReplySpec",
    "RouteKey",
    "RouteSpec",
    "SpecModel",
    "StepBudgetTable",
    "ToolCallSpec",
    "fill_type",
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


class SpecModel(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, use_attribute_docstrings=True)


def fill_type(data: Any, tag: str) -> Any:
    if isinstance(data, dict) and "type" not in data:
        return {"type": tag, **data}
    return data


# -- routes ------------------------------------------------------------------------------
class RouteSpec(SpecModel):
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
    timeout_s: float = Field(default=DEFAULT_TIMEOUT_S, gt=0)
    """Longest wait in seconds for the provider per attempt: for the reply, or streamed, for each chunk."""

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, data: Any) -> Any:
        return {"model": data} if isinstance(data, str) else data

    @model_serializer(mode="wrap")
    def _as_string(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        return data["model"] if isinstance(data, dict) and set(data) == {"model"} else data


# -- critics -----------------------------------------------------------------------------
class LLMCriticSpec(SpecModel):
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


class CodeCriticSpec(SpecModel):
    """`type = "code"`: run the candidate's Python against a pytest file (jeeves.CodeCritic)."""

    type: Literal["code"]
    allow_outside: bool = False
    """Let `tests` name a file outside the spec's folder (`../shared/test_x.py`, an absolute path)."""
    tests: str | None = None
    """Path of the pytest file, relative to the spec file and inside its folder. Give this or `tests_source`."""
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
            _read(value, info, allow_outside=info.data.get("allow_outside") is True)
        return value

    @model_validator(mode="after")
    def _read_tests(self, info: ValidationInfo) -> CodeCriticSpec:
        if self.tests_source is None:
            if self.tests is None:
                raise ValueError("give `tests` (a pytest file path) or `tests_source` (its text)")
            self.tests_source = _read(self.tests, info, allow_outside=self.allow_outside)
        return self


def _read(relative: str, info: ValidationInfo, *, allow_outside: bool) -> str:
    """A pytest file's text, relative to the spec's folder (`context["base"]`, else the current one).

    A spec is trusted like code (its import paths run), but a path that leaves the spec's
    folder (`..`, an absolute path, a symlink out) is refused unless the table says
    `allow_outside = true`, so a spec cannot quietly reach into the machine. Errors name
    the path, never the file's contents: a spec's error may be shown to someone else.
    """
    base = Path((info.context or {}).get("base") or Path.cwd()).resolve()
    path = (base / relative).resolve()
    if not allow_outside and not path.is_relative_to(base):
        raise ValueError(
            f"{relative!r} is outside the spec's folder {str(base)!r}; move the file beside the spec, "
            f"or set `allow_outside = true` in this critic's table to read it anyway"
        )
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"cannot read {str(path)!r}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ValueError(f"{str(path)!r} is not UTF-8 text; point `tests` at a pytest file") from None
    if "def test" not in text:
        raise ValueError(
            f"{str(path)!r} holds no pytest test (no `def test...`); point `tests` at a pytest file"
        )
    return text


class CitationCriticSpec(SpecModel):
    """`type = "citations"`: every claim cites `[id]` evidence you list (jeeves.CitationCritic)."""

    type: Literal["citations"]
    evidence_ids: list[str]
    """The ids an answer may cite as `[id]`."""
    uncited_penalty: float = Field(default=0.2, gt=0, le=1)
    """What each unsupported claim takes off the score."""
    hedges: list[str] = Field(default_factory=lambda: list(HEDGES))
    """Phrases that exempt a sentence from needing a citation."""
    require_citations: bool = True
    """An answer that cites none of the evidence is a hard fail; false makes citations optional."""
    name: Name = "citations"
    """The critic's name: tags its verdicts and issues, and keys `weights`."""


class FunctionCriticSpec(SpecModel):
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


class DecisionTable(SpecModel):
    """`[decision]`: the DecisionSpec a plan is verified against."""

    required_outputs: list[str] = Field(default_factory=list)
    """Outputs the plan must declare."""
    max_steps: int = Field(default=12, ge=1)
    """Most steps a plan may have."""
    max_plan_tokens: int = Field(default=8000, ge=0)
    """Most estimated tokens a plan may add up to; 0 for no limit."""
    safety_mode: ApprovalMode = "destructive"
    """The highest approval mode a step may have."""
    requires_evidence: dict[str, list[str]] = Field(default_factory=dict)
    """Evidence classes by tool or worker name, required of every step that uses it."""

    def build(self) -> DecisionSpec:
        return DecisionSpec(
            required_outputs=self.required_outputs,
            max_steps=self.max_steps,
            max_plan_tokens=self.max_plan_tokens or None,
            safety_mode=self.safety_mode,
            requires_evidence=self.requires_evidence,
        )


class StepBudgetTable(SpecModel):
    """`[step_budget]` (plan_execute): each executed step's own slice of the run's budget; a
    step its slice stops fails with `budget_exceeded` and the planner replans. Leave a key out
    for no limit of the slice's own on that axis."""

    max_tokens: int | None = Field(default=None, ge=0)
    """Input plus output tokens a step may spend."""
    max_usd: float | None = Field(default=None, ge=0)
    """USD a step may spend."""
    max_model_calls: int | None = Field(default=None, ge=0)
    """Model calls a step may make."""
    deadline_s: float | None = Field(default=None, ge=0)
    """Seconds a step may run."""

    def build(self) -> Budget:
        return Budget(**self.model_dump())


# -- offline script ----------------------------------------------------------------------
class ToolCallSpec(SpecModel):
    """A scripted tool call."""

    name: str
    """The tool's name (`delegate` and `forward` for a Supervisor)."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """The call's arguments."""


class ReplySpec(SpecModel):
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


class DemoSpec(SpecModel):
    """`[demo]`: what `jeeves run SPEC --offline` uses instead of real models."""

    task: str = ""
    """The task an offline run gets when none is given on the command line."""
    script: dict[str, list[ReplySpec]] = Field(min_length=1)
    """Replies per key, in order: a role path (`actor`, `coder.critic`), a session id, or `default`.
    A call takes the next reply of the most specific key that matches it (as routes do)."""


CRITIC_SPECS: dict[str, type[SpecModel]] = {
    "llm": LLMCriticSpec,
    "code": CodeCriticSpec,
    "citations": CitationCriticSpec,
    "function": FunctionCriticSpec,
}
"""Critic tables by `type`."""
