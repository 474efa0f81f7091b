"""Which parameter names hold credentials, and copies of parameters without them."""

from __future__ import annotations

import contextlib
import json
import traceback
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import jeeves
from jeeves import ActorCritic, Agent, FunctionModel, LLMCritic, Route
from jeeves._base.redact import (
    REDACTED,
    is_credential,
    mask_credentials,
    scrub,
    scrub_error,
    strip_credentials,
)
from jeeves.errors import JeevesError, ProviderError, RateLimited, ReplayDivergence
from jeeves.events import EVENT_ADAPTER, Event, SessionFailed
from jeeves.journal.memory import MemoryJournal
from jeeves.messages import ModelRequest
from jeeves.telemetry import OTelTracer
from jeeves.testing import Reply
from tests.models.mock_openai import Fail, serve

pytestmark = pytest.mark.anyio

KEY = "sk-live-7f3a9c2e-never-in-an-event"
ROTATED = "sk-live-0b1d4e8f-rotated-in"


@pytest.mark.parametrize(
    "name",
    [
        "api_key",
        "API_KEY",
        "apiKey",
        "XApiKey",
        "APIKey",
        "apikey",
        "api-key",
        "X-API-Key",
        "x-goog-api-key",
        "anthropic_api_key",
        "token",
        "access_token",
        "accessToken",
        "X-Auth-Token",
        "azure_ad_token",
        "aws_session_token",
        "aws_secret_access_key",
        "aws_access_key_id",
        "private_key",
        "Ocp-Apim-Subscription-Key",
        "secret",
        "client_secret",
        "password",
        "Authorization",
        "Proxy-Authorization",
        "Cookie",
        "Set-Cookie",
        "vertex_credentials",
        "basic_auth",
    ],
)
def test_credential_names(name: str) -> None:
    assert is_credential(name)


@pytest.mark.parametrize(
    "name",
    [
        "max_tokens",
        "max_completion_tokens",
        "maxTokens",
        "budget_tokens",
        "eos_token_id",
        "tokenizer",
        "temperature",
        "top_k",
        "seed",
        "api_base",
        "base_url",
        "prompt_cache_key",
        "idempotency_key",
        "key",
        "keyword",
        "author",
        "extra_headers",
        "headers",
        "X-Trace-Id",
        "user",
        "",
    ],
)
def test_names_that_are_not_credentials(name: str) -> None:
    assert not is_credential(name)


def test_non_string_keys_are_not_credentials() -> None:
    assert not is_credential(3)
    assert strip_credentials({3: "x"}) == {3: "x"}


PARAMS = {
    "temperature": 0.2,
    "api_key": KEY,
    "extra_headers": {"Authorization": f"Bearer {KEY}", "X-Trace-Id": "t-1"},
    "auth": {"type": "bearer", "token": KEY},
    "extra_body": [{"x-api-key": KEY, "region": "eu"}],
    "stop": ("END",),
}


def test_strip_removes_credentials_at_every_depth_and_keeps_the_rest() -> None:
    assert strip_credentials(PARAMS) == {
        "temperature": 0.2,
        "extra_headers": {"X-Trace-Id": "t-1"},
        "auth": {"type": "bearer"},  # a mapping under a credential name keeps its shape
        "extra_body": [{"region": "eu"}],
        "stop": ("END",),
    }
    assert PARAMS["api_key"] == KEY  # a copy: the live call still gets the key


def test_mask_shows_where_credentials_were() -> None:
    masked = mask_credentials(PARAMS)
    assert KEY not in repr(masked)
    assert masked["api_key"] == masked["extra_headers"]["Authorization"] == REDACTED
    assert masked["auth"] == {"type": "bearer", "token": REDACTED}
    assert masked["extra_headers"]["X-Trace-Id"] == "t-1"


def test_parameters_without_credentials_come_back_equal() -> None:
    params = {"temperature": 0.2, "max_tokens": 5, "extra_headers": {"X-Trace-Id": "t"}, "stop": ["a"]}
    assert strip_credentials(params) == mask_credentials(params) == params


def test_a_request_repr_masks_its_credentials() -> None:
    request = ModelRequest(messages=[], params=PARAMS)
    assert KEY not in repr(request) and KEY not in str(request)
    assert request.params["api_key"] == KEY


def _keyed(key: str, instructions: str = "You write.") -> ActorCritic:
    """An actor and a critic that both carry `key` in their params and headers."""
    headers = {"extra_headers": {"Authorization": f"Bearer {key}"}}
    actor = Agent(instructions, role="writer", params={"api_key": key, "temperature": 0, **headers})
    critic = LLMCritic("You review.", params={"api_key": key, **headers})
    return ActorCritic(actor, critic, max_rounds=1)


def _answer(request: ModelRequest) -> Reply:
    if request.output_schema is not None:
        return Reply(text='{"score": 0.9, "issues": [], "summary": "fine"}')
    return Reply(text="A draft.")


async def _events(arch: ActorCritic, **kwargs: object) -> list[Event]:
    seen: list[Event] = []
    with contextlib.suppress(ReplayDivergence):
        async with jeeves.stream(arch, "Write.", session_id="s", **kwargs) as events:  # type: ignore[arg-type]
            async for event in events:
                seen.append(event)
    return seen


async def test_no_event_carries_a_credential() -> None:
    model = FunctionModel(_answer)
    route = Route(model="openai/gpt-4o-mini", client=model, params={"api_key": KEY})
    journal = MemoryJournal()
    seen = await _events(_keyed(KEY), model=route, journal=journal)
    # a replay whose request changed fails with a diff, which its session.failed events carry
    seen += await _events(_keyed(ROTATED, "You write tersely."), journal=journal, mode="replay")

    assert {e.type for e in seen} >= {"model.delta", "model.completed", "critique", "session.completed"}
    failed = [e for e in seen if isinstance(e, SessionFailed)]
    assert failed and all(e.error_type == "ReplayDivergence" for e in failed)
    assert "You write tersely." in failed[0].message
    for text in ("\n".join(EVENT_ADAPTER.dump_json(e).decode() for e in seen), repr(seen)):
        assert KEY not in text and ROTATED not in text
    assert all(r.params["api_key"] == KEY for r in model.requests)  # the provider still gets the key
    assert all(r.params["extra_headers"] == {"Authorization": f"Bearer {KEY}"} for r in model.requests)


def test_scrub_replaces_credential_values_quoted_in_text() -> None:
    params = {"api_key": KEY, "extra_headers": {"Authorization": f"Bearer {ROTATED}"}, "api_base": "http://h"}
    text = f"401 for key={KEY} (sent 'Bearer {ROTATED}') at http://h"
    assert scrub(text, params) == f"401 for key={REDACTED} (sent '{REDACTED}') at http://h"
    assert scrub(f"token {ROTATED} rejected", params) == f"token {REDACTED} rejected"
    assert scrub("a tax on x", {"api_key": "x"}) == "a tax on x"  # a placeholder key is not searched for


async def test_a_provider_error_quoting_the_key_reaches_no_event_journal_or_caller() -> None:
    def provider(request: ModelRequest) -> Reply:
        if len(model.requests) == 1:
            raise RateLimited(f"429 for https://api.example/v1?key={KEY}")
        raise ProviderError(f"401: 'Bearer {ROTATED}' is not a valid key", status_code=401)

    model = FunctionModel(provider)
    route = Route(
        model="openai/gpt-4o-mini",
        client=model,
        params={"extra_headers": {"Authorization": f"Bearer {ROTATED}"}},
        retries=1,
        backoff_s=0,
    )
    journal = MemoryJournal()
    seen: list[Event] = []
    with pytest.raises(ProviderError) as info:
        async with jeeves.stream(
            Agent("x", params={"api_key": KEY}), "t", model=route, journal=journal, session_id="s"
        ) as events:
            async for event in events:
                seen.append(event)

    assert str(info.value) == f"401: '{REDACTED}' is not a valid key"
    assert [e.type for e in seen if e.type in ("model.retrying", "session.failed")] == [
        "model.retrying",
        "session.failed",
    ]
    step = await journal.get_step("s", 0)
    assert step is not None and step.error is not None
    shown = "\n".join(EVENT_ADAPTER.dump_json(e).decode() for e in seen) + step.model_dump_json()
    assert f"?key={REDACTED}" in shown
    assert KEY not in shown and ROTATED not in shown


class _SDKError(Exception):
    """Like litellm's and the OpenAI SDK's errors: `str()` shows `message`, not the args."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


def test_scrub_error_reaches_the_chained_errors_a_traceback_prints() -> None:
    params = {"api_key": KEY}
    try:
        try:
            raise _SDKError(f"AuthenticationError: bad key {KEY}")
        except _SDKError as inner:
            raise ProviderError(f"Model failed ({inner}); check the key", status_code=401) from inner
    except ProviderError as error:
        scrub_error(error, params)
        printed = "".join(traceback.format_exception(error))
    assert f"bad key {REDACTED}" in printed and KEY not in printed


def _event_text(span: ReadableSpan) -> str:
    return json.dumps([[e.name, dict(e.attributes or {})] for e in span.events])


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # litellm is asyncio-only
async def test_a_provider_that_echoes_the_key_through_litellm_leaks_it_nowhere(tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    journal = tmp_path / "runs.jsonl"
    seen: list[Event] = []
    with serve() as mock:
        mock.script(Fail(401, message=f"Incorrect API key provided: {KEY}."))
        route = Route(
            model="openai/gpt-4o-mini", params={"api_key": KEY, "api_base": mock.base_url}, retries=0
        )
        with pytest.raises(JeevesError) as info:
            async with jeeves.stream(
                Agent("x"),
                "t",
                model=route,
                journal=journal,
                session_id="s",
                tracer=OTelTracer(provider, capture_content=True),
            ) as events:
                async for event in events:
                    seen.append(event)
        assert mock.headers[0]["authorization"] == f"Bearer {KEY}"  # the provider got the key

    spans = exporter.get_finished_spans()
    assert any("exception.stacktrace" in _event_text(s) for s in spans)
    assert f"key provided: {REDACTED}" in str(info.value)
    shown = [
        str(info.value),
        "\n".join(EVENT_ADAPTER.dump_json(e).decode() for e in seen),
        journal.read_text(),
        *(repr(dict(s.attributes or {})) + _event_text(s) + str(s.status.description) for s in spans),
    ]
    assert all(KEY not in text for text in shown)
