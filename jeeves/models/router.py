"""Per-role routing: which model each role's calls go to.

A session's role path runs from the root down (`("supervisor", "coder", "critic")`). The
router tries its suffixes from the longest to the shortest, then `default`:
`supervisor.coder.critic` → `coder.critic` → `critic` → `default`. So a critic nested in a
supervisor's coder can get its own model while every other critic shares one.

A route litellm will serve (a model string, no client of its own nor the router's) is
checked when the router is built: a model string litellm cannot route (`gtp-4o`, an
unknown provider prefix) is a UserError with a suggestion, before any call and without
importing litellm (`jeeves.models.known`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from jeeves._base.ids import validate_name
from jeeves._base.validate import short_repr
from jeeves.errors import UserError, UserTypeError
from jeeves.models.base import ModelClient, Route
from jeeves.models.known import model_problem

__all__ = ["Router", "check_route", "role_keys"]

RouteLike = str | Route | ModelClient
_RESOLVED_MAX = 4096
"""Role paths a router remembers its match for (a bound: role paths come from code, but an
app building them from data must not grow a long-lived router without limit)."""
_OVERRIDES_MAX = 16
"""Per-run overrides (`model=`, `models=`) a router keeps built, oldest dropped first: runs
that pass the same model objects reuse one router and its resolved routes."""


def role_keys(role_path: Sequence[str]) -> Iterator[str]:
    """Lookup keys for a role path, most specific first, ending with `default`."""
    for start in range(len(role_path)):
        yield ".".join(role_path[start:])
    yield "default"


def check_route(route: Route, key: str) -> Route:
    """`route`, once litellm can route its model and fallbacks (a UserError naming the first
    it cannot, with a suggestion); a route with its own client is not litellm's to check."""
    if route.client is None:
        for model in (route.model, *route.fallbacks):
            problem = model_problem(model)
            if problem is not None:
                raise UserError(f"Route {key!r}: {problem}")
    return route


def _check_key(key: object) -> str:
    if key == "default":
        return "default"
    if not isinstance(key, str) or not key:
        raise UserError(f"Route key {key!r} is not a role path; use e.g. 'critic' or 'coder.critic'.")
    for part in key.split("."):
        validate_name(part, what=f"role in route key {key!r}:")
    return key


class Router:
    """Maps roles to routes.

    ```python
    Router({"actor": "anthropic/claude-sonnet-4-5", "critic": "openai/gpt-4o", "default": "openai/gpt-4o-mini"})
    ```

    Values are model strings, `Route`s (params, fallbacks, retries) or `ModelClient`s. Model
    strings are served by `client`, which defaults to the litellm adapter.
    """

    def __init__(
        self, routes: Mapping[str, RouteLike] | None = None, *, client: ModelClient | None = None
    ) -> None:
        if routes is not None and not isinstance(routes, Mapping):
            raise UserTypeError(
                f"Router routes must be a dict of role → model, got {short_repr(routes)}; "
                f"e.g. Router({{'default': 'openai/gpt-4o-mini'}})."
            )
        self._routes: dict[str, Route] = {
            _check_key(k): Route.coerce(v, key=k) for k, v in (routes or {}).items()
        }
        self._client = client
        if client is None:
            for k, route in self._routes.items():
                check_route(route, k)
        self._resolved: dict[tuple[str, ...], Route] = {}
        self._overrides: dict[tuple[tuple[str, object], ...], Router] = {}

    @property
    def routes(self) -> Mapping[str, Route]:
        return dict(self._routes)

    def override(self, models: Mapping[str, RouteLike]) -> Router:
        """A router with `models` replacing or adding routes (per-run overrides)."""
        if not isinstance(models, Mapping):
            raise UserTypeError(
                f"Route overrides must be a dict of role → model, got {short_repr(models)}; "
                f"e.g. {{'critic': 'openai/gpt-4o'}}."
            )
        key = tuple((k, v if isinstance(v, str) else id(v)) for k, v in models.items())
        cached = self._overrides.get(key)
        if cached is not None:  # the same overrides as an earlier run: its router, routes resolved
            return cached
        merged = dict(self._routes)  # already checked: only the overrides are
        added = {_check_key(k): Route.coerce(v, key=k) for k, v in models.items()}
        if self._client is None:
            for k, route in added.items():
                check_route(route, k)
        merged.update(added)
        router = Router(client=self._client)
        router._routes = merged
        if len(self._overrides) >= _OVERRIDES_MAX:
            self._overrides.pop(next(iter(self._overrides)))
        self._overrides[key] = router  # its routes hold every object whose id is in `key`
        return router

    def resolve(self, role_path: Sequence[str]) -> Route:
        """The route for a role path; a UserError listing the routes when none matches.

        Resolved once per role path and router (routes never change after construction):
        every session of a run, and of later runs on this router, reuses the match.
        """
        path = tuple(role_path)
        found = self._resolved.get(path)
        if found is not None:
            return found
        for key in role_keys(path):
            route = self._routes.get(key)
            if route is not None:
                if len(self._resolved) < _RESOLVED_MAX:
                    self._resolved[path] = route
                return route
        shown = ".".join(role_path) or "(root)"
        known = ", ".join(sorted(self._routes)) or "none"
        raise UserError(
            f"No model route for role {shown!r} (looked up {list(role_keys(role_path))!r}); routes: {known}. "
            f"Add a route for one of those keys, or a 'default' route."
        )

    def client_for(self, route: Route) -> ModelClient:
        """The client that serves `route`: its own, the router's, or the litellm adapter."""
        if route.client is not None:
            return route.client
        if self._client is None:
            from jeeves.models.litellm import LiteLLMClient  # the adapter imports litellm lazily itself

            self._client = LiteLLMClient()
        return self._client

    def __repr__(self) -> str:
        return f"Router({ {k: r.model for k, r in self._routes.items()}!r})"
