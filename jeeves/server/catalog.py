"""What a server can run: named architectures, and the router each run gets.

Entries are architectures or zero-argument factories. A factory is called once per run,
which is what stateful pieces need: a `ScriptedModel` is consumed by the run it serves,
so an offline demo builds a fresh one (in the factory, or in a router factory) each time.
A factory may also return `(architecture, router)`: that entry's runs use its own router
instead of the catalog's (each served spec has its own `[models]`), or
`(architecture, router, approvals)`: its runs also use their own approval policy (a
spec's `[approvals]`) instead of the server's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from jeeves._run.context import Architecture
from jeeves.approvals.decide import Approvals
from jeeves.errors import UserError
from jeeves.models.router import Router

__all__ = ["ArchitectureLike", "Catalog", "RouterLike", "UnknownArchitecture"]

ArchitectureLike = (
    Architecture
    | Callable[[], Architecture]
    | Callable[[], tuple[Architecture, Router]]
    | Callable[[], tuple[Architecture, Router, Approvals | None]]
)
"""An architecture, or a factory called once per run (returning it, or it and its own router,
and maybe its own approval policy)."""
RouterLike = Router | Callable[[], Router] | None
"""A router, a factory called once per run, or None (an empty router: agents pin models)."""


class UnknownArchitecture(UserError, LookupError):
    """A run asked for an architecture name the server does not have."""


@dataclass(frozen=True)
class Catalog:
    """Named architectures plus the router runs use; `build(name)` gives one run's pieces."""

    architectures: Mapping[str, ArchitectureLike]
    router: RouterLike = None
    _names: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        for name, entry in self.architectures.items():
            if not isinstance(name, str) or not name or "/" in name:
                raise UserError(f"Architecture name {name!r} must be a non-empty string without '/'.")
            if not callable(entry) and not isinstance(entry, Architecture):
                raise UserError(
                    f"Architecture {name!r} is {entry!r}; give an architecture (an Agent, a Supervisor…) "
                    f"or a function that returns one."
                )
        object.__setattr__(self, "_names", tuple(self.architectures))

    @property
    def names(self) -> tuple[str, ...]:
        return self._names

    def build(self, name: str) -> tuple[Architecture, Router | None]:
        """A fresh (architecture, router) for one run of `name`."""
        arch, router, _ = self.build_with_policy(name)
        return arch, router

    def build_with_policy(self, name: str) -> tuple[Architecture, Router | None, Approvals | None]:
        """A fresh (architecture, router, the entry's own approval policy or None) for one run of `name`."""
        entry = self.architectures.get(name)
        if entry is None:
            known = ", ".join(self._names) or "none"
            raise UnknownArchitecture(f"Unknown architecture {name!r}; this server has: {known}.")
        built = entry() if isinstance(entry, type) or not isinstance(entry, Architecture) else entry
        parts: tuple[object, ...] = built if isinstance(built, tuple) else (built,)
        arch, own_router, policy = (*parts, None, None)[:3]
        if policy is not None and not isinstance(policy, Approvals):
            raise UserError(
                f"The factory for architecture {name!r} returned {policy!r} as its approval policy."
            )
        if not isinstance(arch, Architecture):
            raise UserError(f"The factory for architecture {name!r} returned {arch!r}, not an architecture.")
        if own_router is not None:
            if not isinstance(own_router, Router):
                raise UserError(
                    f"The factory for architecture {name!r} returned {own_router!r}, not a Router."
                )
            return arch, own_router, policy
        router = (
            self.router() if callable(self.router) and not isinstance(self.router, Router) else self.router
        )
        return arch, router, policy

    def default_name(self) -> str | None:
        """The only architecture's name, when there is exactly one."""
        return self._names[0] if len(self._names) == 1 else None
