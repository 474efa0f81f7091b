from __future__ import annotations

import pytest
from pydantic import BaseModel, field_serializer

from jeeves import Tool, tool

pytestmark = pytest.mark.anyio


class Opaque:
    """A value pydantic has no JSON form for."""


class Holder(BaseModel):
    value: object


class Loud(BaseModel):
    value: int

    @field_serializer("value")
    def _value(self, value: int) -> int:
        raise ValueError("x" * 10_000)


async def test_returned_values_become_text() -> None:
    @tool
    def give(kind: str) -> object:
        """Returns one of several shapes."""
        return {"s": "plain", "m": Holder(value=[1, 2]), "d": {"a": (1, 2)}}[kind]

    assert (await give.invoke('{"kind": "s"}')).text == "plain"
    assert (await give.invoke('{"kind": "m"}')).text == '{"value":[1,2]}'
    assert (await give.invoke('{"kind": "d"}')).text == '{"a":[1,2]}'


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        (Opaque(), "tests.agent.test_tools.Opaque"),
        ({"nested": Opaque()}, "builtins.dict"),
        (Holder(value=Opaque()), "tests.agent.test_tools.Holder"),
        (b"\xff\xfe", "builtins.bytes"),
    ],
)
async def test_a_value_that_cannot_be_serialised_is_an_error_result(value: object, kind: str) -> None:
    @tool
    async def give() -> object:
        """Returns something awkward."""
        return value

    @tool
    def give_sync() -> object:
        """The same, from a worker thread."""
        return value

    for made in (give, give_sync):
        outcome = await made.invoke("{}")
        assert outcome.is_error
        assert outcome.text.startswith(f"Tool {made.name!r} returned a value of type {kind} ")
        assert "must return a str, a pydantic model, or JSON-serialisable data" in outcome.text


async def test_the_serialisation_error_is_bounded_and_names_the_cause() -> None:
    cycle: list[object] = []
    cycle.append(cycle)

    @tool
    def loud() -> Loud:
        """Its serialiser fails with a huge message."""
        return Loud(value=1)

    outcome = await loud.invoke("{}")
    assert outcome.is_error and "x" * 100 in outcome.text and len(outcome.text) < 1000
    circular = await Tool(lambda: cycle, name="circular").invoke("{}")
    assert circular.is_error and "Circular reference" in circular.text
