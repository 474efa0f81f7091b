"""jeeves._run.usage_tree: subtree usage kept as calls are booked equals the sum over the subtree."""

from __future__ import annotations

from jeeves._run.usage_tree import book, lineage
from jeeves.messages import Usage, UsageTally

IDS = [
    "run1",
    "run1__actor_0",
    "run1__critic_0",
    "run1__team_0",
    "run1__team_0__coder_0",
    "run1__team_0__coder_0__critic_1",
    "run1__team_10",
    "x___y",  # a root id that holds "___": both "__" boundaries count, as the prefix rule says
    "x___y__w_0",
    "x_",
]


def brute(table: dict[str, UsageTally], q: str) -> Usage:
    total = UsageTally()
    for sid, tally in table.items():
        if sid == q or sid.startswith(q + "__"):
            total.add(tally)
    return total.snapshot()


def test_lineage_is_exactly_the_sessions_whose_subtree_holds_it() -> None:
    for sid in IDS:
        holders = {q for q in [*IDS, "x", "x_", "run1__team"] if sid == q or sid.startswith(q + "__")}
        assert set(lineage(sid)) >= holders
        assert lineage(sid)[0] == sid
        assert all(sid == q or sid.startswith(q + "__") for q in lineage(sid))


def test_booked_subtree_usage_equals_the_sum_over_the_subtree() -> None:
    own: dict[str, UsageTally] = {}
    tree: dict[str, UsageTally] = {}
    for n, sid in enumerate(IDS * 3):
        book(
            own, tree, sid, Usage(input_tokens=n, output_tokens=2 * n, model_calls=1, cost_usd=n / 4)
        )  # exact in binary: sums agree in any order
    for q in IDS:
        assert tree[q].snapshot() == brute(own, q)
    assert own["run1__team_0"].snapshot().model_calls == 3  # its own calls only
    assert tree["run1__team_0"].snapshot().model_calls == 9  # with the coder and its critic
    assert "run1__team_1" not in tree  # run1__team_10 is not below run1__team_1
