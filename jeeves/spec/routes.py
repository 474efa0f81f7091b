"""A spec's route keys against the sessions it runs.

A `[models]` key, a `--model ROLE=…` or a `[demo.script]` key that no session of the
spec would ever look up is a mistake, and a quiet one: a typo in `critik = "openai/gpt-4o"`
sends the critic to the default model, and the first sign is the bill. Building a spec checks
every key with `jeeves._run.routes.unmatched_key`, the check `jeeves.run(models=...)` makes:
it names the key, the sessions and the keys that would match.

`routing` is the same knowledge turned the other way: for every session that calls a
model, the route it gets and the key that chose it, as `jeeves validate` prints.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from jeeves._run.context import Caller
from jeeves.models.base import Route
from jeeves.models.router import Router, role_keys

__all__ = ["RoutedCall", "routing"]


@dataclass(frozen=True)
class RoutedCall:
    """A session that calls a model, and where its calls go."""

    path: tuple[str, ...]
    """The session's role path."""
    key: str | None
    """The route key that matched (`critic`, `default`); None when pinned or unrouted."""
    route: Route | None
    """The route its calls take; None when no key matches (or pinned: see `pinned`)."""
    pinned: bool = False
    """The session pins its own model in the spec, so no key is looked up."""


def routing(found: Sequence[Caller], router: Router) -> list[RoutedCall]:
    """Each caller's route under `router`, in tree order, one line per session path."""
    rows: list[RoutedCall] = []
    for caller in dict.fromkeys(found):
        if caller.routed is None:
            rows.append(RoutedCall(caller.path, None, None, pinned=True))
            continue
        key = next((k for k in role_keys(caller.routed) if k in router.routes), None)
        rows.append(RoutedCall(caller.path, key, router.routes[key] if key else None))
    return rows
