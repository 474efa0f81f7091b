"""A call without a known price is unpriced: its cost is unknown (None), never $0, and says so."""

from __future__ import annotations

import pytest

import jeeves
from jeeves.cli.terminal import spend_lines
from jeeves.events import BudgetUnpriced, ModelCompleted
from jeeves.messages import Usage, UsageTally, format_cost
from jeeves.testing import Reply

pytestmark = pytest.mark.anyio

UNPRICED = Usage(input_tokens=10, output_tokens=5, model_calls=1, cost_usd=None)
PRICED = Usage(input_tokens=10, output_tokens=5, model_calls=1, cost_usd=0.0123)


def test_a_sum_with_unpriced_calls_keeps_the_priced_part_and_counts_the_rest() -> None:
    mixed = PRICED + UNPRICED
    assert (mixed.cost_usd, mixed.unpriced_calls, mixed.cost) == (0.0123, 1, None)
    assert format_cost(mixed) == "$0.0123 + unpriced (1 call)"
    both = UNPRICED + UNPRICED
    assert (both.cost_usd, both.unpriced_calls) == (None, 2)
    assert format_cost(both) == "unpriced (2 calls)" and format_cost(UNPRICED) == "unpriced (1 call)"
    assert (Usage() + UNPRICED).cost_usd is None and (PRICED + PRICED).cost == pytest.approx(0.0246)
    tally = UsageTally()
    for usage in (PRICED, UNPRICED, UNPRICED):
        tally.add(usage)
    assert tally.snapshot() == PRICED + UNPRICED + UNPRICED
    assert format_cost(tally.snapshot()) == "$0.0123 + unpriced (2 calls)"


def test_an_old_journals_usage_reads_as_priced() -> None:
    old = Usage.model_validate_json(
        '{"input_tokens": 3, "output_tokens": 1, "model_calls": 1, "cost_usd": 0.0}'
    )
    assert (old.unpriced, old.cost, format_cost(old)) == (0, 0.0, "$0.0000")
    assert Usage.model_validate_json(UNPRICED.model_dump_json()) == UNPRICED


def _model() -> jeeves.ScriptedModel:
    return jeeves.ScriptedModel(
        {
            "actor": [Reply(text="draft", usage=UNPRICED), Reply(text="better", usage=UNPRICED)],
            "critic": [
                Reply(text='{"score": 0.2, "issues": ["thin"]}', usage=PRICED),
                Reply(text='{"score": 0.9}', usage=PRICED),
            ],
        }
    )


def _loop() -> jeeves.ActorCritic:
    return jeeves.ActorCritic(jeeves.Agent("Write."), jeeves.LLMCritic("Judge."), max_rounds=2)


async def test_a_run_reports_unpriced_calls_per_role_and_in_total() -> None:
    result = await jeeves.run(_loop(), "Write.", model=_model())
    assert result.cost_usd is None  # unknown, not $0.0246
    assert (result.usage.cost_usd, result.usage.unpriced_calls) == (pytest.approx(0.0246), 2)
    actor, critic = result.usage_by_role["actor"], result.usage_by_role["critic"]
    assert (actor.cost_usd, actor.unpriced_calls, critic.cost, critic.unpriced_calls) == (
        None,
        2,
        pytest.approx(0.0246),
        0,
    )
    total, *roles = spend_lines(result.usage, result.usage_by_path)
    assert total == "4 model calls · 60 tokens · $0.0246 + unpriced (2 calls)"
    assert roles == [
        "  actor_critic.actor: 2 calls, 30 tokens, unpriced (2 calls)",
        "  actor_critic.critic: 2 calls, 30 tokens, $0.0246",
    ]


async def test_a_usd_budget_warns_once_that_unpriced_calls_escape_it() -> None:
    budget = jeeves.Budget(max_usd=0.02)
    async with jeeves.stream(_loop(), "Write.", model=_model(), budget=budget) as events:
        seen = [event async for event in events]
        result = await events.result()
    (warning,) = [e for e in seen if isinstance(e, BudgetUnpriced)]
    assert (warning.max_usd, warning.model) == (0.02, "scripted")
    first_call = next(e for e in seen if isinstance(e, ModelCompleted))
    assert seen.index(warning) < seen.index(first_call)
    # the unpriced actor calls count against no USD limit; the priced critic's do
    assert result.stop_reason == "budget" and result.usage.unpriced_calls >= 1


async def test_without_a_usd_limit_there_is_no_warning() -> None:
    budget = jeeves.Budget(max_tokens=10_000)
    async with jeeves.stream(_loop(), "Write.", model=_model(), budget=budget) as events:
        seen = [event async for event in events]
    assert not [e for e in seen if isinstance(e, BudgetUnpriced)]
