"""The litellm adapter, through litellm's real HTTP path, against a scripted local server."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import anyio
import anyio.lowlevel
import pytest

import jeeves
from jeeves.agent.agent import Agent
from jeeves.errors import (
    BadResponse,
    InvalidCredentials,
    MissingCredentials,
    ModelError,
    ModelTimeout,
    ProviderError,
    RateLimited,
    UserError,
)
from jeeves.messages import Message, ModelRequest, ToolCall, ToolSpec
from jeeves.models.base import DEFAULT_TIMEOUT_S, Route
from jeeves.models.fallback import complete_with_fallbacks
from jeeves.models.litellm import LiteLLMClient, _litellm, map_litellm_error
from jeeves.models.router import Router
from tests.conftest import REPO, subprocess_env
from tests.memory_journal import DictJournal
from tests.models.mock_openai import (
    Behaviour,
    Calls,
    CutOff,
    Fail,
    Hang,
    Html,
    Malformed,
    MockOpenAI,
    Text,
    Tool,
    serve,
)

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    """litellm is asyncio-only (a fixture, not the parametrize mark: this module has sync tests too)."""
    return "asyncio"


PRICED = "openai/gpt-4o-mini"
UNPRICED = "openai/primary"


@pytest.fixture(scope="module")
def server() -> Iterator[MockOpenAI]:
    with serve() as mock:
        yield mock


@pytest.fixture
def mock(server: MockOpenAI) -> Iterator[MockOpenAI]:
    server.reset()
    yield server
    assert not server.unexpected, f"requests the script did not cover: {server.unexpected!r}"
    assert server.remaining() == 0, "scripted behaviours were left unused"


@pytest.fixture
def client(mock: MockOpenAI) -> LiteLLMClient:
    return LiteLLMClient(api_base=mock.base_url, api_key="test-key")


def ask(text: str = "Say hello.", model: str = PRICED, **fields: Any) -> ModelRequest:
    messages = [Message.system("You are terse."), Message.user(text)]
    return ModelRequest(messages=messages, model=model, **fields)


class Deltas:
    def __init__(self) -> None:
        self.pieces: list[str] = []

    async def __call__(self, text: str) -> None:
        self.pieces.append(text)


async def test_streamed_text_arrives_in_pieces_with_usage_and_cost(
    mock: MockOpenAI, client: LiteLLMClient
) -> None:
    mock.script(Text("Hello there, dear reader.", prompt_tokens=12, completion_tokens=7))
    deltas = Deltas()

    response = await client.complete(ask(), on_delta=deltas)

    assert len(deltas.pieces) >= 3
    assert "".join(deltas.pieces) == response.text == "Hello there, dear reader."
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.model_calls) == (
        12,
        7,
        1,
    )
    assert response.usage.cost_usd == pytest.approx(12 * 0.15e-6 + 7 * 0.6e-6)
    assert response.model == PRICED
    assert response.finish_reason == "stop"
    body = mock.requests[0]
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["model"] == "gpt-4o-mini"
    assert mock.headers[0]["authorization"] == "Bearer test-key"


async def test_non_streamed_text_has_usage_and_cost(mock: MockOpenAI, client: LiteLLMClient) -> None:
    mock.script(Text("Hello.", prompt_tokens=30, completion_tokens=2))

    response = await client.complete(ask())

    assert response.text == "Hello."
    assert response.usage.total_tokens == 32
    assert response.usage.cost_usd > 0
    assert "stream" not in mock.requests[0]


async def test_a_model_without_a_price_is_unpriced(mock: MockOpenAI, client: LiteLLMClient) -> None:
    mock.script(Text("Hi."), Text("Hi."))

    streamed = await client.complete(ask(model=UNPRICED), on_delta=Deltas())
    whole = await client.complete(ask(model=UNPRICED))

    for response in (streamed, whole):
        assert response.usage.cost_usd is None and response.usage.unpriced == 1  # unknown, never $0
        assert response.usage.input_tokens == 12
        assert response.model == UNPRICED


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
async def test_a_tool_call_comes_back_with_its_arguments(
    mock: MockOpenAI, client: LiteLLMClient, stream: bool
) -> None:
    arguments = '{"text": "one two three", "limit": 10}'
    mock.script(Tool("word_count", arguments, id="call_42"))
    tool = ToolSpec(name="word_count", description="Count words.", parameters={"type": "object"})
    deltas = Deltas()

    response = await client.complete(ask(tools=[tool]), on_delta=deltas if stream else None)

    assert response.tool_calls == [ToolCall(id="call_42", name="word_count", arguments=arguments)]
    assert response.text == ""
    assert deltas.pieces == []
    assert response.finish_reason == "tool_calls"
    sent = mock.requests[0]["tools"]
    assert sent == [{"type": "function", "function": tool.model_dump()}]
    assert not any("mcp" in key for key in mock.requests[0]), "litellm's MCP hook switch stays local"


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
async def test_several_tool_calls_in_one_reply_come_back_in_order_after_its_text(
    mock: MockOpenAI, client: LiteLLMClient, stream: bool
) -> None:
    """A supervisor delegating to two workers at once: one reply, two calls, their pieces interleaved by index."""
    first, second = '{"worker": "research", "instructions": "Look it up."}', '{"worker": "coder"}'
    mock.script(Calls((Tool("delegate", first, id="call_1"), Tool("forward", second, id="call_2")), "Both."))
    deltas = Deltas()

    response = await client.complete(ask(), on_delta=deltas if stream else None)

    assert response.tool_calls == [
        ToolCall(id="call_1", name="delegate", arguments=first),
        ToolCall(id="call_2", name="forward", arguments=second),
    ]
    assert response.text == "Both."
    assert response.finish_reason == "tool_calls"
    assert "".join(deltas.pieces) == ("Both." if stream else "")


async def test_tool_turns_are_sent_in_openai_format(mock: MockOpenAI, client: LiteLLMClient) -> None:
    mock.script(Text("3 words."))
    call = ToolCall(id="call_1", name="word_count", arguments='{"text": "a b c"}')
    messages = [
        Message.user("Count."),
        Message(role="assistant", tool_calls=[call]),
        Message(role="tool", content="3", tool_call_id="call_1", name="word_count"),
    ]

    await client.complete(ModelRequest(messages=messages, model=PRICED))

    sent = mock.requests[0]["messages"]
    function = {"name": "word_count", "arguments": '{"text": "a b c"}'}
    assert sent[1]["tool_calls"] == [{"id": "call_1", "type": "function", "function": function}]
    assert sent[2] == {"role": "tool", "content": "3", "tool_call_id": "call_1", "name": "word_count"}


async def test_params_win_over_client_defaults(mock: MockOpenAI) -> None:
    mock.script(Text("ok"))
    client = LiteLLMClient(api_base=mock.base_url, api_key="test-key", temperature=0.1, max_tokens=50)

    await client.complete(ask(params={"temperature": 0.7}))

    assert mock.requests[0]["temperature"] == 0.7
    assert mock.requests[0]["max_tokens"] == 50


async def test_a_rate_limit_is_retried_once_with_notice(mock: MockOpenAI, client: LiteLLMClient) -> None:
    mock.script(Fail(429, headers={"Retry-After": "0.01"}, message="slow down"), Text("Done."))
    notices: list[tuple[str, str, int, ModelError, float]] = []

    async def on_retry(failed: str, following: str, attempt: int, error: ModelError, delay: float) -> None:
        notices.append((failed, following, attempt, error, delay))

    route = Route(model=PRICED, retries=1, backoff_s=0)
    response, fell_back = await complete_with_fallbacks(client, route, ask(), on_retry=on_retry)

    assert (response.text, fell_back) == ("Done.", False)
    assert mock.models == ["gpt-4o-mini", "gpt-4o-mini"], "litellm must not retry on its own"
    [(failed, following, attempt, error, delay)] = notices
    assert (failed, following, attempt) == (PRICED, PRICED, 1)
    assert isinstance(error, RateLimited)
    assert error.retry_after == pytest.approx(0.01)  # type: ignore[attr-defined]
    assert delay == pytest.approx(0.01)
    assert "slow down" in str(error)


async def test_a_server_error_on_the_primary_goes_to_the_fallback(
    mock: MockOpenAI, client: LiteLLMClient
) -> None:
    mock.script(Fail(500), Text("From the backup."))
    route = Route(model="openai/primary", fallbacks=("openai/backup",), retries=0, backoff_s=0)

    response, fell_back = await complete_with_fallbacks(client, route, ask(), on_delta=Deltas())

    assert mock.models == ["primary", "backup"]
    assert fell_back is True
    assert response.model == "openai/backup"
    assert response.text == "From the backup."


CUT_SHORT = '{"id": "x", "choices": [ {"mess'
NO_CHOICES = '{"id": "x", "object": "chat.completion"}'


@pytest.mark.parametrize(
    ("stream", "body"),
    [(True, CUT_SHORT), (False, CUT_SHORT), (True, ""), (False, ""), (False, NO_CHOICES)],
    ids=["streamed-cut-short", "whole-cut-short", "streamed-empty", "whole-empty", "whole-no-choices"],
)
async def test_a_malformed_body_is_a_bad_response_retried_per_the_route(
    mock: MockOpenAI, client: LiteLLMClient, stream: bool, body: str
) -> None:
    mock.script(Malformed(body), Malformed(body))
    route = Route(model=PRICED, retries=1, backoff_s=0)

    with pytest.raises(BadResponse, match="gpt-4o-mini") as caught:
        await complete_with_fallbacks(client, route, ask(), on_delta=Deltas() if stream else None)

    assert len(mock.requests) == 2, "a malformed reply is retried like a 5xx"
    assert caught.value.__cause__ is not None or not stream
    assert caught.value.model == PRICED


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
async def test_an_html_page_with_status_200_is_a_bad_response(
    mock: MockOpenAI, client: LiteLLMClient, stream: bool
) -> None:
    mock.script(Html(), Html())
    route = Route(model=PRICED, retries=1, backoff_s=0)

    with pytest.raises(BadResponse, match="gpt-4o-mini"):
        await complete_with_fallbacks(client, route, ask(), on_delta=Deltas() if stream else None)

    assert len(mock.requests) == 2


UNUSABLE = {
    "html-page": Html(),
    "no-choices": Malformed(NO_CHOICES),
    "cut-before-finish": CutOff("def add(a, b):\n    return a + b", words=3),
}


@pytest.mark.parametrize("reply", list(UNUSABLE.values()), ids=list(UNUSABLE))
async def test_an_unusable_reply_is_a_retried_bad_response_never_a_completed_step(
    mock: MockOpenAI, reply: Behaviour
) -> None:
    """A 200 that cannot be the model's answer (an HTML page, no choices, a stream closed
    before its finish reason) fails the step; it is never a short draft a critic approves."""
    mock.script(reply, reply)
    client = LiteLLMClient(api_base=mock.base_url, api_key="test-key")
    router = Router({"default": Route(model=PRICED, retries=1, backoff_s=0)}, client=client)
    journal = DictJournal()
    agent = Agent("Write add(a, b).")
    events: list[jeeves.Event] = []

    with pytest.raises(BadResponse, match="gpt-4o-mini"):
        async with jeeves.stream(agent, "Go.", router=router, journal=journal, session_id="s") as run:
            async for event in run:
                events.append(event)
            await run.result()

    assert len(mock.requests) == 2, "retried once, as the route says"
    assert [e.type for e in events if e.type.startswith("model.") and e.type != "model.delta"] == [
        "model.retrying"
    ]
    assert not any(e.type == "model.completed" for e in events)
    steps = [await journal.get_step("s", i) for i in await journal.step_indices("s")]
    assert [(step.kind, step.result, step.error["type"]) for step in steps if step] == [
        ("model", None, "BadResponse")
    ]


@pytest.mark.parametrize(("status", "kind"), [(429, RateLimited), (502, ProviderError)])
async def test_an_html_error_page_keeps_its_status(
    mock: MockOpenAI, client: LiteLLMClient, status: int, kind: type[ModelError]
) -> None:
    mock.script(Fail(status, raw="<html><body>Try again later</body></html>"))

    with pytest.raises(kind) as caught:
        await client.complete(ask())

    assert (type(caught.value), caught.value.status_code, caught.value.retryable) == (kind, status, True)


async def test_a_bad_request_is_not_retried(mock: MockOpenAI, client: LiteLLMClient) -> None:
    mock.script(Fail(400, message="unknown parameter"))
    route = Route(model=PRICED, fallbacks=("openai/backup",), retries=2, backoff_s=0)

    with pytest.raises(ProviderError, match="unknown parameter") as caught:
        await complete_with_fallbacks(client, route, ask())

    assert (caught.value.status_code, caught.value.retryable) == (400, False)
    assert len(mock.requests) == 1


async def test_json_schema_goes_as_response_format_when_the_model_supports_it(
    mock: MockOpenAI, client: LiteLLMClient
) -> None:
    schema = {"type": "object", "properties": {"score": {"type": "number"}}, "required": ["score"]}
    mock.script(Text('{"score": 0.5}'))

    await client.complete(ask(model=PRICED, output_schema=schema, output_name="verdict"))

    response_format = mock.requests[0]["response_format"]
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["name"] == "verdict"
    assert response_format["json_schema"]["schema"]["properties"] == schema["properties"]
    assert mock.requests[0]["messages"][0] == {"role": "system", "content": "You are terse."}


async def test_json_schema_goes_into_the_system_message_otherwise(
    mock: MockOpenAI, client: LiteLLMClient
) -> None:
    schema = {"type": "object", "properties": {"score": {"type": "number"}}}
    mock.script(Text('{"score": 0.5}'), Text('{"score": 0.5}'))

    await client.complete(ask(model=UNPRICED, output_schema=schema))
    await client.complete(
        ModelRequest(messages=[Message.user("Rate it.")], model=UNPRICED, output_schema=schema)
    )

    for body in mock.requests:
        assert "response_format" not in body
        system = body["messages"][0]
        assert system["role"] == "system"
        assert json.dumps(schema) in system["content"]
    assert mock.requests[0]["messages"][0]["content"].startswith("You are terse.")


async def test_a_missing_api_key_is_named_before_any_network(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)

    async def no_network(**kwargs: Any) -> None:
        raise AssertionError("litellm was called")

    monkeypatch.setattr(_litellm(), "acompletion", no_network)

    with pytest.raises(MissingCredentials, match="ANTHROPIC_API_KEY") as caught:
        await LiteLLMClient().complete(ask(model="anthropic/claude-3-5-sonnet-20240620"))

    assert caught.value.env_var == "ANTHROPIC_API_KEY"
    assert "claude-3-5-sonnet" in str(caught.value)


@pytest.mark.parametrize("stream", [False, True])
async def test_an_api_base_without_a_key_is_missing_credentials_not_a_server_error(
    mock: MockOpenAI, monkeypatch: pytest.MonkeyPatch, stream: bool
) -> None:
    """The OpenAI SDK will not call even a local server without a key; litellm calls that a 500."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    route = Route(model=PRICED, fallbacks=("openai/gpt-4o",), retries=2)
    client = LiteLLMClient(api_base=mock.base_url)

    with pytest.raises(MissingCredentials, match="OPENAI_API_KEY") as caught:
        await complete_with_fallbacks(client, route, ask(), on_delta=Deltas() if stream else None)

    assert caught.value.env_var == "OPENAI_API_KEY"
    assert "any value will do for a server that checks none" in str(caught.value)
    assert mock.requests == [], "no request, no retry, no fallback"


async def test_a_base_url_from_the_environment_still_needs_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")

    async def no_network(**kwargs: Any) -> None:
        raise AssertionError("litellm was called")

    monkeypatch.setattr(_litellm(), "acompletion", no_network)

    with pytest.raises(MissingCredentials, match="needs OPENAI_API_KEY set") as caught:
        await LiteLLMClient().complete(ask())

    assert "any value will do" in str(caught.value)


async def test_a_key_and_a_base_url_from_the_environment_reach_the_server(
    mock: MockOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """How a user points `jeeves run` at an OpenAI-compatible server without code."""
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    monkeypatch.setenv("OPENAI_API_BASE", mock.base_url)
    mock.script(Text("From the environment."))

    response = await LiteLLMClient().complete(ask())

    assert response.text == "From the environment."
    assert mock.headers[0]["authorization"] == "Bearer env-key"


async def test_a_silent_server_is_a_timeout() -> None:
    with socket.create_server(("127.0.0.1", 0)) as silent:
        port = silent.getsockname()[1]
        client = LiteLLMClient(api_base=f"http://127.0.0.1:{port}/v1", api_key="test-key", timeout=0.2)
        with pytest.raises(ModelTimeout) as caught:
            await client.complete(ask())
    assert caught.value.retryable
    assert isinstance(caught.value, TimeoutError)


class Notices:
    def __init__(self) -> None:
        self.errors: list[ModelError] = []

    async def __call__(
        self, failed: str, following: str, attempt: int, error: ModelError, delay: float
    ) -> None:
        self.errors.append(error)


HUNG = {
    "hung-server": (Hang(), False),
    "stream-stalls-mid-answer": (Hang("one two three four", words=2), True),
}


@pytest.mark.parametrize(("fault", "stream"), list(HUNG.values()), ids=list(HUNG))
async def test_a_call_that_never_ends_is_cut_at_the_routes_timeout_and_retried(
    mock: MockOpenAI, client: LiteLLMClient, fault: Behaviour, stream: bool
) -> None:
    mock.script(fault, fault)
    route = Route(model=PRICED, retries=1, backoff_s=0, timeout_s=0.3)
    notices, deltas = Notices(), Deltas()

    with anyio.fail_after(30):  # stops, not hangs
        with pytest.raises(ModelTimeout, match=r"sent nothing for 0\.3 s") as caught:
            await complete_with_fallbacks(
                client, route, ask(), on_delta=deltas if stream else None, on_retry=notices
            )

    assert len(mock.requests) == 2
    assert [type(e) for e in notices.errors] == [ModelTimeout]
    assert caught.value.retryable and isinstance(caught.value, TimeoutError)
    assert "".join(deltas.pieces) == ("one two " * 2 if stream else "")


async def test_a_stream_that_keeps_sending_is_not_cut_by_its_total_length(
    mock: MockOpenAI, client: LiteLLMClient
) -> None:
    """The timeout bounds each wait for the provider, not the whole answer."""
    mock.script(Text("a b c d e f g h", gap_s=0.15))
    route = Route(model=PRICED, retries=0, timeout_s=1.0)

    response, _ = await complete_with_fallbacks(client, route, ask(), on_delta=Deltas())

    assert response.text == "a b c d e f g h"


@pytest.mark.parametrize(
    ("given", "sent"),
    [({}, DEFAULT_TIMEOUT_S), ({"timeout_s": 7.5}, 7.5), ({"timeout_s": 7.5, "params": {"timeout": 9}}, 9.0)],
    ids=["default", "route", "params-win"],
)
async def test_the_timeout_is_sent_to_litellm(
    monkeypatch: pytest.MonkeyPatch, given: dict[str, Any], sent: float
) -> None:
    seen: list[dict[str, Any]] = []

    async def acompletion(**kwargs: Any) -> None:
        seen.append(kwargs)
        raise _litellm().RateLimitError("stop here", "openai", "m")

    monkeypatch.setattr(_litellm(), "acompletion", acompletion)
    route = Route(model=PRICED, retries=0, params=given.pop("params", {}), **given)
    request = ask(params=dict(route.params))

    with pytest.raises(RateLimited):
        await complete_with_fallbacks(LiteLLMClient(api_key="k"), route, request)

    assert seen[0]["timeout"] == sent


def test_a_routes_timeout_is_finite_by_default_and_positive() -> None:
    assert Route(model=PRICED).timeout_s == DEFAULT_TIMEOUT_S == 120.0
    with pytest.raises(UserError, match=r"timeout_s=0: should be greater than 0"):
        Route(model=PRICED, timeout_s=0)


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
@pytest.mark.parametrize("status", [401, 403])
async def test_a_refused_key_is_invalid_credentials_naming_the_variable_and_not_retried(
    mock: MockOpenAI, client: LiteLLMClient, status: int, stream: bool
) -> None:
    mock.script(Fail(status, message="Incorrect API key provided: test-key."))
    route = Route(model=PRICED, fallbacks=("openai/gpt-4o",), retries=2, backoff_s=0)

    with pytest.raises(InvalidCredentials, match="OPENAI_API_KEY") as caught:
        await complete_with_fallbacks(client, route, ask(), on_delta=Deltas() if stream else None)

    assert isinstance(caught.value, MissingCredentials), "the CLI's exit 2, like a missing key"
    assert (caught.value.env_var, caught.value.status_code) == ("OPENAI_API_KEY", status)
    assert "'openai/gpt-4o-mini' refused the API key" in str(caught.value)
    assert len(mock.requests) == 1, "no retry, no fallback"


async def test_a_refused_connection_is_a_retryable_provider_error() -> None:
    with socket.create_server(("127.0.0.1", 0)) as closed:
        port = closed.getsockname()[1]
    client = LiteLLMClient(api_base=f"http://127.0.0.1:{port}/v1", api_key="test-key")

    with pytest.raises(ProviderError) as caught:
        await client.complete(ask())

    assert caught.value.retryable


async def test_an_error_in_on_delta_is_not_translated(mock: MockOpenAI, client: LiteLLMClient) -> None:
    mock.script(Text("one two three four"))

    async def explode(text: str) -> None:
        raise KeyError("from the sink")

    with pytest.raises(KeyError, match="from the sink"):
        await client.complete(ask(), on_delta=explode)


async def test_cancelling_mid_stream_leaves_the_caller_working(
    mock: MockOpenAI, client: LiteLLMClient
) -> None:
    mock.script(Text("one two three four"), Text("after"))
    seen: list[str] = []
    with anyio.CancelScope() as scope:

        async def cancel_after_first(text: str) -> None:
            seen.append(text)
            scope.cancel()
            await anyio.lowlevel.checkpoint()

        await client.complete(ask(), on_delta=cancel_after_first)

    assert scope.cancelled_caught
    assert seen == ["one "]
    assert (await client.complete(ask())).text == "after"


@pytest.mark.parametrize(
    ("make", "kind", "status", "retryable"),
    [
        (lambda lm: lm.AuthenticationError("bad key", "openai", "m"), InvalidCredentials, 401, False),
        (lambda lm: lm.ContextWindowExceededError("too long", "m", "openai"), ProviderError, 400, False),
        (lambda lm: lm.Timeout("slow", "m", "openai"), ModelTimeout, None, True),
        (lambda lm: lm.RateLimitError("slow down", "openai", "m"), RateLimited, 429, True),
        (lambda lm: RuntimeError("something new"), ProviderError, None, True),
        (
            lambda lm: lm.exceptions.MidStreamFallbackError(
                "wrapped", "m", "openai", original_exception=lm.RateLimitError("slow down", "openai", "m")
            ),
            RateLimited,
            429,
            True,
        ),
        (
            lambda lm: lm.APIError(500, "provider returned a response with no 'choices'", "openai", "m"),
            BadResponse,
            None,
            True,
        ),
    ],
    ids=["auth", "context-window", "timeout", "rate-limit", "unknown", "mid-stream-429", "no-choices"],
)
def test_map_litellm_error(make: Any, kind: type[ModelError], status: int | None, retryable: bool) -> None:
    error = map_litellm_error(make(_litellm()), "openai/m")

    assert type(error) is kind
    assert error.status_code == status
    assert getattr(error, "retryable", False) is retryable
    assert getattr(error, "model", "openai/m") == "openai/m"
    assert "'openai/m'" in str(error)


def test_importing_the_adapter_does_not_import_litellm() -> None:
    code = "import sys, jeeves.models.litellm; print('litellm' in sys.modules)"
    run = [sys.executable, "-c", code]
    result = subprocess.run(run, cwd=REPO, env=subprocess_env(), capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


FIRST_CALLS = """
import json, sys, time
import anyio, httpx
from jeeves.messages import Message, ModelRequest
from jeeves.models import _litellm_loading as loading, litellm as adapter
from tests.models.mock_openai import Text, serve

backend = sys.argv[1]
assert "litellm" not in sys.modules
warms = []
warm = loading.warm
loading.warm = lambda lm: (warms.append(1), warm(lm))
gaps = []

async def tick(done):
    last = time.perf_counter()
    while not done.is_set():
        await anyio.sleep(0.005)  # time, not sync: a tick every 5 ms measures the loop's stalls
        now = time.perf_counter()
        gaps.append(now - last)
        last = now

async def first_calls(base_url):
    client = adapter.LiteLLMClient(api_base=base_url, api_key="test-key")
    ask = lambda: ModelRequest(messages=[Message.user("Hi.")], model="openai/gpt-4o-mini")
    async def sink(text):
        pass
    async def call(on_delta):
        if backend == "trio":  # litellm itself is asyncio-only: trio shares the import alone
            await adapter.load_litellm()
        else:
            await client.complete(ask(), on_delta=on_delta)
    done = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(tick, done)
        async with anyio.create_task_group() as calls:
            calls.start_soon(call, sink)
            calls.start_soon(call, None)
        done.set()

with serve() as mock:
    httpx.post(mock.base_url + "/chat/completions", json={})  # the mock's own first request
    mock.reset()
    mock.script(Text("Hello."), Text("Hello."))
    start = time.perf_counter()
    anyio.run(first_calls, mock.base_url, backend=backend)
    took = time.perf_counter() - start
    print(json.dumps({"took": took, "max_gap": max(gaps), "ticks": len(gaps), "warms": len(warms),
                      "requests": len(mock.requests)}))
"""


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_first_calls_import_litellm_once_without_blocking_the_event_loop(backend: str) -> None:
    """In a fresh process, two concurrent first calls share one import, made in a worker
    thread: a task ticking every 5 ms keeps ticking the whole time. Imported on the loop,
    the longest gap would be the import itself, seconds, nearly all of the time taken; off
    it, the gaps are the GIL's and the machine's (tens of milliseconds when idle)."""
    run = [sys.executable, "-c", FIRST_CALLS, backend]
    out = subprocess.run(run, cwd=REPO, env=subprocess_env(), capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    probe = json.loads(out.stdout.splitlines()[-1])

    assert probe["warms"] == 1, "concurrent first calls share one import"
    assert probe["requests"] == (2 if backend == "asyncio" else 0)
    assert probe["max_gap"] < probe["took"] / 4, f"the event loop stalled: {probe}"
    assert probe["ticks"] > 10 * probe["took"], f"the event loop hardly ran: {probe}"


def test_preload_imports_litellm_in_a_background_thread() -> None:
    code = (
        "import sys; from jeeves.models.litellm import preload; from jeeves.models._litellm_loading import _loaded\n"
        "thread = preload(); print(thread.daemon); thread.join(); print(bool(_loaded), 'litellm' in sys.modules)"
    )
    run = [sys.executable, "-c", code]
    out = subprocess.run(run, cwd=REPO, env=subprocess_env(), capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True", "True"]


@pytest.mark.live
@pytest.mark.skipif(not os.environ.get("OPENAI_API_KEY"), reason="OPENAI_API_KEY is not set")
async def test_live_openai_streams_and_prices() -> None:
    deltas = Deltas()
    response = await LiteLLMClient().complete(ask("Say hello in three words."), on_delta=deltas)
    assert response.text and "".join(deltas.pieces) == response.text
    assert response.usage.cost_usd > 0
