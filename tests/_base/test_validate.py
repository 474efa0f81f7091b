"""Every public constructor refuses a bad argument with a UserError that shows it.

One table over the constructors users call (besides Agent, Route and Budget, pinned in
their own test files): a wrong type is a UserTypeError (a TypeError too), a value out of
range a UserError (a ValueError too), and the message shows the value with `!r`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from jeeves import (
    ActorCritic,
    Agent,
    CitationCritic,
    CodeCritic,
    LLMCritic,
    Router,
    SelfRefine,
    Supervisor,
    Tool,
)
from jeeves._base.validate import check_bool, check_int, check_mapping, check_number, check_str
from jeeves.errors import UserError, UserTypeError

TESTS = "def test_x():\n    assert True\n"


def judge(task: str, output: str) -> bool:
    return True


def _agent() -> Agent:
    return Agent("x")


CASES: list[tuple[str, Callable[[], Any], type[UserError], str]] = [
    ("tool not callable", lambda: Tool(42), UserTypeError, "Tool needs a typed function, got 42"),
    (
        "tool description",
        lambda: Tool(judge, description=3),
        UserTypeError,
        "description must be a str, got 3",
    ),
    (
        "router not a mapping",
        lambda: Router(["m/x"]),
        UserTypeError,
        r"Router routes must be a dict.*\['m/x'\]",
    ),
    ("supervisor bool turns", lambda: Supervisor({"w": _agent()}, max_turns=True), UserTypeError, "got True"),
    (
        "supervisor str delegations",
        lambda: Supervisor({"w": _agent()}, max_delegations="2"),
        UserTypeError,
        "'2'",
    ),
    ("supervisor share_task", lambda: Supervisor({"w": _agent()}, share_task="no"), UserTypeError, "'no'"),
    ("supervisor params", lambda: Supervisor({"w": _agent()}, params=[1]), UserTypeError, r"\[1\]"),
    ("actor_critic threshold", lambda: ActorCritic(_agent(), judge, threshold="0.8"), UserTypeError, "'0.8'"),
    ("actor_critic threshold range", lambda: ActorCritic(_agent(), judge, threshold=80), UserError, "got 80"),
    ("actor_critic rounds", lambda: ActorCritic(_agent(), judge, max_rounds=-1), UserError, "got -1"),
    ("actor_critic description", lambda: ActorCritic(_agent(), judge, description=1), UserTypeError, "got 1"),
    (
        "actor_critic weight",
        lambda: ActorCritic(_agent(), [judge, LLMCritic()], weights={"judge": "1", "llm": 1}),
        UserTypeError,
        r"weights\['judge'\] must be a number > 0, got '1'",
    ),
    ("self_refine no_improvement", lambda: SelfRefine(_agent(), no_improvement=0), UserError, "got 0"),
    ("self_refine description", lambda: SelfRefine(_agent(), description=b"x"), UserTypeError, "got b'x'"),
    ("llm critic params", lambda: LLMCritic(params="t=0"), UserTypeError, "got 't=0'"),
    ("llm critic repair", lambda: LLMCritic(repair="yes"), UserTypeError, "got 'yes'"),
    ("code critic timeout type", lambda: CodeCritic(TESTS, timeout_s="60"), UserTypeError, "got '60'"),
    (
        "code critic timeout",
        lambda: CodeCritic(TESTS, timeout_s=0),
        UserError,
        "timeout_s must be a number > 0, got 0",
    ),
    ("code critic memory", lambda: CodeCritic(TESTS, memory_mb=1.5), UserTypeError, "got 1.5"),
    ("code critic small memory", lambda: CodeCritic(TESTS, memory_mb=8), UserError, "got 8"),
    ("citations penalty", lambda: CitationCritic(["a"], uncited_penalty="0.2"), UserTypeError, "got '0.2'"),
    ("citations hedges", lambda: CitationCritic(["a"], hedges=[None]), UserTypeError, "got None"),
]


@pytest.mark.parametrize(("make", "error", "shown"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_constructors_refuse_bad_arguments_with_a_user_error(
    make: Callable[[], Any], error: type[UserError], shown: str
) -> None:
    with pytest.raises(error, match=shown) as info:
        make()
    assert isinstance(info.value, TypeError if error is UserTypeError else ValueError)


@pytest.mark.parametrize(
    ("check", "value", "error"),
    [
        (lambda v: check_int(v, name="n", minimum=1), True, UserTypeError),
        (lambda v: check_int(v, name="n", minimum=1), 0, UserError),
        (lambda v: check_number(v, name="n", minimum=0), float("nan"), UserError),
        (lambda v: check_number(v, name="n", minimum=0, above=True), 0, UserError),
        (lambda v: check_number(v, name="n", minimum=0, maximum=1), 1.01, UserError),
        (lambda v: check_str(v, name="n", empty=False), "  ", UserError),
        (lambda v: check_bool(v, name="n"), 1, UserTypeError),
        (lambda v: check_mapping(v, name="n"), {1: "a"}, UserTypeError),
    ],
)
def test_checks(check: Callable[[object], object], value: object, error: type[UserError]) -> None:
    with pytest.raises(error, match=r"\bn\b.*" if error is UserTypeError else "n must"):
        check(value)


def test_checks_pass_good_values_through() -> None:
    assert check_int(3, name="n", minimum=1) == 3
    assert check_number(1, name="n", minimum=0, maximum=1) == 1.0
    assert check_mapping(None, name="n") == {}
    assert check_bool(False, name="n") is False
