"""litellm's real Gemini adapter, driven through a fake Gemini API on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

import jeeves
from jeeves.errors import BadResponse, RateLimited
from jeeves.messages import Message, ModelRequest, ToolSpec
from jeeves.models.base import Route
from jeeves.models.fallback import complete_with_fallbacks
from jeeves.models.litellm import LiteLLMClient, _litellm
from tests.models.fake_gemini import FakeGemini
from tests.models.fake_server import Error, Garbage, Reply, Truncated, close_litellm_clients, serve

pytestmark = pytest.mark.anyio

MODEL = "gemini/gemini-2.5-flash"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # litellm is asyncio-only


@pytest.fixture(autouse=True)
async def _clients_closed() -> AsyncIterator[None]:
    yield
    await close_litellm_clients()


@pytest.fixture(scope="module")
def server() -> Iterator[FakeGemini]:
    with serve(FakeGemini()) as fake:
        yield fake


@pytest.fixture
def fake(server: FakeGemini) -> Iterator[FakeGemini]:
    server.reset()
    yield server
    assert not server.unexpected, f"requests the script did not cover: {server.unexpected!r}"
    assert server.remaining() == 0, "scripted behaviours were left unused"


@pytest.fixture
def client(fake: FakeGemini) -> LiteLLMClient:
    return LiteLLMClient(api_base=fake.base_url, api_key="gemini-fake-key")


def ask(**fields: Any) -> ModelRequest:
    return ModelRequest(
        messages=[Message.system("You are terse."), Message.user("Say hi.")], model=MODEL, **fields
    )


class Deltas:
    def __init__(self) -> None:
        self.pieces: list[str] = []

    async def __call__(self, text: str) -> None:
        self.pieces.append(text)


def price(input_tokens: int, output_tokens: int) -> float:
    entry = _litellm().model_cost[MODEL.split("/", 1)[1]]
    return input_tokens * entry["input_cost_per_token"] + output_tokens * entry["output_cost_per_token"]


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
async def test_text_with_usage_and_cost(fake: FakeGemini, client: LiteLLMClient, stream: bool) -> None:
    fake.script(Reply("Hello there, dear reader.", input_tokens=17, output_tokens=6))
    deltas = Deltas()

    response = await client.complete(ask(), on_delta=deltas if stream else None)

    assert response.text == "Hello there, dear reader."
    assert ("".join(deltas.pieces), len(deltas.pieces) > 1) == (
        (response.text, True) if stream else ("", False)
    )
    assert (response.usage.input_tokens, response.usage.output_tokens) == (17, 6)
    assert response.usage.cost_usd == pytest.approx(price(17, 6))
    seen = fake.requests[0]
    endpoint = "streamGenerateContent" if stream else "generateContent"
    assert seen.path == f"/models/gemini-2.5-flash:{endpoint}"
    assert seen.query == ({"alt": "sse"} if stream else {})
    assert seen.headers["x-goog-api-key"] == "gemini-fake-key"
    assert seen.body["system_instruction"] == {"parts": [{"text": "You are terse."}]}
    assert seen.body["contents"] == [{"role": "user", "parts": [{"text": "Say hi."}]}]


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
async def test_function_calls_come_back_as_tool_calls(
    fake: FakeGemini, client: LiteLLMClient, stream: bool
) -> None:
    arguments = {"city": "Lisbon", "days": [1, 2]}
    fake.script(Reply("Checking.", calls=(("forecast", arguments),)))
    tool = ToolSpec(
        name="forecast",
        description="Weather.",
        parameters={"type": "object", "properties": {"city": {"type": "string"}}},
    )

    response = await client.complete(ask(tools=[tool]), on_delta=Deltas() if stream else None)

    assert [(c.name, json.loads(c.arguments)) for c in response.tool_calls] == [("forecast", arguments)]
    assert response.tool_calls[0].id
    assert response.finish_reason == "tool_calls"
    (declared,) = fake.requests[0].body["tools"][0]["function_declarations"]
    assert declared["name"] == "forecast"


async def test_structured_output_sends_the_schema(fake: FakeGemini, client: LiteLLMClient) -> None:
    schema = {"type": "object", "properties": {"score": {"type": "number"}}, "required": ["score"]}
    fake.script(Reply('{"score": 0.5}'))

    response = await client.complete(ask(output_schema=schema, output_name="Verdict"))

    assert json.loads(response.text) == {"score": 0.5}
    config = fake.requests[0].body["generationConfig"]
    assert config["response_mime_type"] == "application/json"
    assert "score" in json.dumps(config)


async def test_usage_and_cost_per_role(fake: FakeGemini) -> None:
    fake.script(Reply("A draft.", input_tokens=40, output_tokens=9))
    route = Route(model=MODEL, params={"api_base": fake.base_url, "api_key": "k"})

    result = await jeeves.run(jeeves.Agent("Write."), "Go.", models={"default": route})

    (usage,) = result.usage_by_role.values()
    assert (usage.input_tokens, usage.output_tokens, usage.model_calls) == (40, 9, 1)
    assert usage.cost_usd == pytest.approx(price(40, 9))
    assert fake.count(streamed=False) == 1, "nobody reads the deltas: the non-streaming endpoint"


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
async def test_garbage_is_a_retried_bad_response(
    fake: FakeGemini, client: LiteLLMClient, stream: bool
) -> None:
    fake.script(Garbage(), Reply("Recovered."))
    route = Route(model=MODEL, retries=1, backoff_s=0)

    response, _ = await complete_with_fallbacks(client, route, ask(), on_delta=Deltas() if stream else None)

    assert response.text == "Recovered."
    assert len(fake.requests) == 2


@pytest.mark.xfail(
    strict=True,
    reason="litellm 1.110 ends every Gemini stream with finish_reason 'stop', so a stream cut "
    "between two events reads as complete (docs/concepts/routing.md)",
)
async def test_a_stream_cut_between_events_is_a_bad_response(fake: FakeGemini, client: LiteLLMClient) -> None:
    fake.script(Truncated("one two three", events=3))
    with pytest.raises(BadResponse):
        await client.complete(ask(), on_delta=Deltas())


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
async def test_a_quota_error_is_rate_limited_with_the_providers_message(
    fake: FakeGemini, client: LiteLLMClient, stream: bool
) -> None:
    fake.script(Error(429, "Resource has been exhausted (e.g. check quota)."))

    with pytest.raises(RateLimited) as caught:
        await client.complete(ask(), on_delta=Deltas() if stream else None)

    message = str(caught.value)
    assert "(Resource has been exhausted (e.g. check quota).)" in message
    assert "\n" not in message and "{" not in message
