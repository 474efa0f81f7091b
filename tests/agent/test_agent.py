from __future__ import annotations

import anyio
import pytest
from pydantic import BaseModel

import jeeves
from jeeves import Agent, FunctionModel, ScriptedModel, tool
from jeeves.agent.agent import extract_json
from jeeves.agent.tools import ToolOutcome
from jeeves.errors import MaxTurnsExceeded, OutputValidationError, UserError, UserTypeError
from jeeves.events import Event, ToolCompleted
from jeeves.journal.memory import MemoryJournal
from jeeves.messages import ModelRequest
from jeeves.testing import Reply, call

pytestmark = pytest.mark.anyio


class Answer(BaseModel):
    value: int
    reason: str


async def test_tool_calls_of_one_turn_run_concurrently() -> None:
    both_started = anyio.Event()
    started: list[str] = []

    @tool
    async def wait_for_peer(name: str) -> str:
        """Waits until both calls are running."""
        started.append(name)
        if len(started) == 2:
            both_started.set()
        with anyio.fail_after(5):
            await both_started.wait()
        return f"{name} done"

    model = ScriptedModel(
        [Reply(tool_calls=[call("wait_for_peer", {"name": "a"}), call("wait_for_peer", {"name": "b"})]), "ok"]
    )
    result = await jeeves.run(Agent("x", tools=[wait_for_peer]), "t", model=model)
    assert result.output == "ok"
    tool_messages = [m for m in model.requests[1].messages if m.role == "tool"]
    assert [m.content for m in tool_messages] == ["a done", "b done"]  # in the order of the calls


async def test_tool_errors_and_bad_arguments_become_results_the_model_reads() -> None:
    @tool
    def divide(a: int, b: int) -> float:
        """Divide a by b."""
        return a / b

    model = ScriptedModel(
        [
            Reply(
                tool_calls=[
                    call("divide", {"a": 1, "b": 0}),
                    call("divide", {"a": "one", "b": 2}),
                    call("divide", "{not json"),
                    call("missing", {}),
                ]
            ),
            "handled",
        ]
    )
    events = []
    async with jeeves.stream(Agent("x", tools=[divide]), "t", model=model) as stream:
        events = [e async for e in stream]
    done = [e for e in events if e.type == "tool.completed"]
    assert all(e.is_error for e in done)
    assert "ZeroDivisionError" in done[0].result
    assert "Invalid arguments for tool 'divide'" in done[1].result and "a" in done[1].result
    assert "Invalid arguments" in done[2].result
    assert "Unknown tool 'missing'; the tools are: divide." == done[3].result
    assert events[-1].type == "session.completed"


async def test_tool_schema_from_signature() -> None:
    @tool
    def search(query: str, limit: int = 3) -> list[str]:
        """Search the notes."""
        return [query] * limit

    spec = search.spec()
    assert spec.description == "Search the notes."
    assert spec.parameters["required"] == ["query"]
    assert spec.parameters["properties"]["limit"]["default"] == 3


async def test_output_type_validates_and_repairs_once() -> None:
    model = ScriptedModel(['Sure! {"value": "many"}', '```json\n{"value": 3, "reason": "counted"}\n```'])
    async with jeeves.stream(Agent("x", output_type=Answer), "t", model=model) as stream:
        types = [e.type async for e in stream]
        result = await stream.result()
    assert result.output == Answer(value=3, reason="counted")
    assert "output.retrying" in types
    assert model.requests[0].output_schema is not None
    assert "did not match" in (model.requests[1].messages[-1].content or "")


async def test_output_type_fails_after_repair() -> None:
    model = ScriptedModel(["nope", "still nope"])
    with pytest.raises(OutputValidationError, match="after a repair turn"):
        await jeeves.run(Agent("x", output_type=Answer), "t", model=model)


async def test_max_turns() -> None:
    @tool
    def again() -> str:
        """Loops."""
        return "again"

    model = FunctionModel(lambda r: Reply(tool_calls=[call("again")]))
    with pytest.raises(MaxTurnsExceeded, match="max_turns=2"):
        await jeeves.run(Agent("x", tools=[again], max_turns=2), "t", model=model)


async def test_agent_model_pins_route_and_params_reach_the_request() -> None:
    pinned = FunctionModel(lambda r: "pinned", model_name="pinned-model")
    seen: list[ModelRequest] = []
    pinned_fn = pinned.function

    def spy(r: ModelRequest) -> str:
        seen.append(r)
        return str(pinned_fn(r))

    pinned.function = spy
    router = jeeves.Router({"default": ScriptedModel([])})
    agent = Agent("x", model=pinned, params={"temperature": 0})
    async with jeeves.stream(agent, "t", router=router) as stream:
        started = [e async for e in stream][0]
    assert started.type == "session.started" and started.model == "pinned-model"
    assert seen[0].params == {"temperature": 0}


def test_bad_configuration_is_a_user_error() -> None:
    with pytest.raises(UserError, match="'Coder'"):
        Agent("x", role="Coder")
    with pytest.raises(UserError, match="max_turns"):
        Agent("x", max_turns=0)

    def f(*args: int) -> int:
        return 0

    with pytest.raises(UserError, match=r"\*args"):
        Agent("x", tools=[f])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', '{"a": 1}'),
        ('Here you go:\n{"a": 1}\nThanks', '{"a": 1}'),
        ('```json\n{"a": 1}\n```', '{"a": 1}'),
        ("[1, 2]", "[1, 2]"),
    ],
)
def test_extract_json(text: str, expected: str) -> None:
    assert extract_json(text) == expected


class _Opaque:
    """A tool result pydantic has no JSON form for."""


async def test_an_unserialisable_tool_result_is_an_error_the_model_reads_and_replays() -> None:
    @tool
    def lookup(key: str) -> object:
        """Returns an object the model cannot read."""
        return _Opaque()

    def script() -> ScriptedModel:
        return ScriptedModel([Reply(tool_calls=[call("lookup", {"key": "k"})]), "recovered"])

    def comparable(events: list[Event]) -> list[dict[str, object]]:
        return [e.model_dump(mode="json", exclude={"seq", "ts", "replayed"}) for e in events]

    journal = MemoryJournal()
    model = script()
    async with jeeves.stream(
        Agent("x", tools=[lookup]), "t", model=model, journal=journal, session_id="s"
    ) as live:
        recorded = [e async for e in live]
    assert recorded[-1].type == "session.completed"
    (done,) = [e for e in recorded if isinstance(e, ToolCompleted)]
    assert done.is_error and "returned a value of type tests.agent.test_agent._Opaque" in done.result
    assert [m.content for m in model.requests[1].messages if m.role == "tool"] == [done.result]
    step = await journal.get_step("s", 1)
    assert step is not None and step.kind == "tool"
    assert ToolOutcome.model_validate(step.result) == ToolOutcome(text=done.result, is_error=True)

    async with jeeves.stream(
        Agent("x", tools=[lookup]), "t", journal=journal, session_id="s", mode="replay"
    ) as again:
        replayed = [e async for e in again]
        result = await again.result()
    assert result.output == "recovered"
    assert comparable(replayed) == comparable(recorded)


def typed(x: int) -> int:
    """A typed tool."""
    return x


@pytest.mark.parametrize(
    ("kwargs", "error", "shown"),
    [
        ({"max_turns": "3"}, UserTypeError, "max_turns must be an int >= 1, got '3'"),
        ({"max_turns": True}, UserTypeError, "max_turns must be an int >= 1, got True"),
        ({"max_turns": 0}, UserError, "max_turns must be an int >= 1, got 0"),
        ({"tools": [42]}, UserTypeError, r"tools\[0\] is 42, not a tool"),
        ({"tools": [typed, int]}, UserTypeError, r"tools\[1\] is <class 'int'>, not a tool"),
        ({"tools": typed}, UserTypeError, "tools must be a list, got <function typed"),
        ({"params": [("temperature", 0)]}, UserTypeError, r"params must be a dict.*\[\('temperature', 0\)\]"),
        ({"description": 7}, UserTypeError, "description must be a str, got 7"),
        ({"instructions": None}, UserTypeError, "instructions must be a str, got None"),
        ({"output_type": 42}, UserTypeError, "output_type 42 is not a type pydantic can validate"),
        (
            {"output_type": "Answer"},
            UserTypeError,
            "output_type is the string 'Answer'; pass the type itself",
        ),
    ],
)
def test_bad_arguments_are_user_errors_naming_the_value(
    kwargs: dict[str, object], error: type[UserError], shown: str
) -> None:
    arguments: dict[str, object] = {"instructions": "x", **kwargs}
    with pytest.raises(error, match=shown):
        Agent(**arguments)  # type: ignore[arg-type]


def test_a_wrong_type_is_also_a_type_error() -> None:
    with pytest.raises(TypeError):
        Agent("x", max_turns="3")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Agent("x", max_turns=0)
