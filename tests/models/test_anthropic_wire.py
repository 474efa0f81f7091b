"""litellm's real Anthropic adapter, driven through a fake Messages API on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

import jeeves
from jeeves import ActorCritic, Agent, LLMCritic
from jeeves.errors import BadResponse, InvalidCredentials, RateLimited
from jeeves.messages import Message, ModelRequest, ToolSpec
from jeeves.models.base import Route
from jeeves.models.fallback import complete_with_fallbacks
from jeeves.models.litellm import LiteLLMClient, _litellm, price_usd
from jeeves.models.router import Router
from tests.models.fake_anthropic import FakeAnthropic
from tests.models.fake_server import Behaviour, Error, Garbage, Reply, Truncated, close_litellm_clients, serve

pytestmark = pytest.mark.anyio

MODEL = "anthropic/claude-sonnet-4-5"
UNPRICED = "anthropic/claude-3-haiku-20240307"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # litellm is asyncio-only


@pytest.fixture(autouse=True)
async def _clients_closed() -> AsyncIterator[None]:
    yield
    await close_litellm_clients()


@pytest.fixture(scope="module")
def server() -> Iterator[FakeAnthropic]:
    with serve(FakeAnthropic()) as fake:
        yield fake


@pytest.fixture
def fake(server: FakeAnthropic) -> Iterator[FakeAnthropic]:
    server.reset()
    yield server
    assert not server.unexpected, f"requests the script did not cover: {server.unexpected!r}"
    assert server.remaining() == 0, "scripted behaviours were left unused"


@pytest.fixture
def client(fake: FakeAnthropic) -> LiteLLMClient:
    return LiteLLMClient(api_base=fake.base_url, api_key="sk-ant-fake")


def ask(model: str = MODEL, **fields: Any) -> ModelRequest:
    return ModelRequest(
        messages=[Message.system("You are terse."), Message.user("Say hi.")], model=model, **fields
    )


class Deltas:
    def __init__(self) -> None:
        self.pieces: list[str] = []

    async def __call__(self, text: str) -> None:
        self.pieces.append(text)


def price(model: str, input_tokens: int, output_tokens: int) -> float:
    entry = _litellm().model_cost[model.split("/", 1)[1]]
    return input_tokens * entry["input_cost_per_token"] + output_tokens * entry["output_cost_per_token"]


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
async def test_text_with_usage_and_cost(fake: FakeAnthropic, client: LiteLLMClient, stream: bool) -> None:
    fake.script(Reply("Hello there, dear reader.", input_tokens=21, output_tokens=8))
    deltas = Deltas()

    response = await client.complete(ask(), on_delta=deltas if stream else None)

    assert response.text == "Hello there, dear reader."
    assert ("".join(deltas.pieces), len(deltas.pieces) > 1) == (
        (response.text, True) if stream else ("", False)
    )
    assert (response.usage.input_tokens, response.usage.output_tokens) == (21, 8)
    assert response.usage.cost_usd == pytest.approx(price(MODEL, 21, 8))
    assert response.finish_reason == "stop"
    seen = fake.requests[0]
    assert (seen.path, seen.streamed) == ("/v1/messages", stream)
    assert seen.headers["x-api-key"] == "sk-ant-fake" and "anthropic-version" in seen.headers
    assert seen.body["model"] == "claude-sonnet-4-5"
    assert seen.body["system"] == [{"type": "text", "text": "You are terse."}]
    assert seen.body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "Say hi."}]}]


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
async def test_tool_use_blocks_come_back_as_tool_calls(
    fake: FakeAnthropic, client: LiteLLMClient, stream: bool
) -> None:
    arguments = {"city": "Lisbon", "days": [1, 2, 3], "note": 'a "quoted" word'}
    fake.script(Reply("Looking it up.", calls=(("forecast", arguments), ("clock", {}))))
    tool = ToolSpec(name="forecast", description="Weather.", parameters={"type": "object", "properties": {}})

    response = await client.complete(ask(tools=[tool]), on_delta=Deltas() if stream else None)

    assert [(c.id, c.name, json.loads(c.arguments)) for c in response.tool_calls] == [
        ("toolu_00", "forecast", arguments),
        ("toolu_01", "clock", {}),
    ]
    assert response.text == "Looking it up."
    assert response.finish_reason == "tool_calls"
    sent = fake.requests[0].body["tools"]
    assert [(t["name"], t["input_schema"]["type"]) for t in sent] == [("forecast", "object")]


async def test_a_tool_result_goes_back_as_a_tool_result_block(
    fake: FakeAnthropic, client: LiteLLMClient
) -> None:
    fake.script(Reply("It is sunny."))
    call = jeeves.ToolCall(id="toolu_00", name="forecast", arguments='{"city": "Lisbon"}')
    messages = [
        Message.user("Weather?"),
        Message(role="assistant", content=None, tool_calls=[call]),
        Message(role="tool", content="sunny", tool_call_id="toolu_00", name="forecast"),
    ]

    await client.complete(ModelRequest(messages=messages, model=MODEL))

    user_turn = fake.requests[0].body["messages"][-1]
    assert user_turn["role"] == "user"
    assert user_turn["content"][0]["type"] == "tool_result"
    assert user_turn["content"][0]["tool_use_id"] == "toolu_00"


async def test_structured_output_is_asked_for_with_the_schema(
    fake: FakeAnthropic, client: LiteLLMClient
) -> None:
    schema = {"type": "object", "properties": {"score": {"type": "number"}}, "required": ["score"]}
    fake.script(Reply('{"score": 0.75}'))

    response = await client.complete(ask(output_schema=schema, output_name="Verdict"))

    assert json.loads(response.text) == {"score": 0.75}
    body = fake.requests[0].body
    sent = json.dumps({k: v for k, v in body.items() if k not in ("messages", "system")})
    assert '"score"' in sent, f"the schema was not sent natively: {sorted(body)}"


async def test_a_model_without_a_price_is_unpriced_not_free(
    fake: FakeAnthropic, client: LiteLLMClient
) -> None:
    fake.script(Reply("Hi.", input_tokens=9, output_tokens=2))
    assert price_usd(UNPRICED, _litellm().Usage(prompt_tokens=9, completion_tokens=2)) is None
    assert price_usd(MODEL, _litellm().Usage(prompt_tokens=9, completion_tokens=2)) == pytest.approx(
        price(MODEL, 9, 2)
    )

    response = await client.complete(ask(model=UNPRICED))

    assert (response.usage.input_tokens, response.usage.output_tokens) == (9, 2)
    assert response.usage.cost_usd is None and response.usage.unpriced == 1  # unknown, never $0


async def test_usage_and_cost_add_up_per_role(fake: FakeAnthropic) -> None:
    fake.script(
        Reply("def add(a, b): return a + b", input_tokens=30, output_tokens=12),
        Reply('{"score": 0.9, "issues": []}', input_tokens=50, output_tokens=10),
    )
    route = Route(model=MODEL, params={"api_base": fake.base_url, "api_key": "sk-ant-fake"})
    coder = ActorCritic(Agent("You write Python."), LLMCritic(), max_rounds=1)

    result = await jeeves.run(coder, "Write add(a, b).", models={"default": route})

    actor, critic = result.usage_by_role["actor"], result.usage_by_role["critic"]
    assert (actor.input_tokens, actor.output_tokens, actor.model_calls) == (30, 12, 1)
    assert (critic.input_tokens, critic.output_tokens, critic.model_calls) == (50, 10, 1)
    assert actor.cost_usd == pytest.approx(price(MODEL, 30, 12))
    assert critic.cost_usd == pytest.approx(price(MODEL, 50, 10))


NULL_USAGE = "null-usage"
BAD_STREAMS: dict[str, Behaviour] = {
    "truncated": Truncated(events=4),
    "garbage": Garbage(),
}


class NullUsage(FakeAnthropic):
    """Streams whose `message_start` carries `"usage": null` (litellm's adapter trips on it)."""

    def stream(self, reply: Reply, seen: Any) -> Iterator[str]:
        for event in super().stream(reply, seen):
            head, data = event.split("data: ", 1)
            body = json.loads(data)
            if body["type"] == "message_start":
                body["message"]["usage"] = None
            yield f"{head}data: {json.dumps(body)}\n\n"


def assert_one_line(message: str) -> None:
    assert "\n" not in message and "Traceback" not in message, message
    assert "site-packages" not in message and ".py" not in message, message


async def test_a_stream_with_null_usage_is_a_retried_bad_response_in_one_line() -> None:
    with serve(NullUsage()) as fake:
        fake.script(Reply("never read"), Reply("never read"))
        client = LiteLLMClient(api_base=fake.base_url, api_key="sk-ant-fake")
        route = Route(model=MODEL, retries=1, backoff_s=0)

        with pytest.raises(BadResponse, match="claude-sonnet-4-5") as caught:
            await complete_with_fallbacks(client, route, ask(), on_delta=Deltas())

        assert len(fake.requests) == 2, "retried as the route says"
    assert_one_line(str(caught.value))
    assert "'NoneType' object is not a mapping" in str(caught.value)
    assert caught.value.__cause__ is not None, "the chain stays for a debugger"


@pytest.mark.parametrize("reply", list(BAD_STREAMS.values()), ids=list(BAD_STREAMS))
async def test_a_bad_stream_is_a_retried_bad_response(
    fake: FakeAnthropic, client: LiteLLMClient, reply: Behaviour
) -> None:
    fake.script(reply, Reply("Recovered."))
    route = Route(model=MODEL, retries=1, backoff_s=0)

    response, _ = await complete_with_fallbacks(client, route, ask(), on_delta=Deltas())

    assert response.text == "Recovered."
    assert len(fake.requests) == 2


async def test_a_garbage_whole_reply_is_a_bad_response(fake: FakeAnthropic, client: LiteLLMClient) -> None:
    fake.script(Garbage())
    with pytest.raises(BadResponse) as caught:
        await client.complete(ask())
    assert_one_line(str(caught.value))


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
async def test_provider_errors_quote_the_providers_message_in_one_line(
    fake: FakeAnthropic, client: LiteLLMClient, stream: bool
) -> None:
    fake.script(
        Error(429, "Number of request tokens has exceeded your rate limit."), Error(401, "invalid x-api-key")
    )

    with pytest.raises(RateLimited) as limited:
        await client.complete(ask(), on_delta=Deltas() if stream else None)
    with pytest.raises(InvalidCredentials) as refused:
        await client.complete(ask(), on_delta=Deltas() if stream else None)

    assert "(Number of request tokens has exceeded your rate limit.)" in str(limited.value)
    assert "invalid x-api-key" in str(refused.value) and "ANTHROPIC_API_KEY" in str(refused.value)
    for error in (limited.value, refused.value):
        assert_one_line(str(error))
        assert "{" not in str(error), "the provider's message, not its JSON body"


async def test_a_failing_critic_reports_one_line_in_its_event_and_result() -> None:
    with serve(FakeAnthropic()) as good, serve(NullUsage()) as bad:
        good.script(Reply("def add(a, b): return a + b"))
        bad.script(Reply('{"score": 1.0}'))
        router = Router(
            {
                "actor": Route(model=MODEL, params={"api_base": good.base_url, "api_key": "k"}),
                "critic": Route(model=MODEL, params={"api_base": bad.base_url, "api_key": "k"}, retries=0),
            }
        )
        coder = ActorCritic(Agent("You write Python."), LLMCritic(), max_rounds=1)
        async with jeeves.stream(coder, "Write add(a, b).", router=router) as events:
            seen = [e async for e in events]
            result = await events.result()

    (failed,) = [e for e in seen if e.type == "critic.failed"]
    assert failed.error_type == "BadResponse"
    assert_one_line(failed.message)
    (round_,) = result.detail.rounds
    assert round_.critic_error is not None
    assert_one_line(round_.critic_error)
    assert result.output == "def add(a, b): return a + b"


async def test_only_a_call_whose_deltas_someone_reads_is_streamed(fake: FakeAnthropic, tmp_path: Any) -> None:
    route = Route(model=MODEL, params={"api_base": fake.base_url, "api_key": "k"})
    models = {"default": route}
    fake.script(Reply("One."), Reply("Two."), Reply("Three."))

    assert (await jeeves.run(Agent("Write."), "Go.", models=models)).output == "One."
    assert (fake.count(streamed=False), fake.count(streamed=True)) == (1, 0), "no reader: not streamed"
    async with jeeves.stream(Agent("Write."), "Go.", models=models) as events:
        deltas = [e async for e in events if e.type == "model.delta"]
    assert deltas and (fake.count(streamed=False), fake.count(streamed=True)) == (1, 1)
    await jeeves.run(Agent("Write."), "Go.", models=models, journal=str(tmp_path / "runs.jsonl"))
    assert fake.count(streamed=True) == 2, "a journal records the deltas for replay: streamed"


async def test_a_price_registered_with_litellm_prices_the_model(
    fake: FakeAnthropic, client: LiteLLMClient
) -> None:
    model = "anthropic/claude-priced-by-the-user"  # a name of this test's own: litellm's map is global
    fake.script(Reply("Hi.", input_tokens=1000, output_tokens=100))
    entry = {"input_cost_per_token": 0.25e-6, "output_cost_per_token": 1.25e-6}
    _litellm().register_model({model: {**entry, "litellm_provider": "anthropic", "mode": "chat"}})

    response = await client.complete(ask(model=model))

    assert response.usage.cost_usd == pytest.approx(1000 * 0.25e-6 + 100 * 1.25e-6)
