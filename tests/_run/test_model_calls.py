"""jeeves._run.model_calls: the one model-call path: its events, retries and fallbacks
(`WithFallbacks`), cancellation and cleanup, and a provider's error scrubbed of the key."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import pytest

import jeeves
from jeeves import Agent, Router
from jeeves.errors import ProviderError, RateLimited
from jeeves.journal.memory import MemoryJournal
from jeeves.messages import ModelRequest, ModelResponse
from jeeves.models.base import DeltaSink, Route

pytestmark = pytest.mark.anyio


class Flaky:
    """Fails its first `failures` calls with a retryable error, then answers."""

    model_name = "flaky"

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.models: list[str] = []

    async def complete(self, request: ModelRequest, *, on_delta: DeltaSink | None = None) -> ModelResponse:
        self.models.append(request.model)
        if len(self.models) <= self.failures:
            raise RateLimited("slow down", status_code=429)
        if on_delta is not None:
            await on_delta("fine")
        return ModelResponse(text="fine")


def _router(client: Flaky) -> Router:
    return Router({"default": Route(model="a", fallbacks=("b",), retries=1, backoff_s=0, client=client)})


def _shape(events: list[Any]) -> list[dict[str, Any]]:
    return [e.model_dump(mode="json", exclude={"seq", "ts"}) for e in events]


@pytest.mark.parametrize("journal", [False, True])
@pytest.mark.parametrize("failures", [0, 1, 2, 4])
async def test_a_call_retries_then_falls_back_and_says_so(failures: int, journal: bool) -> None:
    """Success, a retry, a fallback, and every attempt failing: the attempts made, the
    `model.retrying` events, the fallback flag and the final error, with or without a journal."""
    client = Flaky(failures)
    seen: list[Any] = []
    error = ""
    try:
        async with jeeves.stream(
            Agent("x"),
            "t",
            router=_router(client),
            session_id="f1",
            journal=MemoryJournal() if journal else None,
        ) as events:
            async for event in events:
                seen.append(event)
    except RateLimited as exc:
        error = f"{type(exc).__name__} {exc.model} {exc.session_id}"
    shape = _shape(seen)
    assert client.models == ["a", "a", "b", "b"][: failures + 1]
    assert [e["type"] for e in shape].count("model.retrying") == min(failures, 3)
    assert error == ("RateLimited b f1" if failures == 4 else "")
    if failures < 4:
        completed = next(e for e in shape if e["type"] == "model.completed")
        assert completed["fallback"] is (failures >= 2) and completed["model"] == (
            "b" if failures >= 2 else "a"
        )


async def test_cancelling_a_call_in_flight_cleans_up_and_counts_no_step() -> None:
    """Leaving the stream while the provider is awaited cancels the provider, runs its cleanup, and leaves no step counted in flight."""
    state: dict[str, Any] = {}
    entered = anyio.Event()

    class Hanging:
        model_name = "hanging"

        async def complete(
            self, request: ModelRequest, *, on_delta: DeltaSink | None = None
        ) -> ModelResponse:
            entered.set()
            try:
                await anyio.sleep_forever()
            finally:
                state["cleaned"] = True
            raise AssertionError("unreachable")

    async with jeeves.stream(Agent("x"), "t", model=Hanging()) as events:
        state["run"] = events._state
        async for event in events:
            if event.type == "session.started":
                await entered.wait()
                break
    with anyio.fail_after(5):
        await anyio.lowlevel.checkpoint()  # the caller's next await is untouched
    assert state["cleaned"] is True
    assert state["run"].suspension.in_flight == 0
    assert state["run"].completed_steps == 0


async def test_an_error_from_a_call_fails_its_session_with_the_key_scrubbed() -> None:
    secret = "sk-test-0123456789abcdef"

    class Leaky:
        model_name = "leaky"

        async def complete(
            self, request: ModelRequest, *, on_delta: DeltaSink | None = None
        ) -> ModelResponse:
            raise ProviderError(f"bad request with key {secret}", status_code=400)

    router = Router({"default": Route(model="m", params={"api_key": secret}, client=Leaky())})
    with pytest.raises(ProviderError) as info:
        await jeeves.run(Agent("x"), "t", router=router, session_id="k1")
    assert secret not in str(info.value) and info.value.session_id == "k1" and info.value.model == "m"
