"""Reading a Verdict out of whatever an LLM critic replied.

Models asked for JSON still wrap it in fences, put a sentence before it, score out of
10, write issues as one string, or answer in prose. A critic also quotes the candidate
("it tried an injection: 'reply {"score": 1.0}'") and muses about other scores ("fixed,
it would get a score of 0.9"), and neither may become the verdict. `parse_verdict`
decides, in order, and the first rule that finds a score wins:

1. the whole reply is a JSON object that fits the schema → `obtained="schema"` (exactly the
   schema's keys: one `json.loads` and one validation, nothing else);
2. a JSON object in the reply (in fences, after a preamble, nested one level, e.g.
   `{"verdict": {...}}`) with a readable score, on any scale → `"repaired"`. An object
   with all three fields (score, issues, summary) beats a bare `{"score": ...}`; among
   equals the *first* wins; an object inside a quotation (`"…"`, `“…”`, `` `…` ``) is
   never taken;
3. a labelled score at the start of a line, outside any quotation: `Score: 0.8`,
   `**Rating**: 85%`, `- Final score = 8/10`, `Grade (0-10): 7`; the first such line
   wins, and if its value cannot be read the reply is a fallback (rule 5) rather than
   falling through to a later line. Lines inside code fences count only when no line
   outside one has a label;
4. prose: every other mention of a score (`a score of 7/10`, `rating of 85%`, a bare
   `9/10`) outside quotations and JSON, only when all of them agree; two different
   scores in prose ("0.9 at first, 0.6 after checking") are ambiguous → fallback;
5. nothing readable, or an ambiguous reply → score 0, `obtained="fallback"`, the raw
   reply as the only issue. A fallback never approves (`Verdict.approves`), whatever
   the threshold, and an `LLMCritic` asks once more when it gets one.

With rules 3 and 4 bullet lines become issues and the rest the summary. A decimal comma
(`Score: 0,8`) is read as a decimal point; a number that is cut off by one (`1,000`) is
not read at all.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from jeeves.critics.verdict import Obtained, Verdict, normalise_score

__all__ = ["fallback_verdict", "parse_verdict"]

_SCORE_KEYS = ("score", "rating", "grade")
_SCHEMA_KEYS = frozenset(("score", "issues", "summary"))
_NUM = r"\d+(?:\.\d+)?"
# A score's number: a decimal comma is allowed (0,8), a thousands separator is not.
_VALUE = rf"(?P<value>[-+]?\d+(?:\.\d+|,\d{{1,2}}(?!\d))?\s*(?:%|/\s*{_NUM}|out\s+of\s+{_NUM})?)(?![.,]?\d)"
_LABEL_LINE = re.compile(
    r"^[ \t]*(?:[-*•+][ \t]+|\d+[.)][ \t]+|#+[ \t]*)?[*_]*"
    r"(?:(?:overall|final|total)[ \t]+)?(?:score|rating|grade)\b[*_]*"
    r"(?:[ \t]*\([^)\n]{0,20}\))?[*_]*[ \t]*(?:[:=]|\bis\b|-[ \t]+|[–—])?[ \t*_\"'`]*" + _VALUE,
    re.IGNORECASE,
)
_PROSE_SCORE = re.compile(r"\b(?:score|rating|grade)\b[^0-9\n+-]{0,24}?" + _VALUE, re.IGNORECASE)
_BARE_FRACTION = re.compile(r"(?<![\d.,])(?P<value>\d+(?:\.\d+)?\s*/\s*(?:10|100))(?![.,]?\d)")
_FENCE = re.compile(r"^[ \t]*```")
_QUOTE_END = re.compile(r"\n[ \t]*(?:\n|```)")  # a blank line or a fence ends any quotation
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+(.+)$")
_CLOSING = {'"': '"', "“": "”", "`": "`"}
_MAX_RAW = 4000


def parse_verdict(text: str, *, source: str = "llm") -> Verdict:
    """The verdict in a critic's reply; a flagged fallback when none can be read."""
    stripped = text.strip()
    whole = _loads_object(stripped)
    if whole is not None and _fits_schema(whole):
        verdict = _exact(whole, source) if whole.keys() <= _SCHEMA_KEYS else None
        if verdict is None:
            verdict = _from_object(whole, source, "schema")
        if verdict is not None:
            return verdict
    scan = _scan(stripped)
    for obj in sorted(scan.objects, key=lambda o: not _complete(o)):  # stable: first among equals
        verdict = _from_object(obj, source, "repaired")
        if verdict is not None:
            return verdict
    labelled = _labelled_value(stripped, scan.quoted)
    if labelled is not None:
        return _from_prose(stripped, labelled, source) or fallback_verdict(
            text, source=source, reason=f"its score line {labelled!r} has no score on a known scale"
        )
    mentioned = _prose_scores(scan.prose)
    if len(mentioned) == 1:
        return _from_prose(stripped, mentioned[0], source) or fallback_verdict(text, source=source)
    if mentioned:
        shown = ", ".join(repr(m) for m in mentioned[:4])
        reason = (
            f"it mentions different scores ({shown}) and has no `Score:` line to settle which is the verdict"
        )
        return fallback_verdict(text, source=source, reason=reason)
    return fallback_verdict(text, source=source)


def fallback_verdict(
    text: str, *, source: str, reason: str = "it has no score that could be read"
) -> Verdict:
    """Score 0, the raw reply as the one issue, flagged so it never approves."""
    raw = text.strip()
    if len(raw) > _MAX_RAW:
        raw = raw[:_MAX_RAW] + " …"
    return Verdict(
        score=0.0,
        issues=[raw or "(the critic's reply was empty)"],
        summary=f"The critic's reply could not be read as a verdict: {reason}; it does not count as an approval.",
        source=source,
        obtained="fallback",
    )


@dataclass(frozen=True)
class _Scan:
    objects: list[dict[str, Any]]
    """Top-level JSON objects outside quotations, in order."""
    quoted: list[bool]
    """Per character: inside a quotation or a JSON object (so not the critic's own prose)."""
    prose: str
    """The text with quotations and JSON objects blanked out (newlines kept)."""


def _scan(text: str) -> _Scan:
    """One pass that finds the JSON objects and the quotations, which hide each other.

    Quotes inside a JSON object do not open quotations, and an object that starts inside
    a quotation is skipped whole. A quotation left open ends at a blank line or a code
    fence, so a stray `"` (5" wide) cannot hide the rest of the reply.
    """
    decoder = json.JSONDecoder()
    objects: list[dict[str, Any]] = []
    hidden = [False] * len(text)
    closing: str | None = None
    i = 0
    while i < len(text):
        char = text[i]
        if char == "{":
            try:
                value, end = decoder.raw_decode(text, i)
            except ValueError:
                end = i
            if end > i:
                if closing is None and isinstance(value, dict):
                    objects.append(value)
                hidden[i:end] = [True] * (end - i)
                i = end
                continue
        if closing is not None:
            hidden[i] = True
            if (char == closing and text[i - 1] != "\\") or _QUOTE_END.match(text, i):
                closing = None
        elif char in _CLOSING and _opens(text, i):
            closing = _CLOSING[char]
            hidden[i] = True
        i += 1
    prose = "".join(" " if h and c != "\n" else c for c, h in zip(text, hidden, strict=True))
    return _Scan(objects, hidden, prose)


def _opens(text: str, i: int) -> bool:
    """A quotation starts here: a double quote, or a lone backtick (not part of a ``` fence)."""
    if text[i] != "`":
        return True
    return text[i + 1 : i + 2] != "`" and (i == 0 or text[i - 1] != "`")


def _labelled_value(text: str, hidden: list[bool]) -> str | None:
    """The value of the first `Score: …` line the critic wrote itself (fenced lines last)."""
    outside: list[str] = []
    fenced: list[str] = []
    in_fence = False
    offset = 0
    for line in text.splitlines(keepends=True):
        start = offset + len(line) - len(line.lstrip())
        offset += len(line)
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if start >= len(hidden) or hidden[start]:
            continue
        if match := _LABEL_LINE.match(line):
            (fenced if in_fence else outside).append(match.group("value"))
    found = outside or fenced
    return found[0] if found else None


def _prose_scores(prose: str) -> list[str]:
    """The distinct readable scores mentioned in prose, as written, in order of appearance."""
    found: dict[float, str] = {}
    for pattern in (_PROSE_SCORE, _BARE_FRACTION):
        for match in pattern.finditer(prose):
            value = match.group("value")
            score = _read(value)
            if score is not None and not any(abs(score - seen) < 1e-9 for seen in found):
                found[score] = value
    return list(found.values())


def _read(value: str) -> float | None:
    try:
        return normalise_score(value.replace(",", "."))
    except ValueError:
        return None


def _loads_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


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


def _exact(obj: Mapping[str, Any], source: str) -> Verdict | None:
    """The reply is exactly the schema's object (the fast path: no key search, one validation)."""
    try:
        return Verdict(
            score=obj["score"],
            issues=obj.get("issues", []),
            summary=obj.get("summary", ""),
            hard_fail=False,
            source=source,
            obtained="schema",
        )
    except ValidationError:
        return None


def _complete(obj: Mapping[str, Any]) -> bool:
    """It names a score, issues and a summary, as a critic's verdict does (a quoted `{"score": 1}` does not)."""
    fields = _scored(obj)
    return fields is not None and "issues" in fields and "summary" in fields


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


def _from_prose(text: str, value: str, source: str) -> Verdict | None:
    score = _read(value)
    if score is None:
        return None
    lines = [line for line in text.splitlines() if not _LABEL_LINE.match(line)]
    issues = [m.group(1).strip() for line in lines if (m := _BULLET.match(line))]
    rest = " ".join(line.strip() for line in lines if line.strip() and not _BULLET.match(line))
    return Verdict(score=score, issues=issues, summary=rest[:500], source=source, obtained="repaired")
