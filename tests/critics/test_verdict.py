from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from jeeves.critics import Verdict, combine_verdicts, normalise_score


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (0, 0.0),
        (0.8, 0.8),
        (1, 1.0),
        (1.0, 1.0),
        (7, 0.7),
        (10, 1.0),
        (8.5, 0.85),
        (85, 0.85),
        (100, 1.0),
        ("0.8", 0.8),
        ("7", 0.7),
        ("95%", 0.95),
        ("0.5 %", 0.005),
        ("8/10", 0.8),
        ("4 out of 5", 0.8),
        ("17 / 20", 0.85),
    ],
)
def test_normalise_score_table(given: object, expected: float) -> None:
    assert normalise_score(given) == pytest.approx(expected)


@pytest.mark.parametrize(
    "given", [-0.1, 101, 1e9, math.nan, math.inf, True, None, "high", "12/10", "3/0", "150%", [1]]
)
def test_unreadable_scores_are_errors_not_clamped(given: object) -> None:
    with pytest.raises(ValueError):
        normalise_score(given)
    with pytest.raises(ValidationError):
        Verdict(score=given)


def test_issues_are_tolerant() -> None:
    assert Verdict(score=1, issues="- first\n* second\n\n3. third").issues == ["first", "second", "third"]
    assert Verdict(score=1, issues=None).issues == []
    assert Verdict(score=1, issues=[{"description": "off by one", "line": 3}, {"line": 4}]).issues == [
        "off by one",
        '{"line": 4}',
    ]
    multi_line = "test_add failed: assert -1 == 3\n +  where -1 = add(1, 2)"
    assert Verdict(score=0, issues=[multi_line]).issues == [multi_line]  # list items are not split


def test_approves_needs_threshold_no_hard_fail_and_a_readable_verdict() -> None:
    assert Verdict(score=0.8).approves(0.8)
    assert not Verdict(score=0.79).approves(0.8)
    assert not Verdict(score=1.0, hard_fail=True).approves(0.0)
    assert not Verdict(score=0.0, obtained="fallback").approves(0.0)


def test_verdicts_round_trip_through_json_unchanged() -> None:
    verdict = combine_verdicts([Verdict(score=0.5, issues=["x"], source="a"), Verdict(score=0.9, source="b")])
    assert Verdict.model_validate_json(verdict.model_dump_json()) == verdict


def test_combine_takes_the_minimum_tags_issues_and_keeps_hard_fails() -> None:
    tests = Verdict(score=0.5, issues=["test_add failed: assert 1 == 3"], hard_fail=True, source="tests")
    llm = Verdict(
        score=1.0, issues=["name the function better"], summary="fine", source="llm", obtained="schema"
    )
    combined = combine_verdicts([tests, llm])
    assert combined.score == 0.5
    assert combined.hard_fail
    assert combined.source == "tests,llm"
    assert combined.issues == ["[tests] test_add failed: assert 1 == 3", "[llm] name the function better"]
    assert combined.summary == "llm: fine"
    assert combined.obtained == "schema"
    assert combined.parts == [tests, llm]
    assert not combined.approves(0.0)


def test_combine_with_weights_and_the_weakest_obtained() -> None:
    parts = [
        Verdict(score=1.0, source="tests"),
        Verdict(score=0.4, source="llm", obtained="repaired"),
    ]
    combined = combine_verdicts(parts, {"tests": 3, "llm": 1})
    assert combined.score == pytest.approx(0.85)
    assert combined.obtained == "repaired"
    fallback = Verdict(score=0.0, source="llm", obtained="fallback")
    assert combine_verdicts([parts[0], fallback]).obtained == "fallback"


def test_issue_objects_with_a_rule_path_severity_or_fix_become_findings() -> None:
    from jeeves.findings import Finding

    v = Verdict.model_validate(
        {
            "score": 0.4,
            "issues": [
                {
                    "message": "refund above the limit",
                    "rule_id": "policy.limit",
                    "severity": "ERROR",
                    "fix": "ask a manager",
                },
                "plain strings keep working",
                {"description": "no rule here"},
            ],
        }
    )
    assert v.issues == ["refund above the limit", "plain strings keep working", "no rule here"]
    assert v.findings == [
        Finding(
            message="refund above the limit", rule_id="policy.limit", severity="error", fix="ask a manager"
        )
    ]


def test_findings_alone_give_the_issues() -> None:
    from jeeves.findings import Finding

    v = Verdict(score=0.2, findings=[Finding(message="x is undefined", path="app.py:3", severity="error")])
    assert v.issues == ["x is undefined"]
    combined = combine_verdicts([v, Verdict(score=0.9, source="llm")])
    assert [f.path for f in combined.findings] == ["app.py:3"]


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_findings_reach_the_critique_event() -> None:
    import jeeves
    from jeeves import ActorCritic, Agent, ScriptedModel

    def rule(task: str, output: str) -> Verdict:
        return Verdict.model_validate(
            {"score": 0.1, "issues": [{"message": "uses eval", "rule_id": "S307", "path": "solution.py:1"}]}
        )

    arch = ActorCritic(Agent("x"), rule, max_rounds=0)
    async with jeeves.stream(arch, "t", model=ScriptedModel({"actor": ["eval(x)"]})) as events:
        critiques = [e async for e in events if e.type == "critique"]
    assert [(f.rule_id, f.path) for f in critiques[0].findings] == [("S307", "solution.py:1")]
