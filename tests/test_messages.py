"""Usage arithmetic and how dollars are shown."""

from __future__ import annotations

import pytest

from jeeves.messages import Usage, format_usd


@pytest.mark.parametrize(
    ("amount", "shown"),
    [
        (0.0, "$0.0000"),
        (0.0104, "$0.0104"),
        (1.25, "$1.2500"),
        (0.0011, "$0.0011"),
        (0.000031, "$0.000031"),  # a cheap call keeps two significant digits instead of reading $0.0000
        (0.00005, "$0.000050"),
        (0.00999, "$0.0100"),
    ],
)
def test_dollars_never_read_as_free_when_they_are_not(amount: float, shown: str) -> None:
    assert format_usd(amount) == shown


def test_usage_adds_up() -> None:
    total = Usage(input_tokens=3, output_tokens=4, model_calls=1, cost_usd=0.5) + Usage(
        input_tokens=1, model_calls=1, cost_usd=0.25
    )
    assert (total.total_tokens, total.model_calls, total.cost_usd) == (8, 2, 0.75)
