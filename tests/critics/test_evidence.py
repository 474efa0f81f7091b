"""A verdict says what its evidence was; old verdicts without it still read."""

from __future__ import annotations

import json

import pytest

import jeeves
from jeeves import ActorCritic, Agent, CodeCritic, LLMCritic, ScriptedModel, Verdict
from jeeves.architectures import ActorCriticOutput
from jeeves.critics import combine_verdicts

pytestmark = pytest.mark.anyio

TESTS = "from solution import add\n\ndef test_add():\n    assert add(2, 3) == 5\n"
GOOD = "def add(a, b):\n    return a + b\n"


def test_a_verdict_recorded_before_the_field_reads_as_unknown_and_weak() -> None:
    old = Verdict.model_validate_json(json.dumps({"score": 0.9, "issues": [], "source": "llm"}))
    assert (old.evidence, old.weak_evidence) == ("unknown", True)


async def run(critic: object) -> ActorCriticOutput:
    model = ScriptedModel({"actor": [GOOD], "critic": [json.dumps({"score": 1.0})]})
    result = await jeeves.run(ActorCritic(Agent("x"), critic, max_rounds=0), "t", model=model)  # type: ignore[arg-type]
    assert isinstance(result.detail, ActorCriticOutput)
    return result.detail


@pytest.mark.parametrize(
    ("critic", "evidence", "weak"),
    [
        (lambda: CodeCritic(TESTS), "task_tests", False),
        (lambda: CodeCritic(TESTS, evidence="model_tests"), "model_tests", True),
        (lambda: LLMCritic(), "judge", True),
        (lambda: lambda task, output: True, "function", False),
    ],
)
async def test_each_critic_names_its_evidence(critic: object, evidence: str, weak: bool) -> None:
    out = await run(critic())  # type: ignore[operator]
    assert out.verdict is not None
    assert (out.verdict.evidence, out.verdict.weak_evidence) == (evidence, weak)


async def test_a_combined_verdict_keeps_each_part_and_the_critique_event_carries_it() -> None:
    out = await run([CodeCritic(TESTS), LLMCritic()])
    assert out.verdict is not None
    assert out.verdict.evidence == "combined"
    assert [p.evidence for p in out.verdict.parts] == ["task_tests", "judge"]
    same = combine_verdicts(
        [Verdict(score=1, evidence="judge"), Verdict(score=1, evidence="judge", source="b")]
    )
    assert same.evidence == "judge"
    model = ScriptedModel({"actor": [GOOD]})
    async with jeeves.stream(
        ActorCritic(Agent("x"), CodeCritic(TESTS), max_rounds=0), "t", model=model
    ) as events:
        critiques = [e for e in [e async for e in events] if e.type == "critique"]
    assert [c.evidence for c in critiques] == ["task_tests"]  # type: ignore[union-attr]


def test_code_critic_refuses_unknown_evidence() -> None:
    with pytest.raises(jeeves.UserError, match="evidence='mine'"):
        CodeCritic(TESTS, evidence="mine")  # type: ignore[arg-type]
