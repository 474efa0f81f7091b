"""What every store does the same way: the JournalStore contract and the record codec."""

from __future__ import annotations

import json
from typing import Any

import pytest

from jeeves.errors import JournalError, UserError
from jeeves.journal.records import SCHEMA_VERSION, SessionRecord, StepRecord
from jeeves.journal.store import JournalStore, decode_record, decode_text, encode_record
from tests.journal.conftest import Stores

pytestmark = pytest.mark.anyio


def step(session_id: str = "r1", index: int = 0, **fields: Any) -> StepRecord:
    return StepRecord(
        session_id=session_id, index=index, kind="tool", name="add", fingerprint="f" * 64, **fields
    )


def session(session_id: str = "r1", **fields: Any) -> SessionRecord:
    return SessionRecord(session_id=session_id, role="agent", architecture="agent", **fields)


async def test_records_come_back_as_they_went_in(stores: Stores) -> None:
    journal = stores.open()
    assert isinstance(journal, JournalStore)
    record = step(request={"a": [1, 2]}, result={"text": "3"}, events=[{"type": "model.delta", "text": "é"}])
    await journal.put_step(record)
    await journal.put_session(session(task="t", source={"kind": "import", "ref": "m:a"}))
    assert await journal.get_step("r1", 0) == record
    assert await journal.get_step("r1", 1) is None
    assert await journal.get_step("r2", 0) is None
    got = await journal.get_session("r1")
    assert got is not None and got.source == {"kind": "import", "ref": "m:a"}
    assert await journal.get_session("r2") is None


async def test_records_outlive_the_store_object(stores: Stores) -> None:
    journal = stores.open()
    await journal.put_step(step(index=1))
    await journal.put_session(session())
    await journal.aclose()
    again = stores.open()
    assert await again.get_step("r1", 1) == step(index=1)
    assert await again.step_indices("r1") == [1]


async def test_sessions_keep_first_order_and_last_status(stores: Stores) -> None:
    journal = stores.open()
    await journal.put_session(session("r1"))
    await journal.put_session(session("r2", parent_id=None))
    await journal.put_session(session("r1__worker_0", parent_id="r1"))
    await journal.put_session(session("r1", status="completed", output="done"))
    await journal.aclose()
    records = await stores.open().sessions()
    assert [r.session_id for r in records] == ["r1", "r2", "r1__worker_0"]
    assert (records[0].status, records[0].output) == ("completed", "done")


async def test_sessions_of_one_tree(stores: Stores) -> None:
    journal = stores.open()
    for sid in ("r1", "r10", "r1__worker_0", "r10__worker_0", "r1__worker_0__critic_1", "x_r1__a_0"):
        await journal.put_session(session(sid, parent_id=sid.rpartition("__")[0] or None))
    assert [r.session_id for r in await journal.sessions("r1")] == [
        "r1",
        "r1__worker_0",
        "r1__worker_0__critic_1",
    ]
    assert [r.session_id for r in await journal.sessions("r1__worker_0")] == [
        "r1__worker_0",
        "r1__worker_0__critic_1",
    ]
    assert len(await journal.sessions()) == 6


async def test_step_indices_are_per_session_and_sorted(stores: Stores) -> None:
    journal = stores.open()
    for sid, index in [("r1", 2), ("r1", 0), ("r1__a_0", 5), ("r1", 1)]:
        await journal.put_step(step(sid, index))
    assert await journal.step_indices("r1") == [0, 1, 2]
    assert await journal.step_indices("r1__a_0") == [5]
    assert await journal.step_indices("nobody") == []


async def test_a_value_that_is_not_json_fails_where_it_is_recorded(stores: Stores) -> None:
    journal = stores.open()
    with pytest.raises(UserError, match="Step 0 of session 'r1' cannot be journaled: .*JSON-able"):
        await journal.put_step(step(index=0, result=object()))
    assert await journal.get_step("r1", 0) is None


def test_records_are_json_lines_with_type_and_version() -> None:
    line = encode_record(step())
    data = json.loads(line)
    assert "\n" not in line
    assert (data["type"], data["v"], data["session_id"]) == ("step", SCHEMA_VERSION, "r1")
    assert decode_record(data, "here") == step()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([1, 2], "here: not a jeeves journal record"),
        ({"type": "other", "v": 1}, "here: not a jeeves journal record"),
        ({"type": "step", "session_id": "r1"}, r"here: the record has no schema version \(v=null\)"),
        (
            {"type": "step", "v": 9},
            r"here: the record was written by a newer jeeves \(journal schema v9; .*Upgrade jeeves",
        ),
        ({"type": "session", "v": 1, "session_id": "r1"}, "here: a malformed session record"),
    ],
)
def test_bad_records_are_refused_with_where_and_why(data: Any, message: str) -> None:
    with pytest.raises(JournalError, match=message):
        decode_record(data, "here")


def _slow(text: str, cls: type[Any]) -> Any:
    """What `decode_text` returned before it read plain records with pydantic's parser."""
    record = decode_record(json.loads(text), "here")
    if not isinstance(record, cls):
        raise JournalError(f"here: found a {record.__class__.__name__}")
    return record


RECORDS = [
    step(),
    step(
        request={"a": [1, 2.5, None, True]},
        result={"t": "é\n\u2028"},
        error={"type": "X", "message": "m"},
    ),
    step(events=[{"type": "model.delta", "text": "x"}], pending=True, v=1),
    step(
        request={"messages": [{"role": "user", "content": 'say "hi", \\ \x00 \U0001f600'}]},
        result={"f": [1e16, 1e-7, -0.0, 0.1, 10**30], "": {}, "n": None},
    ),
    session(),
    session(status="running", usage={"total_tokens": 3}, rounds=2, source={"kind": "import", "ref": "m:a"}),
    session(created_at=1.5, expires_at=2e20, lease_owner="h:1:2", progress={"step": 3}),
]


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: type(r).__name__)
def test_a_stored_record_decodes_as_the_record_it_was(record: Any) -> None:
    text = encode_record(record)
    got = decode_text(text, "here", type(record))
    assert got == record == _slow(text, type(record))
    assert got.model_fields_set == _slow(text, type(record)).model_fields_set


def _spaced(record: StepRecord | SessionRecord) -> str:
    """A record as jeeves wrote it before records were encoded by pydantic's serializer."""
    kind = "step" if isinstance(record, StepRecord) else "session"
    return json.dumps({"type": kind, **record.model_dump(mode="json")}, ensure_ascii=False)


UNNORMALISED = step(request={"k": (1, 2), "s": {3}}, result=[float("inf"), float("nan"), b"x"])
"""Values JSON holds differently (a tuple, a set, non-finite floats, bytes): encoded alike."""


@pytest.mark.parametrize("record", [*RECORDS, UNNORMALISED], ids=lambda r: type(r).__name__)
def test_a_record_reads_alike_as_written_before_and_now(record: Any) -> None:
    """Journals written with `json.dumps`' separators and the compact ones written now (even
    mixed in one file) hold the same keys in the same order and the same values: both
    readers (`json.loads` for JSONL files, pydantic's parser for database rows) read both."""
    before, now = _spaced(record), encode_record(record)
    assert now.startswith('{"type":"') and before.startswith('{"type": "') and "\n" not in now
    assert list(json.loads(before).items()) == list(json.loads(now).items())
    cls = type(record)
    for text in (before, now):
        got = decode_text(text, "here", cls)
        assert got == decode_record(json.loads(text), "here") == decode_text(now, "here", cls)
        assert got.model_fields_set == decode_text(now, "here", cls).model_fields_set


def test_a_string_that_utf8_cannot_hold_fails_where_it_is_recorded() -> None:
    """A lone surrogate used to pass the encoder and crash the file store's write."""
    with pytest.raises(UserError, match="Step 0 of session 'r1' cannot be journaled"):
        encode_record(step(result={"text": "\ud800"}))


@pytest.mark.parametrize(
    ("text", "cls", "message"),
    [
        # the same damage json.loads and the checks see, whichever parser reads first
        ('{"type": "step", "v": 2, "type": "session"}', StepRecord, "a malformed session record"),
        (
            '{"type": "session", "v": 2, "session_id": "r1", "role": "a", "architecture": "a", "type": "step"}',
            SessionRecord,
            "a malformed step record",
        ),
        (encode_record(step())[:-1] + ', "v": 9}', StepRecord, "newer jeeves"),
        (encode_record(step()).replace(f'"v":{SCHEMA_VERSION}', '"v":"2"'), StepRecord, "no schema version"),
        (encode_record(step()).replace(f'"v":{SCHEMA_VERSION}', '"v":true'), StepRecord, "no schema version"),
        (encode_record(step()).replace(f'"v":{SCHEMA_VERSION}', '"v":3.0'), StepRecord, "no schema version"),
        (encode_record(session()), StepRecord, 'found a "session" record'),
        (
            encode_record(step()).replace('"index":0', '"index":"zero"'),
            StepRecord,
            "a malformed step record",
        ),
        ('{"type": "step", "v": 2, "request": NaN', StepRecord, "not JSON jeeves can read"),
        ("[" * 5000 + "]" * 5000, StepRecord, "nested too deeply|not a jeeves journal record"),
    ],
)
def test_a_damaged_stored_record_is_refused_as_before(text: str, cls: type[Any], message: str) -> None:
    with pytest.raises(JournalError, match=message):
        decode_text(text, "here", cls)
