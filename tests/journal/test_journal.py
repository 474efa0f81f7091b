"""The record shapes and the error codec of jeeves/journal/records.py: what a journal may hold, and
that decoding recorded data never builds anything but known jeeves errors."""

from __future__ import annotations

from typing import Any

import pytest

from jeeves.errors import BudgetExceeded, CriticError, JournalError, ProviderError
from jeeves.journal.records import ReplayedError, decode_error, encode_error, request_diff


def test_jeeves_errors_round_trip_with_their_attributes() -> None:
    budget = decode_error(encode_error(BudgetExceeded("over", limit="usd", allowed=1.0, spent=1.5)))
    assert isinstance(budget, BudgetExceeded)
    assert (str(budget), budget.limit, budget.allowed, budget.spent) == ("over", "usd", 1.0, 1.5)
    provider = decode_error(encode_error(ProviderError("down")))
    assert isinstance(provider, ProviderError)
    assert (provider.model, provider.status_code, provider.retryable) == (None, None, True)
    other = decode_error(encode_error(KeyError("k")))
    assert isinstance(other, ReplayedError) and other.error_type == "KeyError"


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ("an error", 'the recorded error is "an error", not an object'),
        (
            {"type": "CriticError", "attrs": {"__class__": "str"}},
            'CriticError cannot have attribute "__class__"',
        ),
        (
            {"type": "CriticError", "attrs": {"status_code": 500}},
            'CriticError cannot have attribute "status_code"',
        ),
        (
            {"type": "ProviderError", "attrs": {"status_code": True}},
            'cannot have attribute "status_code" = true',
        ),
        ({"type": "BudgetExceeded", "attrs": {"spent": "1"}}, 'cannot have attribute "spent" = "1"'),
        (
            {"type": "ProviderError", "attrs": ["status_code"]},
            'attributes are \\["status_code"\\], not an object',
        ),
        ({"type": "not a name"}, 'the recorded error type "not a name" is not a class name'),
        ({"type": 3}, "the recorded error type 3 is not a class name"),
        ({"type": "KeyError", "message": ["k"]}, 'the recorded error message is \\["k"\\], not text'),
    ],
)
def test_recorded_errors_that_are_not_what_encode_error_writes_are_damage(data: Any, says: str) -> None:
    with pytest.raises(JournalError, match=f"^runs.db \\(session 'r1' step 2\\): .*{says}.*damaged here"):
        decode_error(data, "runs.db (session 'r1' step 2)")


def test_only_error_classes_jeeves_exports_are_built() -> None:
    for name in ("tag_session", "PROGRAM_ERRORS", "Exception", "SystemExit"):
        assert type(decode_error({"type": name, "message": "m"})) is ReplayedError


def test_encoding_keeps_only_the_attributes_decoding_accepts() -> None:
    error = CriticError("no")
    error.model = "gpt"  # type: ignore[attr-defined]  # not a CriticError attribute: not recorded
    assert encode_error(error)["attrs"] == {}
    assert isinstance(decode_error(encode_error(error)), CriticError)


def test_journal_errors_are_value_errors_of_one_bounded_line() -> None:
    error = JournalError("a\nb " + "x" * 10_000_000 + " what to do")
    assert isinstance(error, ValueError)
    text = str(error)
    assert "\n" not in text and len(text) < JournalError.MAX_MESSAGE + 100
    assert text.startswith("a b xxx") and text.endswith("x what to do") and "characters left out" in text


def test_request_diffs_are_bounded_in_lines_and_width() -> None:
    diff = request_diff({"a": "x" * 1_000_000}, {"a": "y" * 1_000_000})
    assert len(diff) < 1000 and "(1000008 characters)" in diff
    for depth in (900, 5000):  # as deep as a journal can hold, and deeper than json can indent
        deep: Any = []
        for _ in range(depth):
            deep = [deep]
        lines = request_diff(deep, 1).splitlines()
        assert len(lines) <= 25 and max(len(line) for line in lines) <= 160
