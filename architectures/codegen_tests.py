"""The pytest file codegen.toml's code critic runs against each draft (as test_solution.py).

The draft is saved as `duration.py` beside it (`module = "duration"` in the spec). Point
the spec's `tests` at your own file, and describe the function in the task, to generate
something else.
"""

import pytest
from duration import parse_duration


def test_single_units():
    assert (parse_duration("90s"), parse_duration("5m"), parse_duration("2h")) == (90, 300, 7200)


def test_combined_units():
    assert parse_duration("1h30m") == 5400


def test_spaces_between_parts():
    assert parse_duration("2h 15m 10s") == 8110


def test_rejects_what_is_not_a_duration():
    with pytest.raises(ValueError):
        parse_duration("soon")


def test_rejects_the_empty_string():
    with pytest.raises(ValueError):
        parse_duration("")
