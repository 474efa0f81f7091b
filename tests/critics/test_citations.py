from __future__ import annotations

import pytest

from jeeves.critics import CitationCritic
from jeeves.errors import UserError
from tests.critics.helpers import review

pytestmark = pytest.mark.anyio

EVIDENCE = {"e1": "Paris is the capital of France.", "e2": "Paris has about 2.1 million inhabitants."}


def check(text: str, **options: object) -> tuple[float, bool, list[str]]:
    verdict = CitationCritic(EVIDENCE, **options).check(text)  # type: ignore[arg-type]
    return verdict.score, verdict.hard_fail, verdict.issues


def test_every_claim_cited_with_known_ids() -> None:
    text = "Paris is the capital of France [e1]. It has about 2.1 million inhabitants [e1, e2]."
    assert check(text) == (1.0, False, [])


def test_citation_after_the_full_stop_belongs_to_its_sentence() -> None:
    assert check("Paris is the capital of France. [e1]\nIt has 2.1 million people. [e2]")[0] == 1.0


def test_unknown_id_is_a_hard_fail() -> None:
    score, hard_fail, issues = check(
        "Paris is the capital of France [e1]. It is the largest city in Europe [e7]."
    )
    assert hard_fail
    assert score == pytest.approx(0.8)
    assert issues == [
        "cites unknown evidence ['e7'] (known: e1, e2): 'It is the largest city in Europe [e7].'"
    ]


def test_uncited_sentences_cost_a_lighter_penalty_each() -> None:
    text = "Paris is the capital of France [e1]. It is very beautiful in spring. The food is excellent too."
    score, hard_fail, issues = check(text)
    assert (score, hard_fail) == (pytest.approx(0.6), False)
    assert issues == [
        "uncited claim: 'It is very beautiful in spring.'",
        "uncited claim: 'The food is excellent too.'",
    ]
    assert check(text, uncited_penalty=0.5)[0] == 0.0


def test_hedged_short_and_lead_in_sentences_need_no_citation() -> None:
    text = (
        "# Answer\n"
        "Here is what the evidence says:\n"
        "- Paris is the capital of France [e1].\n"
        "There is insufficient evidence to say when it was founded.\n"
        "Thanks!"
    )
    assert check(text) == (1.0, False, [])
    assert check("The evidence does not say how old Paris is.")[0] == 1.0


def test_markdown_links_are_not_citations_and_empty_answers_fail() -> None:
    assert check("See [the docs](https://example.com) for the full details.", require_citations=False)[2] == [
        "uncited claim: 'See [the docs](https://example.com) for the full details.'"
    ]
    assert check("   ")[:2] == (0.0, True)


def test_an_answer_that_cites_no_evidence_is_never_approved() -> None:
    verdict = CitationCritic(EVIDENCE).check("Paris is the capital of France.")
    assert (verdict.score, verdict.hard_fail) == (pytest.approx(0.8), True)
    assert verdict.issues == [
        "the answer cites none of the evidence; cite each claim as [id] (ids: e1, e2)",
        "uncited claim: 'Paris is the capital of France.'",
    ]
    assert not verdict.approves(0.8)
    assert "cites no evidence is not approved" in verdict.summary
    assert check("See [the docs](https://example.com) for the full details.")[1]  # a link is no citation


def test_citations_can_be_made_optional() -> None:
    optional = CitationCritic(EVIDENCE, require_citations=False).check("Paris is the capital of France.")
    assert (optional.score, optional.hard_fail, optional.approves(0.8)) == (pytest.approx(0.8), False, True)


def test_one_citation_is_enough_to_be_judged_by_the_score_and_hedges_need_none() -> None:
    partly = "Paris is the capital of France [e1]. It is very beautiful in spring."
    assert check(partly)[:2] == (pytest.approx(0.8), False)
    assert check("There is insufficient evidence to say who founded Paris.") == (1.0, False, [])


def test_a_long_evidence_list_is_shown_bounded() -> None:
    many = [f"doc{i:03}" for i in range(500)]
    (issue, _) = CitationCritic(many).check("Paris is the capital of France.").issues
    assert issue.endswith("doc019, … (500 ids))") and len(issue) < 400


async def test_review_is_a_journaled_function_step() -> None:
    verdict = await review(CitationCritic(["e1"]), "Paris is the capital of France [e1].")
    assert (verdict.score, verdict.source, verdict.obtained) == (1.0, "citations", "function")


def test_bad_configuration() -> None:
    with pytest.raises(UserError, match="not one string"):
        CitationCritic("e1")
    with pytest.raises(UserError, match="cannot be cited"):
        CitationCritic(["has space"])
    with pytest.raises(UserError, match="uncited_penalty"):
        CitationCritic(["e1"], uncited_penalty=0)
    with pytest.raises(UserError, match="require_citations must be True or False, got 'no'"):
        CitationCritic(["e1"], require_citations="no")  # type: ignore[arg-type]
