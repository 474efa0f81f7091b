"""jeeves._base.trusted: a model built from trusted values is the one validation would build."""

from __future__ import annotations

from typing import Any

import pytest

import jeeves
from jeeves import Agent, ScriptedModel
from jeeves._base.trusted import trusted
from jeeves._run.architecture import Output
from jeeves._run.context import Context
from jeeves.critics import Verdict
from jeeves.events import ModelCompleted, ModelDelta, SessionCompleted, SessionStarted
from jeeves.messages import ToolCall, Usage

CASES: list[tuple[type[Any], dict[str, Any]]] = [
    (Usage, {"input_tokens": 3, "output_tokens": 4, "model_calls": 1, "cost_usd": 0.5}),
    (Usage, {"output_tokens": 4}),
    (Usage, {}),
    (
        SessionStarted,
        {
            "session_id": "r__a_0",
            "parent_id": "r",
            "role": "a",
            "role_path": ["r", "a"],
            "architecture": "agent",
            "model": "m",
            "index": 2,
            "task": "t",
        },
    ),
    (SessionStarted, {"session_id": "r", "role": "r", "architecture": "agent"}),
    (SessionCompleted, {"session_id": "r", "output": "done", "usage": Usage(input_tokens=1)}),
    (ModelDelta, {"session_id": "r", "text": "hi", "step": 3}),
    (
        ModelCompleted,
        {
            "session_id": "r",
            "text": "",
            "tool_calls": [ToolCall(id="c", name="f", arguments="{}")],
            "usage": Usage(output_tokens=2),
            "model": "m",
            "fallback": True,
            "step": 1,
            "replayed": True,
        },
    ),
]


@pytest.mark.parametrize(("cls", "values"), CASES)
def test_trusted_builds_what_validation_builds(cls: type[Any], values: dict[str, Any]) -> None:
    validated, built = cls(**values), trusted(cls)(**values)
    assert type(built) is cls
    assert built == validated
    assert list(built.__dict__) == list(validated.__dict__)  # field order: repr and dumps agree
    assert built.model_fields_set == validated.model_fields_set
    assert built.model_dump_json() == validated.model_dump_json()
    assert built.model_dump(exclude_unset=True) == validated.model_dump(exclude_unset=True)
    assert repr(built) == repr(validated)
    if "seq" in cls.model_fields:  # still a normal model: assignment marks the field set
        built.seq = 7
        assert "seq" in built.model_fields_set
    assert cls.model_validate_json(built.model_dump_json()) == built


def test_default_factories_give_each_instance_its_own_value() -> None:
    build = trusted(SessionStarted)
    a = build(session_id="r", role="r", architecture="agent")
    b = build(session_id="r", role="r", architecture="agent")
    a.role_path.append("x")
    assert b.role_path == []


def test_a_missing_or_unknown_field_is_a_type_error() -> None:
    build = trusted(SessionStarted)
    with pytest.raises(TypeError, match="architecture"):
        build(session_id="r", role="r")
    with pytest.raises(TypeError, match="colour"):
        build(session_id="r", role="r", architecture="agent", colour="red")


def test_a_class_that_validates_its_values_is_refused() -> None:
    with pytest.raises(
        TypeError, match=r"Verdict validates or transforms .* build it with Verdict\(\.\.\.\)"
    ):
        trusted(Verdict)


class Probe:
    """Records what `ctx.observed` said in the run."""

    name = "probe"

    def __init__(self) -> None:
        self.seen: list[bool] = []

    async def run(self, ctx: Context, task: str) -> Output:
        self.seen.append(ctx.observed)
        return Output(value=task, text=task)


@pytest.mark.anyio
async def test_observed_is_false_only_where_nobody_reads_the_events() -> None:
    probe = Probe()
    await jeeves.run(probe, "t")
    async with jeeves.stream(probe, "t") as events:
        seen = [event.type async for event in events]
    assert probe.seen == [False, True]
    assert seen == ["session.started", "session.completed"]


@pytest.mark.anyio
async def test_jeeves_run_skips_unread_events_and_keeps_the_result() -> None:
    """The run's result is the same whether or not its unread events were built."""
    arch = jeeves.ActorCritic(
        Agent("You write.", role="actor"),
        Agent("You review.", role="critic", output_type=Verdict),
        max_rounds=2,
        threshold=0.8,
    )
    script = ["draft 1", '{"score": 0.2, "issues": ["x"]}', "draft 2", '{"score": 0.9}']
    ran = await jeeves.run(arch, "task", model=ScriptedModel(list(script)), session_id="r1")
    async with jeeves.stream(arch, "task", model=ScriptedModel(list(script)), session_id="r1") as events:
        types = [event.type async for event in events]
        streamed = await events.result()
    assert ran == streamed
    assert types.count("session.completed") == 5 and types.count("critique") == 2
    assert types.count("round.started") == 2 and types.count("model.completed") == 4
