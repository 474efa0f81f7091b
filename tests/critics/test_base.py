from __future__ import annotations

import pytest

import jeeves
from jeeves.critics import CombinedCritic, CriticSession, FunctionCritic, Review, Verdict, as_critic
from jeeves.errors import UserError
from jeeves.models.testing import ScriptedModel
from tests.critics.helpers import review
from tests.memory_journal import DictJournal

pytestmark = pytest.mark.anyio


def long_enough(task: str, output: str) -> bool:
    return len(output) >= 5


async def scored(task: str, output: str) -> float:
    return 7


async def test_function_critics_sync_async_bool_and_number() -> None:
    passed = await review(FunctionCritic(long_enough), "hello world")
    assert (passed.score, passed.hard_fail, passed.source, passed.obtained) == (
        1.0,
        False,
        "long_enough",
        "function",
    )
    failed = await review(as_critic(long_enough), "hi")
    assert (failed.score, failed.hard_fail, failed.issues) == (
        0.0,
        True,
        ["the check 'long_enough' returned False"],
    )
    seven = await review(as_critic(scored), "x")
    assert (seven.score, seven.source) == (0.7, "scored")
    lam = await review(as_critic(lambda t, o: Verdict(score="90%", issues="a\nb")), "x")
    assert (lam.score, lam.issues, lam.source, lam.obtained) == (0.9, ["a", "b"], "function", "function")


async def test_function_critic_receives_task_and_output_text() -> None:
    seen: list[tuple[str, str]] = []

    def spy(task: str, output: str) -> bool:
        seen.append((task, output))
        return True

    await review(FunctionCritic(spy, name="spy"), "the output", task="the task")
    assert seen == [("the task", "the output")]


async def test_a_bad_return_value_is_a_user_error() -> None:
    with pytest.raises(UserError, match="returned 'yes'"):
        await review(FunctionCritic(lambda t, o: "yes"), "x")


async def test_function_critic_is_replayed_not_called_again() -> None:
    calls: list[str] = []

    def counting(task: str, output: str) -> float:
        calls.append(output)
        return 0.5

    journal = DictJournal()
    first = await review(FunctionCritic(counting), "x", journal=journal)
    again = await review(FunctionCritic(counting), "x", journal=journal, mode="replay")
    assert first == again and calls == ["x"]


async def test_a_raising_function_critic_raises_the_same_error_on_replay() -> None:
    def broken(task: str, output: str) -> float:
        raise ValueError("boom")

    journal = DictJournal()
    with pytest.raises(ValueError, match="boom"):
        await review(FunctionCritic(broken), "x", journal=journal)
    with pytest.raises(Exception, match="boom") as info:
        await review(FunctionCritic(broken), "x", journal=journal, mode="replay")
    assert getattr(info.value, "error_type", None) == "ValueError"


async def test_combined_critic_runs_in_order_in_one_session() -> None:
    model = ScriptedModel(['{"score": 1.0, "issues": [], "summary": "perfect"}'])
    critic = CombinedCritic([FunctionCritic(long_enough, name="length"), jeeves.LLMCritic()])
    session = CriticSession(critic, Review(task="t", output="hi", round=0, prompt="p"))
    async with jeeves.stream(session, "p", model=model, session_id="c") as events:
        started = [e async for e in events if e.type == "session.started"]
        verdict = (await events.result()).output
    assert [s.session_id for s in started] == ["c"]
    assert started[0].architecture == "combined_critic" and started[0].model == "scripted"
    assert (verdict.score, verdict.hard_fail, verdict.source) == (0.0, True, "length,llm")
    assert verdict.issues == ["[length] the check 'length' returned False"]


def test_combined_critic_configuration_errors() -> None:
    with pytest.raises(UserError, match="distinct names"):
        CombinedCritic([FunctionCritic(long_enough), FunctionCritic(long_enough)])
    with pytest.raises(UserError, match="positive weight"):
        CombinedCritic([FunctionCritic(long_enough)], weights={"other": 1})
    with pytest.raises(UserError, match="at least one"):
        CombinedCritic([])
    with pytest.raises(UserError, match="not a critic"):
        as_critic(42)
    with pytest.raises(UserError, match="'Bad'"):
        FunctionCritic(long_enough, name="Bad")
    assert FunctionCritic(lambda t, o: True).name == "function"
