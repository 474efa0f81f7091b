"""One budget shared by a whole run tree: tokens, USD, model calls and a deadline.

Every live step (a model call, a tool, a function critic) runs inside `BudgetMeter.live`,
a cancel scope registered with the meter; replayed steps are neither checked nor charged.

How the limits hold:
- before a model call starts, the meter refuses it when a limit is reached, or when the
  calls already in flight plus this one could cross it: each is reserved at the cost of
  the costliest call charged so far (tokens and USD), and counted at once against
  `max_model_calls`, which therefore never overshoots. A refused call cancels nothing:
  the calls in flight were admitted within the limit and may finish;
- a call is charged when it returns; the charge that reaches a limit cancels every other
  model call in flight (their partial replies are discarded), so the metered spend stays
  below the limit plus the cost of that one call (plus any sibling whose reply had already
  arrived in the same instant: it is charged and kept, since it was paid for);
- the deadline is every live step's cancel-scope deadline: a model call, tool or function
  critic still running at the deadline is cancelled where it waits.

A stopped step raises `BudgetExceeded` (the context emits `budget.exceeded` once), every
later model call raises too, and architectures return their best complete output so far.

Slices: a child session may run under a slice of its parent's budget (`BudgetMeter.slice`,
`Context.run(..., budget=)`). A slice is a meter of its own whose every live step also runs
under its parent's meter and whose every charge is forwarded to it, so the spend is counted
once in the run's totals and the run's budget stays the hard outer limit: the parent is
checked first, and a step the parent stops raises the parent's error (`slice_id` None). A
slice's own breach raises `BudgetExceeded` with `slice_id` = the slice's session, stops only
the calls inside the slice, and leaves the rest of the run going.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from contextlib import contextmanager

import anyio
from pydantic import ConfigDict, Field

from jeeves._base.validate import ConfigModel
from jeeves.errors import BudgetExceeded
from jeeves.messages import Usage, UsageTally

__all__ = ["AXES", "Budget", "BudgetMeter", "clamp"]

AXES = {"tokens": "max_tokens", "usd": "max_usd", "model_calls": "max_model_calls", "deadline": "deadline_s"}
"""Each limit's name (as `BudgetExceeded.limit` says it) and its Budget field."""


class Budget(ConfigModel):
    """Limits for a run; None means no limit on that axis.

    Limits are numbers >= 0 (ints for counts); anything else is a UserError at construction.
    """

    model_config = ConfigDict(defer_build=True, frozen=True)

    max_tokens: int | None = Field(default=None, ge=0, strict=True)
    """Input plus output tokens, summed over every model call in the tree."""
    max_usd: float | None = Field(default=None, ge=0, allow_inf_nan=False, strict=True)
    """USD, by litellm's price map. A call without a known price is unpriced: its cost is
    unknown, so it counts against no USD limit (the run emits `budget.unpriced` once)."""
    max_model_calls: int | None = Field(default=None, ge=0, strict=True)
    """Live model calls, retries excluded."""
    deadline_s: float | None = Field(default=None, ge=0, allow_inf_nan=False, strict=True)
    """Seconds from the start of the run; steps still running then are cancelled."""


_NO_BUDGET: list[Budget] = []


def _no_budget() -> Budget:
    """The empty Budget, built once (it is frozen): a run without one does not validate one."""
    if not _NO_BUDGET:
        _NO_BUDGET.append(Budget())
    return _NO_BUDGET[0]


class BudgetMeter:
    """The running total of one run (or one slice of it) against its Budget, and the live
    steps it may stop."""

    def __init__(
        self, budget: Budget | None = None, *, parent: BudgetMeter | None = None, owner: str | None = None
    ) -> None:
        self.budget = budget or _no_budget()
        self.parent = parent
        """The meter this one is a slice of (None: the run's own meter)."""
        self.owner = owner
        """The session whose slice this is (None: the run's own meter)."""
        self.announced = False
        """Whether `budget.exceeded` was emitted for this meter (once per meter)."""
        self.unpriced_announced = False
        """Whether `budget.unpriced` was emitted (once per run: kept on the run's own meter)."""
        self.stopped: BudgetExceeded | None = None
        """The first error this meter stopped a step with (a refusal or a cancellation; a
        replay restores it from the served error), as opposed to `breached`, which a charge
        may set without stopping anything."""
        self.spent = UsageTally()
        self._started = time.monotonic()
        self.breached: BudgetExceeded | None = None
        self._costliest = UsageTally()
        """Per axis, the most one charged call cost: the reservation for a call in flight."""
        self._calls: set[anyio.CancelScope] = set()
        """The model calls in flight; a breach cancels them."""
        b = self.budget
        self._unlimited = (b.max_tokens, b.max_usd, b.max_model_calls, b.deadline_s) == (None,) * 4
        """This meter's own budget limits no axis (its parent's may: see `unlimited`)."""
        self.unlimited: bool = self._unlimited and (parent is None or parent.unlimited)
        """No limit on any axis here nor in any meter above: a live step needs no check and
        no cancel scope (`jeeves._run.steps` then runs it without entering `live` at all). A slice
        with no limits of its own under a limited parent is not unlimited: the parent's
        `live` must still run (budgets are frozen, so this holds for the meter's life)."""

    def elapsed(self) -> float:
        return time.monotonic() - self._started

    def check(self, *, calls_starting: int = 0) -> None:
        """Raise BudgetExceeded if a limit is reached, or (with `calls_starting`, for a
        model call about to start) if the calls in flight plus those could cross one."""
        if self.breached is not None:
            raise self._again()
        b, s, c = self.budget, self.spent, self._costliest
        calls = len(self._calls) + calls_starting if calls_starting else 0
        for limit, allowed, spent, reserved in (
            ("tokens", b.max_tokens, s.total_tokens, calls * c.total_tokens),
            ("usd", b.max_usd, s.cost_usd, calls * c.cost_usd),
            ("model_calls", b.max_model_calls, s.model_calls, calls),
            ("deadline", b.deadline_s, self.elapsed(), 0),
        ):
            if allowed is None:
                continue
            if spent >= allowed:
                raise self._breach(limit, allowed, spent)
            if spent + reserved > allowed:
                raise self._breach(limit, allowed, spent, reserved=reserved)

    def _breach(self, limit: str, allowed: float, spent: float, *, reserved: float = 0) -> BudgetExceeded:
        why = f"{limit} spent {spent:g} of {allowed:g} allowed"
        if reserved:
            why += f", and the calls in flight or starting may need {reserved:g} more (each as much as the costliest so far)"
        self.breached = BudgetExceeded(
            (
                f"Budget exceeded: {why}; the run stops and keeps its best output. "
                f"Raise the limit in jeeves.Budget to go further."
            )
            if self.owner is None
            else (
                f"Budget slice of session {self.owner!r} exceeded: {why}; that step stops, the run goes on. "
                f"Give the step a larger slice to let it go further."
            ),
            limit=limit,
            allowed=float(allowed),
            spent=float(spent),
            slice_id=self.owner,
        )
        return self.breached

    def _again(self) -> BudgetExceeded:
        first = self.breached
        assert first is not None
        return BudgetExceeded(
            str(first), limit=first.limit, allowed=first.allowed, spent=first.spent, slice_id=first.slice_id
        )

    def charge(self, usage: Usage) -> None:
        """Count one returned call, here and in every meter this one is a slice of; the charge
        that reaches a limit cancels the calls in flight under that meter."""
        self._charge(usage)
        if self.parent is not None:
            self.parent.charge(usage)

    def charge_served(self, usage: Usage) -> None:
        """Count a call a strict replay served, in the slices only: a slice's allotment is
        recorded, so what its recorded steps spent still counts against it, while the run's
        own meter spends nothing in a replay. (A resume charges its served calls in full,
        `charge`: see `RunState.add_usage`.)"""
        if self.parent is not None:
            self._charge(usage)
            self.parent.charge_served(usage)

    def _charge(self, usage: Usage) -> None:
        self.spent.add(usage)
        if self._unlimited:  # no limit here to reach, nor reservation to make
            return
        c = self._costliest
        if usage.total_tokens > c.total_tokens:
            c.input_tokens, c.output_tokens = usage.input_tokens, usage.output_tokens
        c.cost_usd = max(c.cost_usd, usage.priced_usd)
        if self.breached is None:
            b, s = self.budget, self.spent
            for limit, allowed, spent in (
                ("tokens", b.max_tokens, s.total_tokens),
                ("usd", b.max_usd, s.cost_usd),
                ("model_calls", b.max_model_calls, s.model_calls),
            ):
                if allowed is not None and spent >= allowed:
                    self._breach(limit, allowed, spent)
                    for scope in self._calls:
                        scope.cancel()
                    return

    def unpriced_limit(self, usage: Usage) -> float | None:
        """The USD limit a live call without a known price escapes, the first time one is
        charged under one (here or in a meter above); None otherwise and every later time.
        The caller emits `budget.unpriced` with it."""
        if not usage.unpriced:
            return None
        root, limit = self, self.budget.max_usd
        while root.parent is not None:
            root = root.parent
            limit = limit if limit is not None else root.budget.max_usd
        if limit is None or root.unpriced_announced:
            return None
        root.unpriced_announced = True
        return limit

    @contextmanager
    def live(self, *, model_call: bool) -> Iterator[None]:
        """Run one live step under the budget (enter it in the task that runs the step).

        A model call is checked first (limits and reservations) and cancelled by a breach
        elsewhere; every step is cancelled at the deadline. A step stopped either way
        raises BudgetExceeded here, so the caller records it as stopped, not completed.
        """
        if self.unlimited:  # nothing here or above can refuse or stop it
            yield
            return
        if self.parent is not None:
            with self.parent.live(model_call=model_call), self._sliced(model_call=model_call):
                yield
            return
        with self._scope(model_call=model_call):
            yield

    @contextmanager
    def _sliced(self, *, model_call: bool) -> Iterator[None]:
        """A slice's own limits (its parent's are checked around it); notes what it stopped."""
        if self._unlimited:
            yield
            return
        try:
            with self._scope(model_call=model_call):
                yield
        except BudgetExceeded as exc:
            if exc.slice_id == self.owner and self.stopped is None:
                self.stopped = exc
            raise

    @contextmanager
    def _scope(self, *, model_call: bool) -> Iterator[None]:
        if model_call:
            self.check(calls_starting=1)
        else:
            self._check_deadline()
        scope = anyio.CancelScope(deadline=self._deadline())
        if model_call:
            self._calls.add(scope)
        try:
            with scope:
                yield
        finally:
            self._calls.discard(scope)
        if scope.cancelled_caught:  # the deadline fired, or a breach elsewhere cancelled this call
            if self.breached is None:
                self._check_deadline(fired=True)
            raise self._again()

    def _check_deadline(self, *, fired: bool = False) -> None:
        """Raise once the deadline has passed; `fired`: a step's scope says it has (its clock
        may read a hair ahead of ours). Other limits do not stop tools and critics."""
        allowed = self.budget.deadline_s
        if allowed is None:
            return
        elapsed = self.elapsed()
        if fired or elapsed >= allowed:
            if self.breached is not None:
                raise self._again()
            raise self._breach("deadline", allowed, max(elapsed, allowed))

    def remaining(self) -> Budget:
        """What is left on each limited axis, here and in every meter above (the least of them)."""
        b, s = self.budget, self.spent

        def left(allowed: float | None, used: float) -> float | None:
            return None if allowed is None else max(0.0, allowed - used)

        tokens, calls = left(b.max_tokens, s.total_tokens), left(b.max_model_calls, s.model_calls)
        mine = Budget(
            max_tokens=None if tokens is None else int(tokens),
            max_usd=left(b.max_usd, s.cost_usd),
            max_model_calls=None if calls is None else int(calls),
            deadline_s=left(b.deadline_s, self.elapsed()),
        )
        return mine if self.parent is None else clamp(mine, self.parent.remaining())

    def slice(self, budget: Budget, *, owner: str) -> BudgetMeter:
        """A meter for session `owner` under `budget` (already allotted: see `clamp`), whose
        steps also run under this meter and whose charges count here too."""
        return BudgetMeter(budget, parent=self, owner=owner)

    def restore(self, error: BaseException) -> None:
        """A served step's recorded error: if a slice in this chain stopped it, mark that slice
        stopped, so a replay or a resume knows what the recording knew."""
        if not isinstance(error, BudgetExceeded) or error.slice_id is None:
            return
        meter: BudgetMeter | None = self
        while meter is not None:
            if meter.owner == error.slice_id:
                meter.stopped = meter.stopped or error
                meter.breached = meter.breached or error
                return
            meter = meter.parent

    def owning(self, error: BudgetExceeded) -> BudgetMeter:
        """The meter in this chain that raised `error` (the run's own when none matches)."""
        meter = self
        while meter.parent is not None and meter.owner != error.slice_id:
            meter = meter.parent
        return meter

    def _deadline(self) -> float:
        """The deadline as the event loop's clock reads it (the scope's own clock)."""
        allowed = self.budget.deadline_s
        if allowed is None:
            return math.inf
        return anyio.current_time() + (allowed - self.elapsed())


def clamp(wanted: Budget, limit: Budget) -> Budget:
    """`wanted`, with each axis it limits held to `limit`'s (an axis `wanted` leaves unlimited
    stays unlimited: the parent's own limit still holds it)."""

    def least(a: float | None, b: float | None) -> float | None:
        return a if a is None or b is None else min(a, b)

    return Budget(
        max_tokens=None
        if wanted.max_tokens is None
        else int(least(wanted.max_tokens, limit.max_tokens) or 0),
        max_usd=least(wanted.max_usd, limit.max_usd),
        max_model_calls=None
        if wanted.max_model_calls is None
        else int(least(wanted.max_model_calls, limit.max_model_calls) or 0),
        deadline_s=least(wanted.deadline_s, limit.deadline_s),
    )
