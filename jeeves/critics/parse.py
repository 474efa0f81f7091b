"""Reading a Verdict out of whatever an LLM critic replied.

Models asked for JSON still wrap it in fences, put a sentence before it, score out of
10, write issues as one string, or answer in prose. `parse_verdict` tries, in order:

1. the whole reply as a JSON object that fits the schema → `obtained="schema"`;
2. the last JSON object anywhere in the reply (in fences, after a preamble, nested one
   level, e.g. `{"verdict": {...}}`) with a readable score, on any scale → `"repaired"`;
3. prose: the last `score`/`rating`/`grade` followed by a number, percentage or
   fraction (`Score: 0.8`, `rating of 7/10`, `**Grade**: 85%`), or else the last bare
   `N/10` or `N/100`; bullet lines become issues → `"repaired"`;
4. nothing readable → score 0, `obtained="fallback"`, the raw reply as the only issue.
   A fallback never approves (`Verdict.approves`), whatever the threshold.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import ValidationError

from jeeves.critics.verdict import Obtained, Verdict, normalise_score

__all__ = ["fallback_verdict", "parse_verdict"]

_SCORE_KEYS = ("score", "rating", "grade")
_NUM = r"[-+]?\d+(?:\.\d+)?"
_PROSE_SCORE = re.compile(
    rf"\b(?:score|rating|grade)\b[^0-9\n+-]{{0,24}}?({_NUM}\s*(?:%|/\s*{_NUM}|out\s+of\s+{_NUM})?)",
    re.IGNORECASE,
)
_BARE_FRACTION = re.compile(rf"(?<![\d.])({_NUM}\s*/\s*(?:10|100))(?![\d.])")
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+(.+)$")
_MAX_RAW = 4000


def parse_verdict(text: str, *, source: str = "llm") -> Verdict:
    """The verdict in a critic's reply; a flagged fallback when none can be read."""
    stripped = text.strip()
    whole = _loads_object(stripped)
    if whole is not None and _fits_schema(whole):
        verdict = _from_object(whole, source, "schema")
        if verdict is not None:
            return verdict
    found: Verdict | None = None
    for obj in _json_objects(stripped):
        found = _from_object(obj, source, "repaired") or found
    if found is not None:
        return found
    return _from_prose(stripped, source) or fallback_verdict(text, source=source)


def fallback_verdict(text: str, *, source: str) -> Verdict:
    """Score 0, the raw reply as the one issue, flagged so it never approves."""
    raw = text.strip()
    if len(raw) > _MAX_RAW:
        raw = raw[:_MAX_RAW] + " …"
    return Verdict(
        score=0.0,
        issues=[raw or "(the critic's reply was empty)"],
        summary="The critic's reply had no score that could be read; it does not count as an approval.",
        source=source,
        obtained="fallback",
    )


def _loads_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _json_objects(text: str) -> Iterator[dict[str, Any]]:
    """Every top-level JSON object in `text`, in order (objects nested in them are not yielded)."""
    decoder = json.JSONDecoder()
    position = text.find("{")
    while position >= 0:
        try:
            value, end = decoder.raw_decode(text, position)
        except ValueError:
            position = text.find("{", position + 1)
            continue
        if isinstance(value, dict):
            yield value
        position = text.find("{", end)


def _fits_schema(obj: Mapping[str, Any]) -> bool:
    score = obj.get("score")
    issues = obj.get("issues", [])
    return (
        isinstance(score, int | float)
        and not isinstance(score, bool)
        and 0 <= score <= 1
        and isinstance(issues, list)
        and all(isinstance(i, str) for i in issues)
        and isinstance(obj.get("summary", ""), str)
    )


def _scored(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The object (or a dict one level down) that holds a score key."""
    lowered = {str(k).lower(): v for k, v in obj.items()}
    if any(k in lowered for k in _SCORE_KEYS):
        return lowered
    for value in obj.values():
        if isinstance(value, Mapping):
            inner = {str(k).lower(): v for k, v in value.items()}
            if any(k in inner for k in _SCORE_KEYS):
                return inner
    return None


def _from_object(obj: Mapping[str, Any], source: str, obtained: Obtained) -> Verdict | None:
    fields = _scored(obj)
    if fields is None:
        return None
    score = next(fields[k] for k in _SCORE_KEYS if k in fields)
    issues: Any = next((fields[k] for k in ("issues", "problems", "feedback") if k in fields), [])
    summary = next((fields[k] for k in ("summary", "comment", "explanation") if k in fields), "")
    try:
        return Verdict(
            score=score,
            issues=issues,
            summary=summary if isinstance(summary, str) else json.dumps(summary, default=str),
            hard_fail=fields.get("hard_fail") is True,
            source=source,
            obtained=obtained,
        )
    except ValidationError:
        return None


def _from_prose(text: str, source: str) -> Verdict | None:
    matches = _PROSE_SCORE.findall(text) or _BARE_FRACTION.findall(text)
    for candidate in reversed(matches):
        try:
            score = normalise_score(candidate)
        except ValueError:
            continue
        issues = [m.group(1).strip() for line in text.splitlines() if (m := _BULLET.match(line))]
        rest = " ".join(
            line.strip() for line in text.splitlines() if line.strip() and not _BULLET.match(line)
        )
        return Verdict(score=score, issues=issues, summary=rest[:500], source=source, obtained="repaired")
    return None
