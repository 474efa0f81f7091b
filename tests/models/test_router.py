"""Per-role routing: most specific role path first, then `default`."""

from __future__ import annotations

import pytest

from jeeves.errors import UserError
from jeeves.models.base import Route, client_name
from jeeves.models.router import Router, role_keys
from jeeves.models.testing import FunctionModel, ScriptedModel


def test_role_keys_go_from_most_to_least_specific() -> None:
    assert list(role_keys(("supervisor", "coder", "critic"))) == [
        "supervisor.coder.critic",
        "coder.critic",
        "critic",
        "default",
    ]
    assert list(role_keys(())) == ["default"]


def test_resolve_picks_the_most_specific_route() -> None:
    router = Router(
        {"critic": "openai/critic", "coder.critic": "openai/coder-critic", "default": "openai/default"}
    )

    assert router.resolve(("supervisor", "coder", "critic")).model == "openai/coder-critic"
    assert router.resolve(("supervisor", "writer", "critic")).model == "openai/critic"
    assert router.resolve(("supervisor", "coder")).model == "openai/default"
    assert router.resolve(()).model == "openai/default"


def test_no_matching_route_names_what_was_looked_up() -> None:
    router = Router({"critic": "openai/critic"})

    with pytest.raises(UserError, match=r"'coder\.actor'.*'actor'.*'default'.*routes: critic"):
        router.resolve(("coder", "actor"))


@pytest.mark.parametrize("key", ["Critic", "coder..critic", "a__b", "", "1st", "coder.Critic"])
def test_bad_route_keys_are_user_errors(key: str) -> None:
    with pytest.raises(UserError, match="(?i)route key"):
        Router({key: "openai/x"})


def test_route_values_are_coerced() -> None:
    scripted = ScriptedModel(["hi"], model_name="fake")
    route = Route(model="openai/x", retries=0)
    router = Router({"actor": "openai/actor", "critic": route, "default": scripted})

    assert router.routes["actor"] == Route(model="openai/actor")
    assert router.routes["critic"] is route
    assert router.routes["default"].client is scripted
    assert router.routes["default"].model == "fake"


@pytest.mark.parametrize("value", ["", "   ", 42, None])
def test_bad_route_values_are_user_errors(value: object) -> None:
    with pytest.raises(UserError, match="'actor'"):
        Router({"actor": value})  # type: ignore[dict-item]


def test_negative_retries_are_rejected() -> None:
    with pytest.raises(ValueError, match=r"retries=-1: should be >= 0"):
        Route(model="openai/x", retries=-1)


def test_override_returns_a_new_router() -> None:
    router = Router({"actor": "openai/a", "default": "openai/d"})

    changed = router.override({"actor": "openai/b", "critic": "openai/c"})

    assert changed.resolve(("actor",)).model == "openai/b"
    assert changed.resolve(("critic",)).model == "openai/c"
    assert router.resolve(("actor",)).model == "openai/a"
    assert "critic" not in router.routes


def test_client_for_prefers_the_routes_own_client() -> None:
    own, shared = ScriptedModel([]), FunctionModel(lambda request: "x")
    router = Router({"actor": own, "default": "openai/d"}, client=shared)

    assert router.client_for(router.resolve(("actor",))) is own
    assert router.client_for(router.resolve(("critic",))) is shared


def test_client_for_defaults_to_one_litellm_client() -> None:
    from jeeves.models.litellm import LiteLLMClient

    router = Router({"default": "openai/d"})
    client = router.client_for(router.resolve(()))

    assert isinstance(client, LiteLLMClient)
    assert router.client_for(router.resolve(())) is client
    assert router.override({"actor": "openai/a"}).client_for(Route(model="openai/a")) is client


def test_client_name() -> None:
    assert client_name(ScriptedModel([], model_name="fake")) == "fake"
    assert client_name(object()) == "object"


def test_repr_shows_the_models() -> None:
    assert repr(Router({"default": "openai/d"})) == "Router({'default': 'openai/d'})"


def test_a_route_repr_masks_credentials_and_keeps_them_for_the_call() -> None:
    key = "sk-route-1234567890"
    route = Route(
        model="openai/gpt-4o",
        params={"api_key": key, "temperature": 0, "extra_headers": {"X-Api-Key": key, "X-Trace": "t"}},
        fallbacks=("anthropic/claude-x",),
    )
    for shown in (repr(route), str(route), f"{route}", repr(Router({"critic": route}).routes)):
        assert key not in shown and "<redacted>" in shown
    assert "'temperature': 0" in repr(route) and "'X-Trace': 't'" in repr(route)
    assert route.params["api_key"] == route.params["extra_headers"]["X-Api-Key"] == key


def test_overrides_with_the_same_objects_reuse_one_router_and_its_resolved_routes() -> None:
    model = FunctionModel(lambda r: "x")
    base = Router({"critic": "openai/gpt-4o"})
    first = base.override({"default": model})
    assert base.override({"default": model}) is first
    assert first.resolve(("loop", "actor")) is first.resolve(["loop", "actor"])
    other = base.override({"default": FunctionModel(lambda r: "y")})
    assert other is not first and other.resolve(("actor",)).client is not model
    assert base.override({"default": "openai/gpt-4o-mini"}).resolve(("a",)).model == "openai/gpt-4o-mini"
    assert base.resolve(("x", "critic")).model == "openai/gpt-4o"  # the base is unchanged


def test_override_keeps_checking_what_it_adds() -> None:
    with pytest.raises(UserError, match="bad key"):
        Router().override({"bad key": "openai/gpt-4o"})
    with pytest.raises(UserError, match="dict of role"):
        Router().override(["default"])  # type: ignore[arg-type]


def test_a_router_keeps_a_bounded_number_of_overrides() -> None:
    from jeeves.models import router as module

    base = Router()
    for i in range(module._OVERRIDES_MAX + 5):
        base.override({"default": f"openai/{i}"})
    assert len(base._overrides) == module._OVERRIDES_MAX
