"""Retries and fallbacks along a route, with scripted models (no network), on asyncio and trio."""

from __future__ import annotations

import pytest

from jeeves.errors import BadResponse, ModelError, ModelTimeout, ProviderError, RateLimited
from jeeves.messages import Message, ModelRequest, ModelResponse
from jeeves.models.base import Route
from jeeves.models.fallback import _delay, complete_with_fallbacks
from jeeves.models.testing import ScriptedModel

pytestmark = pytest.mark.anyio


REQUEST = ModelRequest(messages=[Message.user("hi")])
Notice = tuple[str, str, int, type[ModelError], float]


class Notices:
    def __init__(self) -> None:
        self.seen: list[Notice] = []

    async def __call__(
        self, failed: str, following: str, attempt: int, error: ModelError, delay: float
    ) -> None:
        self.seen.append((failed, following, attempt, type(error), delay))


def rate_limited(retry_after: float | None = None) -> RateLimited:
    error = RateLimited("slow down")
    error.retry_after = retry_after  # type: ignore[attr-defined]
    return error


async def test_a_first_success_is_not_a_fallback() -> None:
    model = ScriptedModel(["hello"])

    response, fell_back = await complete_with_fallbacks(model, Route(model="a"), REQUEST)

    assert (response.text, response.model, fell_back) == ("hello", "a", False)
    assert [r.model for r in model.requests] == ["a"]
    assert REQUEST.model == "", "the caller's request is not changed"


async def test_retryable_errors_retry_then_fall_back_with_notices() -> None:
    model = ScriptedModel(
        [rate_limited(), ModelTimeout("slow"), ProviderError("boom", status_code=503), "ok"]
    )
    notices = Notices()
    route = Route(model="a", fallbacks=("b",), retries=1, backoff_s=0.001)

    response, fell_back = await complete_with_fallbacks(model, route, REQUEST, on_retry=notices)

    assert (response.text, response.model, fell_back) == ("ok", "b", True)
    assert [r.model for r in model.requests] == ["a", "a", "b", "b"]
    assert notices.seen == [
        ("a", "a", 1, RateLimited, 0.001),
        ("a", "b", 2, ModelTimeout, 0.0),
        ("b", "b", 1, ProviderError, 0.001),
    ]


async def test_a_non_retryable_error_stops_at_once() -> None:
    model = ScriptedModel([ProviderError("unknown parameter", status_code=400), "never used"])
    route = Route(model="a", fallbacks=("b",), retries=3, backoff_s=0)

    with pytest.raises(ProviderError) as caught:
        await complete_with_fallbacks(model, route, REQUEST)

    assert caught.value.model == "a", "the failing model is filled in"
    assert len(model.requests) == 1


async def test_a_bad_response_is_retried_then_falls_back() -> None:
    """An unusable reply (a proxy's page, a cut-off stream) is usually passing: tried again."""
    model = ScriptedModel([BadResponse("an HTML page"), BadResponse("cut off"), "ok"])
    route = Route(model="a", fallbacks=("b",), retries=1, backoff_s=0)

    response, fell_back = await complete_with_fallbacks(model, route, REQUEST)

    assert (response.text, fell_back) == ("ok", True)
    assert [r.model for r in model.requests] == ["a", "a", "b"]


async def test_each_attempt_carries_the_routes_timeout() -> None:
    model = ScriptedModel([ModelTimeout("slow"), "ok"])
    route = Route(model="a", fallbacks=("b",), retries=0, timeout_s=4.5)

    await complete_with_fallbacks(model, route, REQUEST)

    assert [(r.model, r.timeout_s) for r in model.requests] == [("a", 4.5), ("b", 4.5)]


async def test_a_client_error_status_is_not_retried() -> None:
    model = ScriptedModel([ProviderError("bad request", status_code=400), "never used"])

    with pytest.raises(ProviderError):
        await complete_with_fallbacks(model, Route(model="a", retries=2, backoff_s=0), REQUEST)

    assert len(model.requests) == 1


async def test_the_last_error_is_raised_when_every_model_fails() -> None:
    first, last = ProviderError("first"), ProviderError("last", model="set-by-client")
    model = ScriptedModel([first, last])

    with pytest.raises(ProviderError) as caught:
        await complete_with_fallbacks(model, Route(model="a", fallbacks=("b",), retries=0), REQUEST)

    assert caught.value is last
    assert caught.value.model == "set-by-client", "a model named by the client is kept"


async def test_streamed_text_goes_to_on_delta() -> None:
    pieces: list[str] = []

    async def on_delta(text: str) -> None:
        pieces.append(text)

    await complete_with_fallbacks(
        ScriptedModel(["one two three"]), Route(model="a"), REQUEST, on_delta=on_delta
    )

    assert "".join(pieces) == "one two three"
    assert len(pieces) == 3


async def test_a_model_named_by_the_client_is_kept() -> None:
    model = ScriptedModel([ModelResponse(text="hi", model="a-2024-08-06")])

    response, _ = await complete_with_fallbacks(model, Route(model="a"), REQUEST)

    assert response.model == "a-2024-08-06"


@pytest.mark.parametrize(
    ("attempt", "retry_after", "expected"),
    [(0, None, 0.5), (2, None, 2.0), (0, 3, 3.0), (2, 1.0, 2.0), (0, 600, 60.0), (10, None, 60.0)],
)
def test_delay_doubles_honours_retry_after_and_is_capped(
    attempt: int, retry_after: float | None, expected: float
) -> None:
    delay = _delay(Route(model="a", backoff_s=0.5), attempt, rate_limited(retry_after))

    assert delay == expected
    assert isinstance(delay, float)
