"""Stop conditions in a spec: `stop = { any = [ {max_tool_calls = 150}, {wall_clock_s = 1800} ] }`.

A condition is a table with exactly one key: a condition's name and its value
(`{max_rounds = 3}`, `{watchdog = ["STUCK", "MISLED"]}`), or `any` / `all` with a list of
conditions, which are `|` and `&` (`jeeves.stop`). Tables nest, so
`(MaxRounds(3) | ScoreAtLeast(0.9)) & MaxToolCalls(50)` is

    stop = { all = [ { any = [ {max_rounds = 3}, {score_at_least = 0.9} ] }, {max_tool_calls = 50} ] }

`when` names a function `(LoopState) -> bool` by import path (`StopWhen`); as a table it
also takes `name` (the stop reason) and `deterministic`. `build_stop` and `stop_spec` are
each other's inverse, so a spec dumps what it loaded.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any, Literal

from pydantic import Field, model_validator

from jeeves.errors import UserError
from jeeves.spec.parts import ImportPath, SpecModel
from jeeves.stop import (
    AllOf,
    AnyOf,
    BudgetUSD,
    MaxRounds,
    MaxTokens,
    MaxToolCalls,
    NoImprovement,
    ScoreAtLeast,
    StopCondition,
    StopWhen,
    TextMention,
    ToolMention,
    WallClock,
    WatchdogVerdict,
)

__all__ = ["STOP_KEYS", "StopSpec", "StopWhenSpec", "build_stop", "stop_spec"]

STOP_KEYS = (
    "any",
    "all",
    "max_rounds",
    "score_at_least",
    "no_improvement",
    "max_tool_calls",
    "max_tokens",
    "budget_usd",
    "wall_clock_s",
    "text_mention",
    "tool_mention",
    "watchdog",
    "when",
)
"""The keys a stop condition table may have (exactly one of them)."""


class StopWhenSpec(SpecModel):
    """`when = { function = "...", name = "...", deterministic = true }`: a function of the loop's state."""

    function: ImportPath
    """`package.module:function`, called with the LoopState; true stops."""
    name: str = Field(default="stop_when", min_length=1)
    """The stop reason it gives."""
    deterministic: bool = True
    """False when it reads what a replay cannot reproduce (a clock, a file): its decision is journaled."""


class StopSpec(SpecModel):
    """A stop condition table: exactly one key. `any`/`all` combine a list of conditions (`|`/`&`)."""

    any: list[StopSpec] | None = Field(default=None, min_length=1)
    """Stops when any of these does (`a | b`); the first that fires names the stop reason."""
    all: list[StopSpec] | None = Field(default=None, min_length=1)
    """Stops when all of these do (`a & b`)."""
    max_rounds: int | None = Field(default=None, ge=0)
    """`MaxRounds(n)`: stop once round n is done (round 0 is the first draft)."""
    score_at_least: float | None = Field(default=None, ge=0, le=1)
    """`ScoreAtLeast(score)`: stop when the round's score reaches it."""
    no_improvement: int | None = Field(default=None, ge=1)
    """`NoImprovement(k)`: stop after k rounds in a row without a better candidate."""
    max_tool_calls: int | None = Field(default=None, ge=0)
    """`MaxToolCalls(n)`: stop once n tool calls were made below the loop."""
    max_tokens: int | None = Field(default=None, ge=0)
    """`MaxTokens(n)`: stop once n tokens were used below the loop."""
    budget_usd: float | None = Field(default=None, ge=0)
    """`BudgetUSD(usd)`: stop once that many dollars were spent below the loop."""
    wall_clock_s: float | None = Field(default=None, ge=0)
    """`WallClock(seconds)`: stop once that long has passed (the decision is journaled)."""
    text_mention: str | None = Field(default=None, min_length=1)
    """`TextMention(text)`: stop when the round's output contains it."""
    tool_mention: str | None = Field(default=None, min_length=1)
    """`ToolMention(tool)`: stop once a tool of that name was called."""
    watchdog: list[Literal["PROGRESSING", "STUCK", "ACHIEVED", "MISLED"]] | None = Field(
        default=None, min_length=1
    )
    """`WatchdogVerdict(verdicts)`: stop when the latest watchdog verdict is one of these."""
    when: ImportPath | StopWhenSpec | None = None
    """`StopWhen(function)`: a function by import path, or a table with `function`, `name`, `deterministic`."""

    @model_validator(mode="before")
    @classmethod
    def _one_key(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            raise ValueError(
                f"a stop condition is a table with one key, e.g. {{max_rounds = 3}} or "
                f"{{any = [{{max_tool_calls = 150}}, {{wall_clock_s = 1800}}]}}; got {data!r}"
            )
        unknown = [k for k in data if k not in STOP_KEYS]
        if unknown:
            close = difflib.get_close_matches(str(unknown[0]), STOP_KEYS, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ValueError(
                f"unknown stop condition {unknown[0]!r}; {hint}the conditions are: {', '.join(STOP_KEYS)}"
            )
        if len(data) != 1:
            shown = ", ".join(sorted(data)) or "none"
            raise ValueError(
                f"a stop condition table has exactly one key, got {shown}; combine several with "
                f"{{any = [...]}} (either) or {{all = [...]}} (both)"
            )
        return data


def build_stop(spec: StopSpec, imported: Callable[[str], Any]) -> StopCondition:
    """The condition a stop table describes; `imported(ref)` resolves a `when` function."""
    key, value = next((k, v) for k in STOP_KEYS if (v := getattr(spec, k)) is not None)
    if key in ("any", "all"):
        parts = [build_stop(s, imported) for s in value]
        return AnyOf(*parts) if key == "any" else AllOf(*parts)
    if key == "when":
        when = value if isinstance(value, StopWhenSpec) else StopWhenSpec(function=value)
        return StopWhen(imported(when.function), name=when.name, deterministic=when.deterministic)
    if key == "watchdog":
        return WatchdogVerdict(tuple(value))
    return _SIMPLE[key](value)


_SIMPLE: dict[str, Callable[[Any], StopCondition]] = {
    "max_rounds": MaxRounds,
    "score_at_least": ScoreAtLeast,
    "no_improvement": NoImprovement,
    "max_tool_calls": MaxToolCalls,
    "max_tokens": MaxTokens,
    "budget_usd": BudgetUSD,
    "wall_clock_s": WallClock,
    "text_mention": TextMention,
    "tool_mention": ToolMention,
}
_FIELDS: dict[type, tuple[str, str]] = {
    MaxRounds: ("max_rounds", "n"),
    ScoreAtLeast: ("score_at_least", "score"),
    NoImprovement: ("no_improvement", "k"),
    MaxToolCalls: ("max_tool_calls", "n"),
    MaxTokens: ("max_tokens", "n"),
    BudgetUSD: ("budget_usd", "usd"),
    WallClock: ("wall_clock_s", "seconds"),
    TextMention: ("text_mention", "text"),
    ToolMention: ("tool_mention", "tool"),
}


def stop_spec(condition: StopCondition, ref: Callable[[object, str], str]) -> StopSpec:
    """The stop table of a condition built in code; `ref(function, what)` names a `StopWhen` function."""
    kind = type(condition)
    if isinstance(condition, AnyOf | AllOf) and kind in (AnyOf, AllOf):
        parts = [stop_spec(c, ref) for c in condition.conditions]
        return StopSpec(any=parts) if kind is AnyOf else StopSpec(all=parts)
    if kind is WatchdogVerdict:
        assert isinstance(condition, WatchdogVerdict)
        return StopSpec.model_validate({"watchdog": list(condition.verdicts)})
    if kind is StopWhen:
        assert isinstance(condition, StopWhen)
        function = ref(condition.function, "stop function")
        if (condition.name, condition.deterministic) == ("stop_when", True):
            return StopSpec(when=function)
        when = StopWhenSpec(function=function, name=condition.name, deterministic=condition.deterministic)
        return StopSpec(when=when)
    if kind in _FIELDS:
        key, attribute = _FIELDS[kind]
        return StopSpec.model_validate({key: getattr(condition, attribute)})
    raise UserError(
        f"Cannot dump the stop condition {condition!r}: a spec knows the jeeves.stop conditions "
        f"({', '.join(STOP_KEYS[2:])}) and their any/all combinations, not subclasses."
    )


StopSpec.model_rebuild()
