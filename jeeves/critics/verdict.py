"""The Verdict every critic returns, the score scale rule, and how verdicts combine.

Score rule (`normalise_score`), applied to every score a Verdict is given, so a critic
written in any scale ends up in [0, 1]:

| given                          | read as                 | example          |
|--------------------------------|-------------------------|------------------|
| a number in [0, 1]             | itself                  | `0.8` → 0.8, `1` → 1.0 |
| a number in (1, 10]            | out of 10               | `8` → 0.8        |
| a number in (10, 100]          | out of 100              | `85` → 0.85      |
| `"N%"`                         | percent                 | `"95%"` → 0.95   |
| `"N/D"` or `"N out of D"`      | the fraction, N ≤ D     | `"4 out of 5"` → 0.8 |
| numeric text                   | the number, as above    | `"7"` → 0.7      |

Anything else (negative, above 100, NaN, a bool, N > D) is an error, never clamped:
a score nobody can read must not pass for a low or a high one. The one ambiguity is
`1`, which is read as the top of the 0-1 scale; a critic that means "1 out of 10"
should say `"1/10"`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from jeeves.errors import UserError
from jeeves.events import AuditStats, Critique
from jeeves.findings import Finding

__all__ = [
    "EVALUATION_EVENT",
    "WEAK_EVIDENCE",
    "Evidence",
    "Obtained",
    "Verdict",
    "combine_verdicts",
    "computed_verdict",
    "critique_event",
    "evaluation_attributes",
    "evaluation_events",
    "normalise_score",
]

Evidence = Literal["task_tests", "model_tests", "judge", "citations", "function", "combined", "unknown"]
"""What a verdict rests on. task_tests: tests the task (or the user) gave, run against the
answer; model_tests: tests a model wrote for its own answer (weaker: they share the
answer's blind spots); judge: a model's opinion; citations: a check of cited sources;
function: your Python check; combined: several of these; unknown: not said (verdicts
recorded before this field existed)."""

WEAK_EVIDENCE: frozenset[str] = frozenset({"model_tests", "judge", "unknown"})
"""Evidence that cannot by itself tell a right answer from a wrong one it agrees with."""

EVALUATION_EVENT = "gen_ai.evaluation.result"
"""The OpenTelemetry GenAI semantic conventions' event for an evaluation's result."""

Obtained = Literal["schema", "repaired", "fallback", "function"]
"""How a verdict was obtained. schema: the model's reply fit the schema as it was;
repaired: a score was recovered from a reply that did not (fences, a preamble, another
scale, prose, a repair turn); fallback: no score could be read, or the reply named
several and none is clearly the verdict (never approves);
function: a Python critic (tests, citations, your function) computed it."""

_NUMBER = r"[-+]?\d+(?:\.\d+)?"
_PERCENT = re.compile(rf"({_NUMBER})\s*%")
_FRACTION = re.compile(rf"({_NUMBER})\s*(?:/|out\s+of)\s*({_NUMBER})", re.IGNORECASE)
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")
_ISSUE_KEYS = ("issue", "description", "message", "problem", "text")
_FINDING_KEYS = ("rule_id", "path", "severity", "fix")
# Least trustworthy first: a combination is as reliable as its weakest part.
_RELIABILITY: tuple[Obtained, ...] = ("fallback", "repaired", "schema", "function")


def _scale(x: float, given: object) -> float:
    if not math.isfinite(x) or x < 0 or x > 100:
        raise ValueError(f"score {given!r} is outside every known scale (0-1, 0-10, 0-100)")
    if x <= 1:
        return x
    return x / 10 if x <= 10 else x / 100


def normalise_score(value: object) -> float:
    """A score in [0, 1] from a number or text on a 0-1, 0-10, 0-100, percent or N/D scale.

    Raises ValueError for anything the module docstring's table does not cover.
    """
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"score must be a number or numeric text, got {value!r}")
    if isinstance(value, int | float):
        return _scale(float(value), value)
    text = value.strip()
    if match := _PERCENT.fullmatch(text):
        percent = float(match.group(1))
        if not 0 <= percent <= 100:
            raise ValueError(f"score {value!r} is not a percentage between 0% and 100%")
        return percent / 100
    if match := _FRACTION.fullmatch(text):
        num, den = float(match.group(1)), float(match.group(2))
        if den <= 0 or not 0 <= num <= den:
            raise ValueError(f"score {value!r} is not a fraction N/D with 0 <= N <= D")
        return num / den
    try:
        number = float(text)
    except ValueError:
        raise ValueError(f"score {value!r} is not a number, a percentage or a fraction") from None
    return _scale(number, value)


def _issue_text(item: object) -> str:
    if isinstance(item, Mapping):
        for key in _ISSUE_KEYS:
            if isinstance(item.get(key), str):
                return str(item[key])
        return json.dumps(item, ensure_ascii=False, default=str)
    return str(item)


def _finding(item: Mapping[str, Any]) -> Finding | None:
    if not any(item.get(key) is not None for key in _FINDING_KEYS):
        return None
    severity = str(item.get("severity") or "").lower() or None
    return Finding(
        message=_BULLET.sub("", _issue_text(item)).strip(),
        rule_id=_optional(item.get("rule_id")),
        path=_optional(item.get("path")),
        severity=severity if severity in ("error", "warning", "info") else None,
        fix=_optional(item.get("fix")),
    )


def _optional(value: object) -> str | None:
    return None if value is None else str(value)


class Verdict(BaseModel):
    """A critic's judgement of one candidate.

    Validation is tolerant where models are sloppy: a score on any scale of the module's
    table is normalised into [0, 1]; issues given as one string are split into lines
    (bullets stripped); issue objects keep their description. Verdicts are immutable;
    use `model_copy(update=...)` to change one.
    """

    model_config = ConfigDict(defer_build=True, frozen=True)

    score: float
    """In [0, 1]; 1 means nothing needs to change."""
    issues: list[str] = Field(default_factory=list)
    """Concrete problems, one per item, each saying what to change."""
    summary: str = ""
    hard_fail: bool = False
    """Blocks approval whatever the score: a syntax error, a timeout, a failing test, an unknown citation."""
    source: str = ""
    """Which critic gave it (`llm`, `tests`, `citations`, a function's name), or several joined by commas."""
    obtained: Obtained = "function"
    parts: list[Verdict] = Field(default_factory=list)
    """For a combined verdict: each critic's own verdict, in the order the critics were given."""
    findings: list[Finding] = Field(default_factory=list)
    """Structured issues (rule id, path, severity, fix), when the critic gave them; an issue
    given as an object with any of those keys becomes a finding, and its text an issue."""
    audit: AuditStats | None = None
    """A grounded audit's telemetry (invalid citations, uncited claims, duration), when it is one."""
    evidence: Evidence = "unknown"
    """What the verdict rests on (see `Evidence`); set by the critic that gave it."""

    @property
    def weak_evidence(self) -> bool:
        """True when it rests on a model's opinion or its own tests (see `WEAK_EVIDENCE`)."""
        return self.evidence in WEAK_EVIDENCE

    @model_validator(mode="before")
    @classmethod
    def _structured(cls, data: Any) -> Any:
        """Issue objects with a rule, path, severity or fix become findings too."""
        if type(data) is not dict and not isinstance(data, Mapping):
            return data
        issues, findings = data.get("issues"), data.get("findings")
        if findings is None and type(issues) is list and all(type(i) is str for i in issues):
            return data  # the common case, plain text issues: nothing to turn into findings
        if findings is None and isinstance(issues, Sequence) and not isinstance(issues, str):
            found = [_finding(item) for item in issues if isinstance(item, Mapping)]
            found = [f for f in found if f is not None]
            if found:
                return {**data, "findings": found}
        if not issues and findings:
            messages = [f.message if isinstance(f, Finding) else _issue_text(f) for f in findings]
            return {**data, "issues": messages}
        return data

    @field_validator("score", mode="before")
    @classmethod
    def _score(cls, value: object) -> float:
        return normalise_score(value)

    @field_validator("issues", mode="before")
    @classmethod
    def _issues(cls, value: object) -> list[str]:
        if value is None:
            return []
        if type(value) is list and all(type(i) is str for i in value):  # plain text issues: no ABC checks
            return [text for text in (_BULLET.sub("", i).strip() for i in value) if text]
        if isinstance(value, str):
            items: Sequence[object] = value.splitlines()
        elif isinstance(value, Sequence):
            items = value
        else:
            items = [value]
        cleaned = (_BULLET.sub("", _issue_text(item)).strip() for item in items)
        return [text for text in cleaned if text]

    @field_validator("summary", mode="before")
    @classmethod
    def _summary(cls, value: object) -> str:
        return "" if value is None else str(value).strip()

    def approves(self, threshold: float) -> bool:
        """Approved: score at or above `threshold`, no hard fail, and not a fallback."""
        return self.score >= threshold and not self.hard_fail and self.obtained != "fallback"

    def tagged_issues(self) -> list[str]:
        """Issues prefixed with their source, `[tests] test_add failed: ...` (parts' tags kept)."""
        if self.parts:
            return [issue for part in self.parts for issue in part.tagged_issues()]
        return [f"[{self.source}] {issue}" if self.source else issue for issue in self.issues]


def critique_event(
    session_id: str, round: int, verdict: Verdict, *, passed: bool, threshold: float | None = None
) -> Critique:
    """The `critique` event that reports `verdict` on round `round` of session `session_id`
    (`threshold`: the score that approves, when the loop has one)."""
    return Critique(
        session_id=session_id,
        round=round,
        score=verdict.score,
        passed=passed,
        hard_fail=verdict.hard_fail,
        issues=verdict.issues,
        summary=verdict.summary,
        obtained=verdict.obtained,
        source=verdict.source,
        findings=verdict.findings,
        audit=verdict.audit,
        threshold=threshold,
        evidence=verdict.evidence,
    )


def computed_verdict(
    source: str, score: float, issues: list[str], summary: str, *, hard_fail: bool
) -> Verdict:
    """A verdict a Python critic computed (`obtained="function"`)."""
    return Verdict(
        score=score, issues=issues, summary=summary, hard_fail=hard_fail, source=source, obtained="function"
    )


def combine_verdicts(verdicts: Sequence[Verdict], weights: Mapping[str, float] | None = None) -> Verdict:
    """One verdict from several critics' verdicts on the same candidate.

    - score: the minimum (without `weights`), or the weighted mean by source (with them);
    - hard_fail: if any part hard-fails, so a failing code critic blocks approval whatever
      an LLM critic said;
    - obtained: the least reliable part's (fallback < repaired < schema < function), so
      one unreadable LLM reply blocks approval too;
    - issues: every part's, tagged with its source (`[tests] ...`), in the critics' order.
    """
    if not verdicts:
        raise UserError("combine_verdicts needs at least one verdict.")
    if weights is None:
        score = min(v.score for v in verdicts)
    else:
        total = sum(weights[v.source] for v in verdicts)
        score = sum(weights[v.source] * v.score for v in verdicts) / total
    summaries = [f"{v.source}: {v.summary}" for v in verdicts if v.summary]
    kinds = {v.evidence for v in verdicts}
    evidence: Evidence = kinds.pop() if len(kinds) == 1 else "combined"
    return Verdict(
        score=score,
        issues=[issue for v in verdicts for issue in v.tagged_issues()],
        summary="\n".join(summaries),
        hard_fail=any(v.hard_fail for v in verdicts),
        source=",".join(v.source for v in verdicts),
        obtained=min((v.obtained for v in verdicts), key=_RELIABILITY.index),
        parts=list(verdicts),
        findings=[f for v in verdicts for f in v.findings],
        evidence=evidence,
    )


def verdict_reply_schema() -> dict[str, Any]:
    """The JSON schema an LLM critic is asked to reply with (score, issues, summary)."""
    return {
        "type": "object",
        "properties": {
            "score": {
                "type": "number",
                "minimum": 0,
                "maximum": 1,
                "description": "1 when nothing needs to change; lower the more must be fixed.",
            },
            "issues": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Each concrete problem, one per item, saying what to change.",
            },
            "summary": {"type": "string", "description": "One or two sentences."},
        },
        "required": ["score", "issues", "summary"],
        "additionalProperties": False,
    }


def evaluation_attributes(
    name: str, *, score: float | None, label: str | None, explanation: str, evaluated: str
) -> dict[str, str | float | bool]:
    """A `gen_ai.evaluation.result` event's attributes (GenAI semantic conventions): the
    evaluation's name, score and label, its explanation (content: kept only when a tracer
    captures content), and the jeeves session that was judged."""
    attributes: dict[str, str | float | bool] = {
        "gen_ai.evaluation.name": name,
        "jeeves.evaluated.session.id": evaluated,
    }
    if score is not None:
        attributes["gen_ai.evaluation.score.value"] = score
    if label is not None:
        attributes["gen_ai.evaluation.score.label"] = label
    if explanation:
        attributes["gen_ai.evaluation.explanation"] = explanation
    return attributes


def evaluation_events(
    verdict: Verdict, *, threshold: float, evaluated: str
) -> list[tuple[str, dict[str, str | float | bool]]]:
    """One `gen_ai.evaluation.result` per critic in `verdict` (each part of a combined one):
    label `pass` when that critic's verdict approves at `threshold`, else `fail`."""
    events = []
    for part in verdict.parts or [verdict]:
        explanation = part.summary or "; ".join(part.issues)
        attributes = evaluation_attributes(
            part.source or "critic",
            score=part.score,
            label="pass" if part.approves(threshold) else "fail",
            explanation=explanation,
            evaluated=evaluated,
        )
        attributes["jeeves.evaluation.obtained"] = part.obtained
        events.append((EVALUATION_EVENT, attributes))
    return events
