"""Which sessions of a tree call a model, and whether a route key reaches one of them.

A route key no session looks up is a quiet mistake: a typo in `models={"critc": ...}` sends
the critic to the default model, and the first sign is the bill. Built-in architectures say
which sessions call models and which role path each resolves
(`jeeves._run.context.model_callers`), so a run given `models=` and a spec's `[models]`
are checked by `unmatched_key`, one check for both. A tree holding an architecture or
critic of the user's own that does not say (no `model_callers` method) is not checked.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from jeeves._run.context import Caller, model_callers
from jeeves.errors import UserError
from jeeves.models.router import role_keys

__all__ = ["callers", "check_route_keys", "describe", "unmatched_key"]


def callers(arch: object, role: str | None = None) -> list[Caller] | None:
    """The sessions under `arch`, run as a root, that call a model; None if it cannot say."""
    root = role or str(getattr(arch, "role", None) or getattr(arch, "name", "run"))
    return model_callers(arch, (root,))


def unmatched_key(
    key: str, paths: Iterable[Sequence[str]], what: str, owner: str = "this spec"
) -> str | None:
    """Why `key` matches none of `paths` (for a UserError), or None when it matches one.

    A key matches a path it is an ending of (`critic` and `writer.critic` both match
    `lead.writer.critic`), as the router and ScriptedModel look keys up; `default`
    matches everything. `what` says what the paths are ("routes", "calls a model");
    `owner` names the tree ("this spec", "this architecture").
    """
    unique = {tuple(p) for p in paths}
    matching = {k for p in unique for k in role_keys(p)}
    if key in matching or key == "default":
        return None
    if not unique:
        return f"no session of {owner} calls a model, so {key!r} is never looked up; remove it."
    keys = sorted(matching, key=lambda k: (k == "default", k.count("."), k))
    close = _close_matches(key, keys, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"no session of {owner} {what} as {key!r}{hint}; use one of {', '.join(repr(k) for k in keys)}."


def check_route_keys(arch: object, keys: Iterable[str], role: str | None = None) -> None:
    """Refuse a `models=` key no session of `arch` looks up (a UserError naming it)."""
    found = callers(arch, role)
    if found is None:
        return
    routed = [c.routed for c in found if c.routed is not None]
    for key in keys:
        if problem := unmatched_key(key, routed, "routes", "this architecture"):
            raise UserError(f"models={{{key!r}: ...}}: {problem}")


def describe(arch: object, *, role: str | None = None) -> list[str]:
    """The role paths of the sessions `arch` runs that call a model, in tree order.

    Each is what a route key matches (any ending of it: `critic`, `writer.critic`), as
    `models=`, a spec's `[models]` and a ScriptedModel's script keys use them:

    ```python
    >>> jeeves.describe(ActorCritic(actor=Agent("Write."), critic=LLMCritic()))
    ['actor_critic.actor', 'actor_critic.critic']
    ```

    Raises:
        UserError: the tree holds an architecture or critic that does not say which
            sessions it runs (give it a `model_callers(path, routed)` method: see
            docs/guide/custom-architecture.md).
    """
    found = callers(arch, role)
    if found is None:
        raise UserError(
            f"{arch!r} does not say which sessions it runs: some architecture or critic in it has no "
            f"model_callers(path, routed) method; add one (docs/guide/custom-architecture.md)."
        )
    return list(dict.fromkeys(".".join(c.routed if c.routed is not None else c.path) for c in found))


def _close_matches(word: str, choices: Sequence[str], n: int) -> list[str]:
    import difflib  # only when a mistake is reported: `import jeeves` stays light

    return difflib.get_close_matches(word, choices, n=n)
