"""jeevesagent's critique: `CriticOutput`, its parser, and the critic that reads replies with it.

jeevesagent reads a critic's reply in three tries: a JSON object (fences stripped), its
`score` clamped into [0, 1] (`1.5` is 1.0, not 1.5 on a 0-10 scale as jeeves' own parser
reads it); else a `score: 0.42` anywhere in prose, the whole text becoming the one issue
(so the refine prompt still carries the critique); else score 0.0 with the text as the
issue. This module does the same, so a jeevesagent critic scores as it did there. Only
this layer reads critiques this way: jeeves' own critics keep jeeves' parser.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from jeeves._run import model_calls
from jeeves._run.context import Caller, Context
from jeeves.critics import Review, Verdict
from jeeves.critics.verdict import Obtained
from jeeves.errors import MaxTurnsExceeded
from jeeves.events import OutputRetrying
from jeeves.messages import Message, ModelRequest
from jeeves.models.base import Route

__all__ = ["CriticOutput", "JeevesagentCritic", "parse_critique"]

_SCORE = re.compile(r"score\s*[:=]\s*([0-9]*\.?[0-9]+)", re.IGNORECASE)


class CriticOutput(Verdict):
    """jeevesagent's critic verdict (`issues`, `score`, `summary`), as a jeeves `Verdict`.

    It is a Verdict, so a function critic may return it and everything that reads
    verdicts reads it. As every Verdict it is immutable (`model_copy(update=...)` makes a
    changed one); `score` defaults to 0.0 as in jeevesagent.
    """

    score: float = 0.0


def _clamped(value: object) -> float:
    return max(0.0, min(1.0, float(value)))  # type: ignore[arg-type]


def _unfenced(text: str) -> str:
    cleaned = text.strip()
    if cleaned.startswith("```"):
        lines = cleaned.split("\n")[1:]
        while lines and lines[-1].strip().startswith("```"):
            lines = lines[:-1]
        cleaned = "\n".join(lines).strip()
    return cleaned


def _from_json(parsed: Mapping[str, Any]) -> CriticOutput | None:
    try:
        issues = [str(i) for i in (parsed.get("issues", []) or []) if i]
        score = _clamped(parsed.get("score", 0.0))
        summary = str(parsed.get("summary", ""))
    except (TypeError, ValueError):
        return None
    return CriticOutput(issues=issues, score=score, summary=summary, obtained="schema")


def parse_critique(text: str) -> CriticOutput:
    """A critic's reply read as jeevesagent reads it (module docstring).

    `obtained` says which try read it: `schema` (a JSON object), `repaired` (a score in
    prose), `fallback` (no score: 0.0, and a fallback never approves).
    """
    try:
        parsed: object = json.loads(_unfenced(text))
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        found = _from_json(parsed)
        if found is not None:
            return found
    match = _SCORE.search(text)
    score, obtained = 0.0, "fallback"
    if match is not None:
        try:
            score, obtained = _clamped(match.group(1)), "repaired"
        except ValueError:
            pass
    issues = [text.strip()] if text.strip() else []
    return CriticOutput(issues=issues, score=score, summary="", obtained=_obtained(obtained))


def _obtained(value: str) -> Obtained:
    return "repaired" if value == "repaired" else "fallback"


class JeevesagentCritic:
    """A critic Agent as jeevesagent runs it: its instructions as the system prompt, the
    critique prompt as the user message, the reply read by `parse_critique`.

    `max_turns` is the Agent's: 0 stops the review before any call (MaxTurnsExceeded,
    which the compat ActorCritic reports as an interruption). An empty reply is asked
    again once (jeeves' behaviour: an empty reply is a failed call, not a review).
    """

    kind = "llm_critic"

    def __init__(
        self,
        instructions: str,
        *,
        name: str,
        route: Route | None,
        params: Mapping[str, Any],
        max_turns: int,
    ) -> None:
        self.instructions, self.name, self.route = instructions, name, route
        self.params, self.max_turns = dict(params), max_turns

    def describe_model(self, ctx: Context) -> str:
        return (self.route or model_calls.route(ctx)).model

    def model_callers(self, path: tuple[str, ...], routed: tuple[str, ...]) -> list[Caller]:
        return [Caller(path, None if self.route is not None else routed)]

    async def review(self, ctx: Context, review: Review) -> Verdict:
        if self.max_turns < 1:
            raise MaxTurnsExceeded(
                f"The critic in session {ctx.session_id!r} has max_turns={self.max_turns}: no model call allowed."
            )
        messages = [Message.system(self.instructions), Message.user(review.prompt)]
        request = ModelRequest(messages=messages, params=self.params)
        response = await ctx.call_model(request, route=self.route)
        if not response.text.strip():
            await ctx.emit(OutputRetrying(session_id=ctx.session_id, error="the critic's reply was empty"))
            response = await ctx.call_model(request, route=self.route)
        return parse_critique(response.text).model_copy(update={"source": self.name})
