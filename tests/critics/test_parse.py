from __future__ import annotations

import pytest

from jeeves.critics import parse_verdict

CASES = [
    # (reply, score, issues, obtained)
    (
        '{"score": 0.8, "issues": ["handle empty input"], "summary": "close"}',
        0.8,
        ["handle empty input"],
        "schema",
    ),
    ('  {"score": 1, "issues": [], "summary": ""}\n', 1.0, [], "schema"),
    ('Here is my review:\n{"score": 0.6, "issues": ["a"], "summary": "s"}', 0.6, ["a"], "repaired"),
    ('```json\n{"score": 0.3, "issues": ["b", "c"]}\n```', 0.3, ["b", "c"], "repaired"),
    ('```\n{"score": 0.9, "issues": []}\n```\nThanks!', 0.9, [], "repaired"),
    ('{"score": 7, "issues": ["x"]}', 0.7, ["x"], "repaired"),
    ('{"score": 85, "issues": []}', 0.85, [], "repaired"),
    ('{"score": "95%", "issues": []}', 0.95, [], "repaired"),
    ('{"score": "8/10", "issues": []}', 0.8, [], "repaired"),
    ('{"score": 0.4, "issues": "- too slow\\n- no tests"}', 0.4, ["too slow", "no tests"], "repaired"),
    ('{"Rating": 9, "Problems": ["minor"]}', 0.9, ["minor"], "repaired"),
    ('{"verdict": {"score": 0.5, "issues": ["nested"]}}', 0.5, ["nested"], "repaired"),
    ('First {"draft": true} then {"score": 0.2, "issues": ["last wins"]}', 0.2, ["last wins"], "repaired"),
    ("Score: 0.8\n- handle None\n- add a docstring", 0.8, ["handle None", "add a docstring"], "repaired"),
    ("Overall I'd give it a score of 7/10.\nIssues:\n1. off by one", 0.7, ["off by one"], "repaired"),
    ("**Rating**: 85%", 0.85, [], "repaired"),
    ("Grade: 4 out of 5", 0.8, [], "repaired"),
    ("Solid work. 9/10", 0.9, [], "repaired"),
    ("Initial score: 0.9, but after checking the edge cases the final score: 0.6", 0.6, [], "repaired"),
]


@pytest.mark.parametrize(("reply", "score", "issues", "obtained"), CASES)
def test_parse_table(reply: str, score: float, issues: list[str], obtained: str) -> None:
    verdict = parse_verdict(reply, source="llm")
    assert verdict.score == pytest.approx(score)
    assert verdict.issues == issues
    assert verdict.obtained == obtained
    assert verdict.source == "llm"
    assert verdict.approves(0.0)


@pytest.mark.parametrize(
    "reply",
    [
        "Looks great to me!",
        "",
        '{"score": "excellent", "issues": []}',
        '{"score": 250}',
        "3/4 of the tests pass",  # a fraction that is not a score scale
        "Score: -1",
    ],
)
def test_no_recoverable_score_is_a_flagged_fallback_that_never_approves(reply: str) -> None:
    verdict = parse_verdict(reply, source="llm")
    assert verdict.score == 0.0
    assert verdict.obtained == "fallback"
    assert verdict.issues == [reply.strip() or "(the critic's reply was empty)"]
    assert not verdict.approves(0.0)


def test_schema_shaped_reply_with_a_bad_issue_type_is_repaired() -> None:
    verdict = parse_verdict('{"score": 0.5, "issues": [{"description": "x"}]}')
    assert (verdict.obtained, verdict.issues) == ("repaired", ["x"])
