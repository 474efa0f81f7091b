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
    assert check("See [the docs](https://example.com) for the full details.")[2] == [
        "uncited claim: 'See [the docs](https://example.com) for the full details.'"
    ]
    assert check("   ")[:2] == (0.0, True)


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
