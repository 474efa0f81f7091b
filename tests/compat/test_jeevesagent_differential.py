"""jeevesagent 0.9.7's pinned behaviours, run on jeevesagent and through jeeves.compat.jeevesagent.

Every scenario in `_scenarios.CASES` runs on both; they must agree except in the fields
the scenario declares, each naming a row of the differences table of
docs/coming-from-jeevesagent.md. The table and the scenarios are checked against each
other: every row is exercised by some scenario, every declared difference is a row.
"""

from __future__ import annotations

import pytest

from tests.compat._differential import Case, compare, documented_differences
from tests.compat._scenarios import CASES

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
async def test_scenario_agrees_except_where_documented(case: Case) -> None:
    await compare(case)


def test_every_documented_difference_is_exercised_and_every_declared_one_documented() -> None:
    documented = documented_differences()
    declared = {d for case in CASES for d in case.differs.values()}
    assert declared - documented.keys() == set(), "declared in a scenario, missing from the doc's table"
    assert documented.keys() - declared == set(), "listed in the doc's table, exercised by no scenario"
