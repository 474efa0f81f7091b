from __future__ import annotations

import pytest

from jeeves.errors import UserError, UserTypeError
from jeeves.models.base import Route


@pytest.mark.parametrize(
    ("kwargs", "error", "shown"),
    [
        ({"retries": -1}, UserError, r"retries=-1: should be >= 0 \(retries: Extra attempts"),
        ({"retries": "3"}, UserTypeError, r"retries='3': should be a valid integer"),
        ({"retries": 1.5}, UserTypeError, r"retries=1\.5: should be a valid integer"),
        ({"backoff_s": -5}, UserError, r"backoff_s=-5: should be >= 0 \(backoff_s: First retry delay"),
        ({"backoff_s": float("inf")}, UserError, r"backoff_s=inf: should be a finite number"),
        ({"backoff_s": "1"}, UserTypeError, r"backoff_s='1': should be a valid number"),
        ({"model": ""}, UserError, r"model='': string should have at least 1 character"),
        ({"modle": "m/x"}, UserError, r"modle= is not an argument of Route; its arguments are: model, "),
        ({"fallbacks": ["m/y", 1]}, UserTypeError, r"fallbacks\[1\]=1: should be a valid string"),
    ],
)
def test_bad_route_arguments_are_user_errors_naming_the_value(
    kwargs: dict[str, object], error: type[UserError], shown: str
) -> None:
    arguments: dict[str, object] = {"model": "m/x", **kwargs}
    with pytest.raises(error, match=shown) as info:
        Route(**arguments)  # type: ignore[arg-type]
    message = str(info.value)
    assert message.startswith("Invalid argument for Route:")
    assert message.endswith("Fix the call; see help(jeeves.Route).")
    assert "pydantic" not in message


def test_every_bad_route_argument_is_reported_at_once() -> None:
    with pytest.raises(UserError) as info:
        Route(model="m/x", retries=-1, backoff_s=-5)
    assert "retries=-1" in str(info.value) and "backoff_s=-5" in str(info.value)
    assert str(info.value).startswith("Invalid arguments for Route:")


def test_a_route_without_a_model_says_it_is_required() -> None:
    with pytest.raises(UserError, match="model= is required"):
        Route()  # type: ignore[call-arg]


def test_good_routes_keep_their_values() -> None:
    route = Route(model="m/x", retries=0, backoff_s=1, fallbacks=("m/y",))
    assert (route.retries, route.backoff_s, route.fallbacks) == (0, 1.0, ("m/y",))
