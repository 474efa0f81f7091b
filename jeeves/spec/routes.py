"""A spec's route keys against the sessions it runs.

A `[models]` key, a `--model ROLE=…` or a `[demo.script]` key that no session of the
spec would ever look up is a mistake, and a quiet one: a typo in `critik = "openai/gpt-4o"`
sends the critic to the default model, and the first sign is the bill. Built-in
architectures say which sessions call models and which role path each resolves
(`jeeves._run.context.model_callers`), so building a spec checks every key against them
and names the key, the sessions and the keys that would match. A tree holding an
architecture or critic of the user's own cannot say, and is not checked.

`routing` is the same knowledge turned the other way: for every session that calls a
model, the route it gets and the key that chose it, as `jeeves validate` prints.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from jeeves._run.context import Caller, model_callers
from jeeves.models.base import Route
from jeeves.models.router import Router, role_keys

__all__ = ["RoutedCall", "callers", "routing", "unmatched_key"]


def callers(arch: object) -> list[Caller] | None:
    """The sessions under `arch`, run as a root, that call a model; None if it cannot say."""
    root = str(getattr(arch, "role", None) or getattr(arch, "name", "run"))
    return model_callers(arch, (root,))


def unmatched_key(key: str, paths: Iterable[Sequence[str]], what: str) -> str | None:
    """Why `key` matches none of `paths` (for a UserError), or None when it matches one.

    A key matches a path it is an ending of (`critic` and `writer.critic` both match
    `lead.writer.critic`), as the router and ScriptedModel look keys up; `default`
    matches everything. `what` says what the paths are ("routes", "calls a model").
    """
    unique = {tuple(p) for p in paths}
    matching = {k for p in unique for k in role_keys(p)}
    if key in matching or key == "default":
        return None
    if not unique:
        return f"no session of this spec calls a model, so {key!r} is never looked up; remove it."
    keys = sorted(matching, key=lambda k: (k == "default", k.count("."), k))
    close = difflib.get_close_matches(key, keys, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"no session of this spec {what} as {key!r}{hint}; use one of {', '.join(repr(k) for k in keys)}."


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
