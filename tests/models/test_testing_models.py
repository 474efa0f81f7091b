"""ScriptedModel and FunctionModel: scripted answers that never make one up, on asyncio and trio."""

from __future__ import annotations

import json
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from jeeves.errors import (
    RateLimited,
    ScriptError,
    UnconsumedSteps,
    UnexpectedModelCall,
    UserError,
    UserTypeError,
)
from jeeves.messages import Message, ModelRequest, ModelResponse, ToolCall, Usage
from jeeves.models.base import ModelClient
from jeeves.models.testing import FunctionModel, Reply, ScriptedModel, call

pytestmark = pytest.mark.anyio


def ask(
    text: str = "hi", *, role_path: tuple[str, ...] = (), session_id: str = "", **fields: object
) -> ModelRequest:
    return ModelRequest(
        messages=[Message.user(text)], role_path=role_path, session_id=session_id, model="m", **fields
    )


def test_both_are_model_clients() -> None:
    assert isinstance(ScriptedModel([]), ModelClient)
    assert isinstance(FunctionModel(lambda request: ""), ModelClient)


async def test_scripts_are_matched_like_routes() -> None:
    model = ScriptedModel(
        {"job__critic_0": ["by session"], "coder.critic": ["by path"], "critic": ["by role"]}
    )

    assert (
        await model.complete(ask(role_path=("coder", "critic"), session_id="job__critic_0"))
    ).text == "by session"
    assert (await model.complete(ask(role_path=("sup", "coder", "critic")))).text == "by path"
    assert (await model.complete(ask(role_path=("coder", "critic")))).text == "by role"
    model.assert_consumed()


async def test_skip_drops_the_step_a_served_call_would_have_had() -> None:
    model = ScriptedModel({"coder.critic": ["first", "second"], "critic": ["third"]})
    model.skip("job__critic_0", ("coder", "critic"))  # served from a journal: never asked
    model.skip("job__critic_1", ("coder", "critic"))
    assert (await model.complete(ask(role_path=("coder", "critic")))).text == "third"
    model.skip("job__critic_2", ("coder", "critic"))  # nothing left to skip: no error
    model.assert_consumed()
    assert len(model.requests) == 1


async def test_a_plain_list_is_the_default_script_in_order() -> None:
    model = ScriptedModel(["one", "two"])

    texts = [(await model.complete(ask(role_path=("anything",)))).text for _ in range(2)]

    assert texts == ["one", "two"]
    assert [r.messages[0].content for r in model.requests] == ["hi", "hi"]


async def test_an_exhausted_script_raises_instead_of_answering() -> None:
    model = ScriptedModel({"actor": ["only"]})
    await model.complete(ask(role_path=("actor",)))

    with pytest.raises(UnexpectedModelCall, match=r"'actor'.*'default'.*'what next\?'"):
        await model.complete(ask("what next?", role_path=("actor",)))


async def test_left_over_steps_are_reported() -> None:
    model = ScriptedModel({"actor": ["a", "b"], "critic": ["c"]})
    await model.complete(ask(role_path=("actor",)))

    assert model.remaining() == {"actor": 1, "critic": 1}
    with pytest.raises(UnconsumedSteps, match="'actor': 1"):
        model.assert_consumed()
    assert issubclass(UnconsumedSteps, ScriptError) and issubclass(ScriptError, AssertionError)


async def test_an_exception_step_is_raised() -> None:
    model = ScriptedModel([RateLimited("slow down"), "after"])

    with pytest.raises(RateLimited):
        await model.complete(ask())
    assert (await model.complete(ask())).text == "after"


async def test_text_is_streamed_word_by_word() -> None:
    model = ScriptedModel(["  Hello,  wide\nworld! "])
    pieces: list[str] = []

    async def on_delta(text: str) -> None:
        pieces.append(text)

    response = await model.complete(ask(), on_delta=on_delta)

    assert "".join(pieces) == response.text == "  Hello,  wide\nworld! "
    assert len(pieces) == 3


async def test_replies_with_tool_calls_get_ids_per_turn() -> None:
    model = ScriptedModel([Reply(tool_calls=[call("add", {"a": 1}), call("add", {"a": 2}, id="mine")])])
    history = [Message.user("go"), Message(role="assistant", content="thinking"), Message.user("again")]

    response = await model.complete(ModelRequest(messages=history, model="m"))

    assert response.tool_calls == [
        ToolCall(id="call_1_0", name="add", arguments='{"a": 1}'),
        ToolCall(id="mine", name="add", arguments='{"a": 2}'),
    ]
    assert response.text == ""


async def test_usage_is_estimated_unless_given() -> None:
    model = ScriptedModel(
        ["two words", Reply("x", usage=Usage(input_tokens=5, output_tokens=1, model_calls=1))]
    )

    estimated = await model.complete(ask("three little words"))
    given = await model.complete(ask())

    assert (estimated.usage.input_tokens, estimated.usage.output_tokens, estimated.usage.model_calls) == (
        3,
        2,
        1,
    )
    assert given.usage == Usage(input_tokens=5, output_tokens=1, model_calls=1)
    assert estimated.model == "m"


async def test_a_model_response_step_keeps_its_own_model_name() -> None:
    model = ScriptedModel([ModelResponse(text="a", model="named"), ModelResponse(text="b")])

    assert (await model.complete(ask())).model == "named"
    assert (await model.complete(ask())).model == "m"


@pytest.mark.parametrize("scripts", ["hello", {"actor": "hello"}])
def test_a_bare_string_script_is_a_user_error(scripts: object) -> None:
    with pytest.raises(UserError, match=r"\['hello'\]"):
        ScriptedModel(scripts)  # type: ignore[arg-type]


async def test_function_model_takes_sync_and_async_functions() -> None:
    async def slow_echo(request: ModelRequest) -> Reply:
        await anyio.lowlevel.checkpoint()
        return Reply(f"async: {request.messages[-1].content}")

    sync = FunctionModel(lambda request: f"sync: {request.messages[-1].content}")
    asynchronous = FunctionModel(slow_echo)

    assert (await sync.complete(ask("a"))).text == "sync: a"
    assert (await asynchronous.complete(ask("b"))).text == "async: b"
    assert [r.messages[-1].content for r in sync.requests] == ["a"]


async def test_function_model_errors() -> None:
    def fail(request: ModelRequest) -> str:
        raise RateLimited("slow down")

    with pytest.raises(RateLimited):
        await FunctionModel(fail).complete(ask())
    with pytest.raises(UserError, match="returned None"):
        await FunctionModel(lambda request: None).complete(ask())  # type: ignore[arg-type, return-value]


def test_call_builds_a_tool_call() -> None:
    assert json.loads(call("f", {"x": [1, 2]}).arguments) == {"x": [1, 2]}
    assert call("f", '{"raw": true}').arguments == '{"raw": true}'
    assert call("f").arguments == "{}"


@pytest.mark.parametrize(
    ("make", "shown"),
    [
        (lambda: ScriptedModel(42), r"script 'default' is 42; pass a list of steps"),
        (lambda: ScriptedModel({"actor": ["ok", 42]}), r"script 'actor' step 1 is 42; a step is reply text"),
        (lambda: ScriptedModel({"actor": [None]}), r"script 'actor' step 0 is None"),
        (lambda: ScriptedModel({1: ["x"]}), r"keys are role paths or session ids \(str\), got 1"),
        (lambda: FunctionModel("hello"), r"FunctionModel needs a function of the request, got 'hello'"),
    ],
)
def test_bad_scripts_are_user_errors_at_construction(make: Any, shown: str) -> None:
    with pytest.raises(UserTypeError, match=shown):
        make()
