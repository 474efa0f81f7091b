"""Stop conditions: each fires alone, and `|` / `&` combine them as written."""

from __future__ import annotations

import pytest

from jeeves.errors import UserError
from jeeves.stop import (
    AllOf,
    AnyOf,
    BudgetUSD,
    LoopState,
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

QUIET = LoopState()

EACH_ALONE: list[tuple[StopCondition, LoopState, str]] = [
    (MaxRounds(2), LoopState(round=2), "max_rounds"),
    (ScoreAtLeast(0.9), LoopState(score=0.9), "score_at_least"),
    (NoImprovement(2), LoopState(stale=2), "no_improvement"),
    (MaxToolCalls(3), LoopState(tool_calls=3), "max_tool_calls"),
    (MaxTokens(100), LoopState(tokens=100), "max_tokens"),
    (BudgetUSD(0.5), LoopState(usd=0.5), "budget_usd"),
    (WallClock(30), LoopState(elapsed_s=30.0), "wall_clock"),
    (TextMention("TERMINATE"), LoopState(text="done. TERMINATE"), "text_mention"),
    (ToolMention("abort"), LoopState(tools_called=("read", "abort")), "tool_mention"),
    (WatchdogVerdict(), LoopState(watchdog="STUCK"), "watchdog"),
    (StopWhen(lambda s: s.round == 1, name="first_revision"), LoopState(round=1), "first_revision"),
]


@pytest.mark.parametrize(("condition", "state", "reason"), EACH_ALONE, ids=lambda x: repr(x)[:40])
def test_each_condition_fires_alone(condition: StopCondition, state: LoopState, reason: str) -> None:
    assert condition.check(state) == reason
    assert condition.check(QUIET) is None


def test_just_below_each_limit_nothing_fires() -> None:
    below = [
        (MaxRounds(2), LoopState(round=1)),
        (ScoreAtLeast(0.9), LoopState(score=0.89)),
        (NoImprovement(2), LoopState(stale=1)),
        (MaxToolCalls(3), LoopState(tool_calls=2)),
        (MaxTokens(100), LoopState(tokens=99)),
        (BudgetUSD(0.5), LoopState(usd=0.49)),
        (WallClock(30), LoopState(elapsed_s=29.9)),
        (TextMention("TERMINATE"), LoopState(text="terminate")),
        (ToolMention("abort"), LoopState(tools_called=("aborted",))),
        (WatchdogVerdict(("STUCK", "MISLED")), LoopState(watchdog="PROGRESSING")),
        (ScoreAtLeast(0.5), LoopState(score=None)),
    ]
    for condition, state in below:
        assert condition.check(state) is None, condition


def test_or_fires_when_either_does_named_by_the_first_in_order() -> None:
    stop = MaxRounds(3) | ScoreAtLeast(0.9)
    assert isinstance(stop, AnyOf)
    assert stop.check(LoopState(round=1, score=0.5)) is None
    assert stop.check(LoopState(round=3, score=0.5)) == "max_rounds"
    assert stop.check(LoopState(round=1, score=0.95)) == "score_at_least"
    assert stop.check(LoopState(round=3, score=0.95)) == "max_rounds"


def test_and_fires_only_when_both_do() -> None:
    stop = ScoreAtLeast(0.8) & MaxRounds(2)
    assert isinstance(stop, AllOf)
    assert stop.check(LoopState(round=3, score=0.5)) is None
    assert stop.check(LoopState(round=1, score=0.9)) is None
    assert stop.check(LoopState(round=2, score=0.9)) == "score_at_least & max_rounds"


def test_combinations_behave_as_written() -> None:
    stop = (MaxRounds(3) | ScoreAtLeast(0.9)) & MaxToolCalls(5)
    assert stop.check(LoopState(round=3, tool_calls=4)) is None
    assert stop.check(LoopState(round=3, tool_calls=5)) == "max_rounds & max_tool_calls"
    assert stop.check(LoopState(round=0, score=0.95, tool_calls=9)) == "score_at_least & max_tool_calls"

    other = MaxRounds(3) | (ScoreAtLeast(0.9) & MaxToolCalls(5))
    assert other.check(LoopState(round=0, score=0.95, tool_calls=1)) is None
    assert other.check(LoopState(round=0, score=0.95, tool_calls=5)) == "score_at_least & max_tool_calls"
    assert other.check(LoopState(round=3)) == "max_rounds"


def test_chains_flatten_and_print_as_written() -> None:
    stop = MaxRounds(3) | ScoreAtLeast(0.9) | NoImprovement(2)
    assert isinstance(stop, AnyOf) and len(stop.conditions) == 3
    assert repr((MaxRounds(3) | ScoreAtLeast(0.9)) & MaxToolCalls(5)) == (
        "(MaxRounds(n=3) | ScoreAtLeast(score=0.9)) & MaxToolCalls(n=5)"
    )
    assert MaxRounds(3) | ScoreAtLeast(0.9) == MaxRounds(3) | ScoreAtLeast(0.9)


def test_only_the_clock_makes_a_condition_nondeterministic() -> None:
    assert (MaxRounds(3) | ScoreAtLeast(0.9)).deterministic
    assert not (MaxRounds(3) | WallClock(60)).deterministic
    assert not (ScoreAtLeast(0.9) & WallClock(60)).deterministic
    assert not StopWhen(lambda s: True, deterministic=False).deterministic


@pytest.mark.parametrize(
    ("build", "needle"),
    [
        (lambda: MaxRounds(-1), "MaxRounds(n) must be an int >= 0, got -1"),
        (lambda: MaxRounds("3"), "got '3'"),
        (lambda: ScoreAtLeast(1.5), "must be in [0, 1], got 1.5"),
        (lambda: NoImprovement(0), "NoImprovement(k) must be an int >= 1, got 0"),
        (lambda: WallClock(float("nan")), "WallClock(seconds) must be a number >= 0"),
        (lambda: BudgetUSD(True), "got True"),
        (lambda: TextMention(""), "non-empty str"),
        (lambda: WatchdogVerdict("STUCK"), "must be a tuple of verdicts"),
        (lambda: WatchdogVerdict(("BORED",)), "Unknown watchdog verdict(s) ['BORED']"),
        (lambda: StopWhen(42), "must be callable"),
        (lambda: MaxRounds(3) | 3, "Cannot combine a stop condition with 3"),
        (lambda: MaxRounds(3) & "x", "using '&'"),
    ],
)
def test_bad_conditions_are_user_errors(build: object, needle: str) -> None:
    with pytest.raises(UserError) as info:
        build()  # type: ignore[operator]
    assert needle in str(info.value)


def test_only_a_round_or_time_cap_bounds_a_condition() -> None:
    assert MaxRounds(3).bounded
    assert (ScoreAtLeast(0.9) | MaxRounds(3)).bounded
    assert not (ScoreAtLeast(0.9) & MaxRounds(3)).bounded  # a low score never stops it
    assert ((MaxRounds(3) | ScoreAtLeast(0.9)) & MaxRounds(5)).bounded
    assert (ScoreAtLeast(0.9) | WallClock(60)).bounded
    assert not (
        ScoreAtLeast(0.9) | MaxTokens(10_000) | BudgetUSD(1.0)
    ).bounded  # a free model never reaches them
