"""A live step's record holds its result as the step returned it, and encodes it as the result
type's adapter would dump it: the bytes every store writes are the ones written before."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, PlainSerializer, TypeAdapter

from jeeves.errors import UserError
from jeeves.journal.delta import RequestChain
from jeeves.journal.records import StepRecord, live_record
from jeeves.journal.store import decode_text, encode_record
from jeeves.messages import Message, ModelRequest, ToolCall, ToolSpec
from tests.journal.conftest import Stores

pytestmark = pytest.mark.anyio


class Item(BaseModel):
    name: str
    tags: tuple[str, ...] = ()


class Priced(Item):
    usd: float = 1.5


@dataclass
class Reply:
    item: Item
    fallback: bool = False


CASES: list[tuple[Any, Any]] = [
    (Item, Item(name="é\n", tags=("a",))),
    (Reply, Reply(Item(name="x"))),  # a stdlib dataclass holding a model (a model step's result)
    (list[Item], [Item(name="a"), Item(name="b")]),
    (Item, Priced(name="p")),  # a subclass instance: its type's fields only, as the adapter dumps it
    (Any, {"k": (1, 2), "s": [float("inf"), float("nan"), b"x", None], "": {}}),
    (dict[int, str], {1: "one"}),
    (Annotated[int, PlainSerializer(lambda v: f"#{v}", return_type=str)], 7),
    (str, "r" * 200),
    (Item, None),  # a failed step: no result
]


def _fields(**over: Any) -> dict[str, Any]:
    fields = dict(session_id="r1", index=3, kind="tool", name="t", fingerprint="f" * 64)
    fields.update(request={"name": "t", "arguments": "{}"}, error=None, events=[{"type": "x"}])
    return {**fields, **over}


def _before(tp: Any, value: Any) -> StepRecord:
    """The record as it was built before: the result dumped to JSON first, then validated."""
    dumped = None if value is None else TypeAdapter(tp).dump_python(value, mode="json")
    return StepRecord(**_fields(result=dumped))


@pytest.mark.parametrize(("tp", "value"), CASES)
def test_a_live_record_encodes_as_the_record_built_from_its_dumped_result(tp: Any, value: Any) -> None:
    record = live_record(tp, **_fields(result=value))
    before = _before(tp, value)
    assert isinstance(record, StepRecord) and record.result is value
    assert encode_record(record) == encode_record(before)
    assert record.model_dump(mode="json") == before.model_dump(mode="json")
    json.dumps(record.model_dump(mode="json"))  # what a custom store may do with it: JSON-able
    assert record.model_fields_set == before.model_fields_set
    assert decode_text(encode_record(record), "here", StepRecord) == before


def test_a_result_that_does_not_fit_its_type_is_stored_as_the_adapter_dumps_it() -> None:
    with pytest.warns(UserWarning, match="serializ"):
        live = encode_record(live_record(int, **_fields(result="abc")))
    with pytest.warns(UserWarning, match="serializ"):
        before = encode_record(_before(int, "abc"))
    assert live == before and json.loads(live)["result"] == "abc"


def test_a_result_that_is_not_json_fails_when_the_record_is_encoded() -> None:
    with pytest.raises(UserError, match="Step 3 of session 'r1' cannot be journaled"):
        encode_record(live_record(Any, **_fields(result={"x": object()})))


async def test_a_store_hands_back_json_not_the_live_result(stores: Stores) -> None:
    journal = stores.open()
    value = Item(name="a")
    await journal.put_step(live_record(Item, **_fields(result=value)))
    got = await journal.get_step("r1", 3)
    assert got is not None and type(got) is StepRecord and got.result == {"name": "a", "tags": []}


_TOOLS = [ToolSpec(name="t", description="d", parameters={"properties": {"result": {}}})]
_FIRST = [Message.system('sé\n"q"'), Message.user("u")]
_ADDED = [
    Message(role="assistant", tool_calls=[ToolCall(id="c", name="t", arguments='{"a": "é"}')]),
    Message(role="tool", content='"result":', tool_call_id="c", name="t"),
]


@pytest.mark.parametrize("settings", ["same", "changed"])
def test_a_model_step_record_stores_its_new_messages_as_pydantic_writes_them(settings: str) -> None:
    """A model step's record holds its request's new messages (the `Message` objects) and
    encodes exactly as the record whose stored request was dumped to JSON first: the first
    step whole, the next a delta, its settings written only when they changed."""
    chain = RequestChain()
    first = ModelRequest(messages=_FIRST, tools=_TOOLS, params={"temperature": 0.5})
    params = {"temperature": 0.7 if settings == "changed" else 0.5}
    second = ModelRequest(messages=[*_FIRST, *_ADDED], tools=_TOOLS, params=params)
    for index, request in enumerate([first, second]):
        key = chain.key(request, index)
        written = live_record(int, **_fields(kind="model", request=key.stored, result=1))
        dumped = TypeAdapter(Any).dump_python(key.stored, mode="json")
        assert encode_record(written) == encode_record(
            live_record(int, **_fields(kind="model", request=dumped, result=1))
        )
        assert json.loads(encode_record(written))["request"] == dumped
        assert written.model_dump(mode="json")["request"] == dumped  # a store of one's own dumps it alike
        key.commit()
    assert ("params" in dumped) == (settings == "changed") and dumped["base"] == 0
    assert dumped["messages"] == [m.model_dump(mode="json") for m in _ADDED]
