"""One budget shared by a whole run tree: tokens, USD, model calls and a deadline.

The meter is checked before every live model call and charged after it; replayed calls
are neither checked nor charged. The first breach raises `BudgetExceeded` (the context
emits `budget.exceeded` once); every later check raises too, so each branch of a
parallel tree stops at its next model call and architectures return their best output so far.
"""

from __future__ import annotations

import time

from pydantic import ConfigDict, Field

from jeeves.checks import ConfigModel
from jeeves.errors import BudgetExceeded
from jeeves.messages import Usage, UsageTally

__all__ = ["Budget", "BudgetMeter"]


class Budget(ConfigModel):
    """Limits for a run; None means no limit on that axis.

    Limits are numbers >= 0 (ints for counts); anything else is a UserError at construction.
    """

    model_config = ConfigDict(defer_build=True, frozen=True)

    max_tokens: int | None = Field(default=None, ge=0, strict=True)
    """Input plus output tokens, summed over every model call in the tree."""
    max_usd: float | None = Field(default=None, ge=0, allow_inf_nan=False, strict=True)
    """USD, by litellm's price map (models without a known price cost 0)."""
    max_model_calls: int | None = Field(default=None, ge=0, strict=True)
    """Live model calls, retries excluded."""
    deadline_s: float | None = Field(default=None, ge=0, allow_inf_nan=False, strict=True)
    """Seconds from the start of the run."""


class BudgetMeter:
    """The running total of one run against its Budget."""

    def __init__(self, budget: Budget | None = None) -> None:
        self.budget = budget or Budget()
        self.spent = UsageTally()
        self._started = time.monotonic()
        self.breached: BudgetExceeded | None = None

    def check(self) -> None:
        """Raise BudgetExceeded if any limit is reached."""
        if self.breached is not None:
            raise self._again()
        b, s = self.budget, self.spent
        for limit, allowed, spent in (
            ("tokens", b.max_tokens, s.total_tokens),
            ("usd", b.max_usd, s.cost_usd),
            ("model_calls", b.max_model_calls, s.model_calls),
            ("deadline", b.deadline_s, time.monotonic() - self._started),
        ):
            if allowed is not None and spent >= allowed:
                self.breached = BudgetExceeded(
                    f"Budget exceeded: {limit} spent {spent:g} of {allowed:g} allowed; "
                    f"the run stops and keeps its best output. Raise the limit in jeeves.Budget to go further.",
                    limit=limit,
                    allowed=float(allowed),
                    spent=float(spent),
                )
                raise self.breached

    def _again(self) -> BudgetExceeded:
        first = self.breached
        assert first is not None
        return BudgetExceeded(str(first), limit=first.limit, allowed=first.allowed, spent=first.spent)

    def charge(self, usage: Usage) -> None:
        self.spent.add(usage)
