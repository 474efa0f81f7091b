"""A critic version as a TOML file, for `jeeves rejudge JOURNAL --critic FILE`.

```toml
threshold = 0.9                     # the score evaluators (and loop candidates) must reach
hard = ["policy"]                   # evaluators whose failure fails the score
checks = ["refund_rules:no_weekend_refunds"]   # extra verify checks, (plan, spec) -> verdict

[decision]                          # the DecisionSpec plans are verified against
required_outputs = ["refund_amount", "refund_reason_class"]
max_steps = 6
max_plan_tokens = 4000
safety_mode = "destructive"

[surface]                           # approval modes over the recorded ones
issue_refund = "destructive"

[[evaluators]]                      # a critic table, as in architecture specs
type = "function"
function = "refund_rules:policy_v2"
name = "policy"

[[evaluators]]                      # or the verdict the run recorded for this evaluator
type = "recorded"
name = "llm"

[critic]                            # what a critic loop's rounds are judged by
type = "function"
function = "refund_rules:strict_review"
```

Every key is optional: what is left out keeps what each run recorded. Critic tables are the
architecture specs' own (`jeeves.spec.parts`), built by the same builder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, field_validator

from jeeves._run.source import import_object
from jeeves.agent.tools import ApprovalMode
from jeeves.critics import CombinedCritic, Critic
from jeeves.critics.plan import PlanCheck
from jeeves.errors import UserError
from jeeves.evals.rejudge import CriticVersion, Evaluator
from jeeves.spec.build import build_critics, importable
from jeeves.spec.load import format_errors
from jeeves.spec.parts import (
    CitationCriticSpec,
    CodeCriticSpec,
    CriticSpec,
    DecisionTable,
    FunctionCriticSpec,
    ImportPath,
    LLMCriticSpec,
    Name,
    SpecModel,
)
from jeeves.spec.toml import read_toml

__all__ = ["CriticVersionSpec", "RecordedEvaluatorSpec", "load_critic_version"]


class RecordedEvaluatorSpec(SpecModel):
    """`type = "recorded"`: reuse the verdict the run recorded for the evaluator of this name."""

    type: Literal["recorded"]
    name: Name
    """The recorded evaluator's name."""


EvaluatorSpec = Annotated[
    LLMCriticSpec | CodeCriticSpec | CitationCriticSpec | FunctionCriticSpec | RecordedEvaluatorSpec,
    Field(discriminator="type"),
]


class CriticVersionSpec(SpecModel):
    """A critic version file (module docstring)."""

    threshold: float | None = Field(default=None, ge=0, le=1)
    """The score each evaluator, and a loop's candidate, must reach; unset, as recorded (0.8 for loops)."""
    hard: list[Name] = Field(default_factory=list)
    """Evaluators whose failure fails the score whatever the others say."""
    checks: list[ImportPath] = Field(default_factory=list)
    """Extra verify checks by import path: functions `(plan, spec) -> VerifyVerdict | None`."""
    decision: DecisionTable | None = None
    """`[decision]`; unset, each plan keeps its recorded verify verdict."""
    surface: dict[str, ApprovalMode] = Field(default_factory=dict)
    """`[surface]`: approval modes by tool or worker, over the recorded ones."""
    evaluators: list[EvaluatorSpec] | None = None
    """`[[evaluators]]`; unset, the recorded evaluations are scored again."""
    critic: list[CriticSpec] = Field(default_factory=list)
    """`[critic]` (or `[[critic]]`, combined): judges critic-loop rounds; unset, they are not judged."""

    @field_validator("critic", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, dict) else value


def load_critic_version(path: str | Path) -> CriticVersion:
    """Read a critic version file; a UserError names the file and every bad key."""
    file = Path(path)
    data = read_toml(file, "critic")
    try:
        spec = CriticVersionSpec.model_validate(data, context={"base": file.resolve().parent})
    except ValidationError as exc:
        raise UserError(format_errors(str(file), exc.errors(), data)) from None
    return _version(spec, file)


def _version(spec: CriticVersionSpec, file: Path) -> CriticVersion:
    where = str(file)
    judges = [e for e in spec.evaluators or [] if not isinstance(e, RecordedEvaluatorSpec)]
    built = iter(build_critics(judges, where=where, path=file, key="evaluators"))
    evaluators = None
    if spec.evaluators is not None:
        evaluators = []
        for e in spec.evaluators:
            critic: Critic | None = None if isinstance(e, RecordedEvaluatorSpec) else next(built)
            name = critic.name if critic is not None else e.name or ""
            evaluators.append(Evaluator(name=name, critic=critic, hard=name in spec.hard))
        unknown = sorted(set(spec.hard) - {e.name for e in evaluators})
        if unknown:
            raise UserError(
                f"{where}: hard={unknown!r} names no evaluator; name one of {[e.name for e in evaluators]!r}."
            )
    loop = build_critics(spec.critic, where=where, path=file, key="critic")
    return CriticVersion(
        decision=spec.decision.build() if spec.decision else None,
        checks=_checks(spec.checks, file),
        surface=spec.surface,
        evaluators=evaluators,
        threshold=spec.threshold,
        critic=(loop[0] if len(loop) == 1 else CombinedCritic(loop)) if loop else None,
    )


def _checks(refs: list[str], file: Path) -> list[PlanCheck]:
    checks: list[PlanCheck] = []
    with importable(file):
        for ref in refs:
            found = import_object(ref)
            if not callable(found):
                raise UserError(
                    f"{file}: checks: {ref!r} is {found!r:.80}, not a function (plan, spec) -> verdict."
                )
            checks.append(found)
    return checks
