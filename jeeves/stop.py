"""Stop conditions: small objects combined with `|` and `&`, checked on a loop's state.

```python
stop = (MaxRounds(3) | ScoreAtLeast(0.9)) & MaxToolCalls(50)
stop.check(state)  # None, or the name of what fired: "max_rounds", "score_at_least", ...
```

A loop (ActorCritic, SelfRefine) builds a `LoopState` after each round and asks its
condition; the name that comes back is the loop's `stop_reason`, so a result always says
which condition ended it. `a | b` fires when either fires (the first, in the order written,
names it); `a & b` fires when both do (named `"a & b"`).

Replay: every condition but `WallClock` reads only what the loop computed from its
children's outputs and the tree's usage, which a replay reproduces, so a replay stops where
the recording did. `WallClock` reads the clock: a condition that contains one is
`deterministic=False`, and loops journal its decision as a step, so a replay is served the
recorded decision instead of reading the clock again. A `StopWhen` function is taken to be
deterministic unless it says otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from jeeves.errors import UserError

__all__ = [
    "AllOf",
    "AnyOf",
    "BudgetUSD",
    "LoopState",
    "MaxRounds",
    "MaxTokens",
    "MaxToolCalls",
    "NoImprovement",
    "ScoreAtLeast",
    "StopCondition",
    "StopWhen",
    "TextMention",
    "ToolMention",
    "WallClock",
    "WatchdogVerdict",
]


@dataclass(frozen=True)
class LoopState:
    """What a loop knows after a round (or a step), as stop conditions read it."""

    round: int = 0
    """The round just finished: 0 is the first draft, N the Nth refinement (or step)."""
    score: float | None = None
    """That round's score, when it was judged."""
    best_score: float | None = None
    """The best score so far."""
    stale: int = 0
    """Rounds in a row without a strictly better candidate."""
    passed: bool = False
    """That round's candidate was approved."""
    text: str = ""
    """That round's output text."""
    tool_calls: int = 0
    """Tool calls made so far in the loop's subtree."""
    tools_called: tuple[str, ...] = ()
    """Their names, in the order they were called."""
    tokens: int = 0
    """Tokens used so far in the loop's subtree (replayed calls included, so a replay agrees)."""
    usd: float = 0.0
    """USD spent so far in the loop's subtree, by the same rule."""
    model_calls: int = 0
    elapsed_s: float = 0.0
    """Wall-clock seconds since the loop started (read only by `WallClock`)."""
    watchdog: str | None = None
    """The latest watchdog verdict (PROGRESSING, STUCK, ACHIEVED, MISLED), if a watchdog runs."""


class StopCondition:
    """A condition on `LoopState`. Subclasses set `name` and implement `fired`."""

    name: str = "stop"
    """The stop reason this condition gives when it fires."""
    deterministic: bool = True
    """False when it reads something a replay cannot reproduce (the clock)."""
    bounded: bool = False
    """True when it is sure to fire eventually (it caps the rounds or the time), so a loop ends."""

    def fired(self, state: LoopState) -> bool:
        raise NotImplementedError

    def check(self, state: LoopState) -> str | None:
        """The stop reason if the condition holds for `state`, else None."""
        return self.name if self.fired(state) else None

    def __or__(self, other: StopCondition) -> AnyOf:
        return AnyOf(*_parts(self, AnyOf), *_parts(_condition(other, "|"), AnyOf))

    def __and__(self, other: StopCondition) -> AllOf:
        return AllOf(*_parts(self, AllOf), *_parts(_condition(other, "&"), AllOf))


def _condition(value: object, op: str) -> StopCondition:
    if not isinstance(value, StopCondition):
        raise UserError(
            f"Cannot combine a stop condition with {value!r} using {op!r}; combine conditions such as "
            f"MaxRounds(3) {op} ScoreAtLeast(0.9)."
        )
    return value


def _parts(condition: StopCondition, kind: type[AnyOf | AllOf]) -> tuple[StopCondition, ...]:
    return condition.conditions if isinstance(condition, kind) else (condition,)


class AnyOf(StopCondition):
    """Fires when any of its conditions fires; named by the first that does, in order."""

    def __init__(self, *conditions: StopCondition) -> None:
        if not conditions:
            raise UserError("AnyOf needs at least one stop condition.")
        self.conditions = tuple(_condition(c, "|") for c in conditions)
        self.deterministic = all(c.deterministic for c in self.conditions)
        self.bounded = any(c.bounded for c in self.conditions)
        self.name = " | ".join(c.name for c in self.conditions)

    def fired(self, state: LoopState) -> bool:
        return self.check(state) is not None

    def check(self, state: LoopState) -> str | None:
        for condition in self.conditions:
            reason = condition.check(state)
            if reason is not None:
                return reason
        return None

    def __eq__(self, other: object) -> bool:
        return type(other) is AnyOf and other.conditions == self.conditions

    def __hash__(self) -> int:
        return hash((AnyOf, self.conditions))

    def __repr__(self) -> str:
        return " | ".join(_wrapped(c) for c in self.conditions)


class AllOf(StopCondition):
    """Fires when every one of its conditions fires; named `"a & b"` by what fired."""

    def __init__(self, *conditions: StopCondition) -> None:
        if not conditions:
            raise UserError("AllOf needs at least one stop condition.")
        self.conditions = tuple(_condition(c, "&") for c in conditions)
        self.deterministic = all(c.deterministic for c in self.conditions)
        self.bounded = all(c.bounded for c in self.conditions)
        self.name = " & ".join(c.name for c in self.conditions)

    def fired(self, state: LoopState) -> bool:
        return self.check(state) is not None

    def check(self, state: LoopState) -> str | None:
        reasons = [c.check(state) for c in self.conditions]
        if any(r is None for r in reasons):
            return None
        return " & ".join(r for r in reasons if r is not None)

    def __eq__(self, other: object) -> bool:
        return type(other) is AllOf and other.conditions == self.conditions

    def __hash__(self) -> int:
        return hash((AllOf, self.conditions))

    def __repr__(self) -> str:
        return " & ".join(_wrapped(c) for c in self.conditions)


def _wrapped(condition: StopCondition) -> str:
    return f"({condition!r})" if isinstance(condition, AnyOf | AllOf) else repr(condition)


def _count(value: object, what: str, *, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise UserError(f"{what} must be an int >= {minimum}, got {value!r}.")
    return value


def _amount(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise UserError(f"{what} must be a number >= 0, got {value!r}.")
    return float(value)


@dataclass(frozen=True)
class MaxRounds(StopCondition):
    """Stop once round `n` is done (round 0 is the first draft: `MaxRounds(1)` allows one refinement)."""

    n: int
    name = "max_rounds"
    bounded = True

    def __post_init__(self) -> None:
        _count(self.n, "MaxRounds(n)")

    def fired(self, state: LoopState) -> bool:
        return state.round >= self.n


@dataclass(frozen=True)
class ScoreAtLeast(StopCondition):
    """Stop when the round's score is at least `score` (approval is separate: see the loop)."""

    score: float
    name = "score_at_least"

    def __post_init__(self) -> None:
        if _amount(self.score, "ScoreAtLeast(score)") > 1:
            raise UserError(f"ScoreAtLeast(score) must be in [0, 1], got {self.score!r}.")

    def fired(self, state: LoopState) -> bool:
        return state.score is not None and state.score >= self.score


@dataclass(frozen=True)
class NoImprovement(StopCondition):
    """Stop after `k` rounds in a row without a strictly better candidate."""

    k: int
    name = "no_improvement"

    def __post_init__(self) -> None:
        _count(self.k, "NoImprovement(k)", minimum=1)

    def fired(self, state: LoopState) -> bool:
        return state.stale >= self.k


@dataclass(frozen=True)
class MaxToolCalls(StopCondition):
    """Stop once `n` tool calls have been made in the loop's subtree."""

    n: int
    name = "max_tool_calls"

    def __post_init__(self) -> None:
        _count(self.n, "MaxToolCalls(n)")

    def fired(self, state: LoopState) -> bool:
        return state.tool_calls >= self.n


@dataclass(frozen=True)
class MaxTokens(StopCondition):
    """Stop once the loop's subtree has used `n` tokens (input plus output)."""

    n: int
    name = "max_tokens"

    def __post_init__(self) -> None:
        _count(self.n, "MaxTokens(n)")

    def fired(self, state: LoopState) -> bool:
        return state.tokens >= self.n


@dataclass(frozen=True)
class BudgetUSD(StopCondition):
    """Stop once the loop's subtree has spent `usd` (litellm's prices)."""

    usd: float
    name = "budget_usd"

    def __post_init__(self) -> None:
        _amount(self.usd, "BudgetUSD(usd)")

    def fired(self, state: LoopState) -> bool:
        return state.usd >= self.usd


@dataclass(frozen=True)
class WallClock(StopCondition):
    """Stop once `seconds` have passed since the loop started. Reads the clock: journaled."""

    seconds: float
    name = "wall_clock"
    deterministic = False
    bounded = True

    def __post_init__(self) -> None:
        _amount(self.seconds, "WallClock(seconds)")

    def fired(self, state: LoopState) -> bool:
        return state.elapsed_s >= self.seconds


@dataclass(frozen=True)
class TextMention(StopCondition):
    """Stop when the round's output text contains `text` (e.g. `"TERMINATE"`)."""

    text: str
    name = "text_mention"

    def __post_init__(self) -> None:
        if not isinstance(self.text, str) or not self.text:
            raise UserError(f"TextMention(text) must be a non-empty str, got {self.text!r}.")

    def fired(self, state: LoopState) -> bool:
        return self.text in state.text


@dataclass(frozen=True)
class ToolMention(StopCondition):
    """Stop once a tool of this name has been called."""

    tool: str
    name = "tool_mention"

    def __post_init__(self) -> None:
        if not isinstance(self.tool, str) or not self.tool:
            raise UserError(f"ToolMention(tool) must be a tool name, got {self.tool!r}.")

    def fired(self, state: LoopState) -> bool:
        return self.tool in state.tools_called


_WATCHDOG_VERDICTS = ("PROGRESSING", "STUCK", "ACHIEVED", "MISLED")


@dataclass(frozen=True)
class WatchdogVerdict(StopCondition):
    """Stop when the latest watchdog verdict is one of `verdicts` (default STUCK)."""

    verdicts: tuple[str, ...] = ("STUCK",)
    name = "watchdog"

    def __post_init__(self) -> None:
        if isinstance(self.verdicts, str) or not self.verdicts:
            raise UserError(
                f"WatchdogVerdict(verdicts) must be a tuple of verdicts, got {self.verdicts!r}; "
                f"e.g. WatchdogVerdict(('STUCK', 'MISLED'))."
            )
        unknown = [v for v in self.verdicts if v not in _WATCHDOG_VERDICTS]
        if unknown:
            raise UserError(
                f"Unknown watchdog verdict(s) {unknown!r}; the verdicts are {', '.join(_WATCHDOG_VERDICTS)}."
            )

    def fired(self, state: LoopState) -> bool:
        return state.watchdog in self.verdicts


@dataclass(frozen=True)
class StopWhen(StopCondition):
    """Stop when `function(state)` is true; `name` is the stop reason it gives.

    Set `deterministic=False` if the function reads anything a replay cannot reproduce
    (a clock, a file, the network): the loop then journals its decision.
    """

    function: Callable[[LoopState], bool]
    name: str = "stop_when"
    deterministic: bool = field(default=True)

    def __post_init__(self) -> None:
        if not callable(self.function):
            raise UserError(f"StopWhen(function) must be callable, got {self.function!r}.")
        if not isinstance(self.name, str) or not self.name:
            raise UserError(f"StopWhen(name=) must be a non-empty str, got {self.name!r}.")

    def fired(self, state: LoopState) -> bool:
        return bool(self.function(state))
