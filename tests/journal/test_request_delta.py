"""A journaled model step stores and fingerprints what its request adds (journal schema v3 on,
hashed by pydantic's JSON of each message from v4): every part of every request is still
covered, a journal still reads as whole requests, and v2 (every request stored whole) and v3
journals (the messages' canonical JSON chained) still replay and resume."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter

import jeeves
from jeeves.errors import ReplayDivergence
from jeeves.journal.delta import (
    KEY_VERSION,
    RequestChain,
    older_fingerprint,
    plain_key,
    recorded_request,
    whole_request,
)
from jeeves.journal.jsonl import JSONLJournal
from jeeves.journal.memory import MemoryJournal
from jeeves.journal.records import SCHEMA_VERSION, StepRecord, fingerprint
from jeeves.journal.store import JournalStore, encode_record
from jeeves.messages import Message, ModelRequest, ToolCall, ToolSpec
from jeeves.server.recorded import JournalBrowser
from jeeves.server.requests import whole_requests
from tests.journal import delta_archs
from tests.journal.conftest import Stores
from tests.journal.delta_archs import CHANGES, Convo

pytestmark = pytest.mark.anyio

V2_JOURNAL = Path(__file__).parent / "data" / "v2_agent.jsonl"
V3_JOURNAL = Path(__file__).parent / "data" / "v3_agent.jsonl"
OLD = {2: (V2_JOURNAL, "v2run"), 3: (V3_JOURNAL, "v3run")}
"""Journals recorded by jeeves at schema v2 and v3, and their root session."""


async def _model_steps(journal: JournalStore, session_id: str) -> list[StepRecord]:
    steps = [await journal.get_step(session_id, i) for i in await journal.step_indices(session_id)]
    return [s for s in steps if s is not None and s.kind == "model"]


async def _whole(journal: JournalStore, session_id: str) -> list[Any]:
    """Every model step's whole request, rebuilt from the records as a reader does."""
    whole: dict[int, Any] = {}
    for step in await _model_steps(journal, session_id):
        whole[step.index] = whole_request(step.request, whole)
    return list(whole.values())


# -- what a model step stores -------------------------------------------------------------------
async def test_a_model_step_stores_only_the_messages_its_request_added() -> None:
    journal = MemoryJournal()
    convo = Convo(calls=30)
    await jeeves.run(convo, "Chat.", model=convo.model(), journal=journal, session_id="c1")

    steps = await _model_steps(journal, "c1")
    assert [s.v for s in steps] == [SCHEMA_VERSION] * 30 and SCHEMA_VERSION == 4
    assert "base" not in steps[0].request and len(steps[0].request["messages"]) == 3
    assert steps[0].request == convo.seen[0]  # the first request of a session is stored whole
    for before, step in zip(steps, steps[1:], strict=False):
        assert step.request["base"] == before.index
        assert [m["role"] for m in step.request["messages"]] == ["assistant", "user"]
        assert set(step.request) == {"base", "messages"}  # tools, schema, params unchanged: not stored
    sizes = [len(encode_record(s)) for s in steps[1:]]
    assert max(sizes) - min(sizes) <= 20  # a step's record does not grow with the conversation


async def test_a_reader_rebuilds_every_request_whole_as_the_model_was_asked_it(stores: Stores) -> None:
    convo = Convo(change="tools", at=3, calls=8)
    await jeeves.run(convo, "Chat.", model=convo.model(), journal=stores.open(), session_id="c1")

    store = stores.open()
    assert await _whole(store, "c1") == convo.seen
    steps = await _model_steps(store, "c1")
    assert "tools" in steps[3].request and "tools" not in steps[4].request  # stored when it changed
    for step, seen in zip(steps, convo.seen, strict=True):
        assert await recorded_request(lambda i: store.get_step("c1", i), step) == seen


@pytest.mark.parametrize("change", ["first_in_place", "middle_in_place", "tool_in_place"])
async def test_a_history_edited_in_place_is_stored_whole_and_replays(change: str) -> None:
    journal = MemoryJournal()
    convo = Convo(change=change, at=3)
    await jeeves.run(convo, "Chat.", model=convo.model(), journal=journal, session_id="c1")

    assert await _whole(journal, "c1") == convo.seen  # the edit is in the record of call 3 on
    steps = await _model_steps(journal, "c1")
    assert "base" not in steps[3].request and steps[4].request["base"] == steps[3].index
    await jeeves.replay(Convo(change=change, at=3), journal, "c1")  # the same edit: no divergence


# -- a strict replay still sees every change -----------------------------------------------------
@pytest.mark.parametrize("change", CHANGES)
async def test_a_replay_fails_at_the_step_whose_request_changed_whatever_part_changed(change: str) -> None:
    journal = MemoryJournal()
    convo = Convo()
    await jeeves.run(convo, "Chat.", model=convo.model(), journal=journal, session_id="c1")
    await jeeves.replay(Convo(), journal, "c1")  # unchanged: replays

    with pytest.raises(ReplayDivergence) as info:
        await jeeves.replay(Convo(change=change, at=4), journal, "c1")
    steps = await _model_steps(journal, "c1")
    assert (info.value.session_id, info.value.step) == ("c1", steps[4].index)
    shown = {
        "first": "tersely",
        "first_in_place": "tersely",
        "middle": "edited",
        "middle_in_place": "edited",
        "last": "a changed last message",
        "tools": '"other"',
        "tool_in_place": "changed",
        "params": "0.5",
        "schema": '"answer"',
    }[change]
    diff = [line for line in str(info.value).splitlines() if line.startswith("+")]
    assert any(shown in line for line in diff), str(info.value)  # the diff is of the whole requests


async def test_every_store_catches_a_changed_middle_message(stores: Stores) -> None:
    convo = Convo()
    await jeeves.run(convo, "Chat.", model=convo.model(), journal=stores.open(), session_id="c1")
    await jeeves.replay(Convo(), stores.open(), "c1")
    with pytest.raises(ReplayDivergence, match=r"(?s)Session .c1. step 4 .*edited"):
        await jeeves.replay(Convo(change="middle", at=4), stores.open(), "c1")


def _requests() -> list[ModelRequest]:
    messages = [Message.system("s"), Message.user("u")]
    out = []
    for turn in range(5):
        out.append(ModelRequest(messages=list(messages), tools=[ToolSpec(name="t")], params={"seed": 1}))
        messages += [Message(role="assistant", content=f"a{turn}"), Message.user(f"u{turn}")]
    return out


def test_a_fingerprint_is_a_function_of_the_request_alone_however_it_was_chained() -> None:
    requests = _requests()
    chain = RequestChain()
    chained = []
    for index, request in enumerate(requests):
        key = chain.key(request, index)
        key.commit()
        chained.append(key.fingerprint)
    alone = [RequestChain().key(request, 0).fingerprint for request in requests]
    assert chained == alone and len(set(chained)) == len(chained)
    # a copy of a request (equal messages, other objects) extends the chain as well
    copies = [r.model_copy(deep=True) for r in requests]
    again = RequestChain()
    for index, request in enumerate(copies):
        key = again.key(request, index)
        key.commit()
        assert key.fingerprint == chained[index]
        assert ("base" in key.stored) == (index > 0)
    # a key not committed (its step never reached the journal) is not extended
    uncommitted = RequestChain()
    uncommitted.key(requests[0], 0)
    assert "base" not in uncommitted.key(requests[1], 1).stored


def _alone(request: ModelRequest) -> str:
    return RequestChain().key(request, 0).fingerprint


def test_keys_committed_out_of_order_chain_on_the_last_committed_request() -> None:
    """Two steps keyed on the same request (concurrent calls of a session) both extend it;
    whichever commits last is the base, and the messages the chain keeps are exactly its."""
    first, second = _requests()[:2]
    chain = RequestChain()
    chain.key(first, 0).commit()
    other = ModelRequest(
        messages=[*first.messages, Message(role="assistant", content="b"), Message.user("ub")],
        tools=[ToolSpec(name="t")],
        params={"seed": 1},
    )
    a, b = chain.key(second, 1), chain.key(other, 2)
    assert a.stored["base"] == b.stored["base"] == 0
    a.commit()
    b.commit()  # `a` appended to the messages both extended: `b` keeps only its own
    on_b = ModelRequest(
        messages=[*other.messages, Message.user("more")], tools=[ToolSpec(name="t")], params={"seed": 1}
    )
    key = chain.key(on_b, 3)
    assert key.stored["base"] == 2 and key.fingerprint == _alone(on_b)
    assert [m.content for m in key.stored["messages"]] == ["more"]
    on_a = ModelRequest(
        messages=[*second.messages, Message.user("x")], tools=[ToolSpec(name="t")], params={"seed": 1}
    )
    key = chain.key(on_a, 4)  # extends `a`, which is not the last committed: stored whole
    assert "base" not in key.stored and key.fingerprint == _alone(on_a)


def test_the_chain_keeps_the_request_as_it_was_keyed_not_as_a_client_left_it() -> None:
    """A client that edits its request's messages during the call (after the key) does not
    change what the chain extends: the messages hashed and stored are the ones kept."""
    requests = _requests()
    chain = RequestChain()
    for index, request in enumerate(requests[:2]):
        key = chain.key(request, index)
        request.messages.insert(0, Message.system("injected"))  # a client's edit, in the list
        request.messages.append(Message.user("appended"))
        key.commit()
    third = requests[2]
    key = chain.key(third, 2)
    assert key.stored["base"] == 1 and key.fingerprint == _alone(third)
    assert [m.content for m in key.stored["messages"]] == ["a1", "u1"]


def test_a_rewritten_history_is_stored_and_hashed_whole_then_extended() -> None:
    """A request whose earlier message differs (a new list, not an edit in place: a compacted
    or rewritten history) is stored whole; the next request extends it."""
    requests = _requests()
    chain = RequestChain()
    for index, request in enumerate(requests[:3]):
        chain.key(request, index).commit()
    rewritten = ModelRequest(
        messages=[Message.system("s"), Message.user("a summary"), *requests[3].messages[2:]],
        tools=[ToolSpec(name="t")],
        params={"seed": 1},
    )
    key = chain.key(rewritten, 3)
    assert "base" not in key.stored and key.stored["messages"] == rewritten.messages
    assert key.fingerprint == _alone(rewritten) != _alone(requests[3])
    key.commit()
    on = ModelRequest(
        messages=[*rewritten.messages, Message.user("next")], tools=[ToolSpec(name="t")], params={"seed": 1}
    )
    key = chain.key(on, 4)
    assert key.stored["base"] == 3 and key.fingerprint == _alone(on)


# -- schema v2 and v3 journals -------------------------------------------------------------------
async def _old_into(stores: Stores, version: int) -> JournalStore:
    """The fixture's records, as written by jeeves at schema `version`, in the store under test."""
    path, run = OLD[version]
    store = stores.open()
    source = JSONLJournal(path, create=False)
    try:
        for session in await source.sessions():
            await store.put_session(session)
        for index in await source.step_indices(run):
            step = await source.get_step(run, index)
            assert step is not None and step.v == version
            await store.put_step(step)
    finally:
        await source.aclose()
    return store


@pytest.mark.parametrize("version", sorted(OLD))
async def test_an_older_journal_replays_and_still_catches_a_change(stores: Stores, version: int) -> None:
    store = await _old_into(stores, version)
    run = OLD[version][1]
    steps = await _model_steps(store, run)
    assert all(s.v == version for s in steps)
    assert all("base" not in s.request for s in steps) == (version == 2)

    result = await jeeves.replay(delta_archs.tool_agent(), store, run)
    assert result.text == "done after 3 lookups"
    with pytest.raises(ReplayDivergence, match=r"(?s)step 0 .*tersely"):
        await jeeves.replay(delta_archs.tool_agent("You look things up tersely."), store, run)
    with pytest.raises(ReplayDivergence, match=r"(?s)step 0 .*0\.5"):
        await jeeves.replay(delta_archs.tool_agent(temperature=0.5), store, run)


@pytest.mark.parametrize("version", sorted(OLD))
async def test_an_older_model_record_is_matched_by_its_own_hash_of_every_part(version: int) -> None:
    """Each model step of the fixture, asked again whole (a key that extends nothing), matches
    its record; any part changed does not, wherever in the request it is."""
    path, run = OLD[version]
    source = JSONLJournal(path, create=False)
    try:
        steps = await _model_steps(source, run)
        whole = await _whole(source, run)
    finally:
        await source.aclose()
    assert len(steps) == 4
    for step, asked in zip(steps, whole, strict=True):
        request = ModelRequest.model_validate(asked)
        assert RequestChain().key(request, step.index).matches(step)
        assert older_fingerprint(version, request.fingerprint_payload()) == step.fingerprint
        middle = len(request.messages) // 2
        changed = [
            request.model_copy(
                update={
                    "messages": [
                        *request.messages[:middle],
                        Message.user("x"),
                        *request.messages[middle + 1 :],
                    ]
                }
            ),
            request.model_copy(update={"tools": [ToolSpec(name="other")]}),
            request.model_copy(update={"output_schema": {"type": "object"}}),
            request.model_copy(update={"params": {"temperature": 0.5}}),
        ]
        assert not any(RequestChain().key(other, step.index).matches(step) for other in changed)


@pytest.mark.parametrize("version", sorted(OLD))
async def test_an_older_run_resumed_goes_on_in_the_current_schema_and_reads_whole(
    tmp_path: Path, version: int
) -> None:
    source, run = OLD[version]
    path = tmp_path / "crashed.jsonl"
    kept = []
    for line in source.read_text().splitlines():  # the run as a crash after step 3 left it
        record = json.loads(line)
        if record["type"] == "step" and record["index"] > 3:
            continue
        if record["type"] == "session" and record["status"] == "completed":
            continue
        kept.append(line)
    path.write_text("\n".join(kept) + "\n")

    model = delta_archs.tool_model()
    result = await jeeves.resume(delta_archs.tool_agent(), run, journal=path, model=model)
    assert result.text == "done after 3 lookups"
    assert len(model.requests) == 2  # steps 0-3 were served: only the last two model calls ran
    if version == 2:
        spellings = {line[: len('{"type": ')] for line in path.read_text().splitlines()}
        assert spellings == {'{"type": ', '{"type":"'}  # json.dumps' lines, then pydantic's: one file

    journal = JSONLJournal(path, create=False)
    try:
        steps = await _model_steps(journal, run)
        assert [s.v for s in steps] == [version, version, SCHEMA_VERSION, SCHEMA_VERSION]
        assert steps[2].request["base"] == 2 and steps[3].request["base"] == 4  # on the older record
        whole = await _whole(journal, run)
    finally:
        await journal.aclose()
    assert whole[2:] == [r.fingerprint_payload() for r in model.requests]
    assert older_fingerprint(version, whole[1]) == steps[1].fingerprint  # as that schema hashed it
    await jeeves.replay(delta_archs.tool_agent(), path, run)  # older and current steps in one run


async def test_the_explorer_reads_each_recorded_call_whole(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    shutil.copy(V2_JOURNAL, tmp_path / "v2.jsonl")
    convo = Convo(change="params", at=2)
    await jeeves.run(convo, "Chat.", model=convo.model(), journal=path, session_id="c1")

    calls = whole_requests(await JournalBrowser(path).requests("c1"))
    assert [c["request"] for c in calls] == convo.seen
    assert [c["step"] for c in calls] == list(range(6))
    old = whole_requests(await JournalBrowser(tmp_path / "v2.jsonl").requests("v2run"))
    assert [len(c["request"]["messages"]) for c in old] == [2, 4, 6, 8]


_GOLDEN_V3 = [
    "364262db4b48970491e88c744aa62cd754fbd5ed63cc9a13e5da34b53ab26f75",
    "38ec465a591a02c2fbe560e5deb820f6c407237e46996163fc34a85c54ab2cf2",
    "4a7c19076b1e52bf0ed90b385d87e4bf5e47fb252ea5cc23f3fed7fffa029a42",
]
"""Schema v3 fingerprints of `_golden_requests` (and of a tool step's request), as main
computed them at v3: every recorded fingerprint must stay the same, or recorded runs diverge."""
_GOLDEN_V4 = [
    "1aa2476b43c883754e55a3c7058d4b6f4a0c90231cca2041f79428bae1e6f321",
    "83548ca24d258b5b9813b7b0bf0e988bbf103fa3afe1c5d7335b99e0406cbd20",
]
"""Schema v4 fingerprints of `_golden_requests`, as computed when v4 was introduced."""


def _golden_requests() -> tuple[ModelRequest, ModelRequest]:
    tools = [
        ToolSpec(
            name="lookup",
            description="Look \u00e9 up",
            parameters={"type": "object", "properties": {"k": {"type": "string"}}, "required": ["k"]},
        )
    ]
    params = {"temperature": 0.7, "max_tokens": 1e16, "api_key": "sk-secret", "stop": ["\n", "\u2028"]}
    first = [
        Message(role="system", content='You are \u2603 "careful".\n\tTabs\x01'),
        Message(role="user", content="caf\u00e9 1.0"),
    ]
    turn = [
        Message(
            role="assistant",
            content=None,
            tool_calls=[ToolCall(id="c0", name="lookup", arguments='{"k": "\u00fc"}')],
        ),
        Message(role="tool", content="r" * 50 + "\u00e9", tool_call_id="c0", name="lookup"),
    ]
    schema = {"type": "object", "b": 1, "a": [1.5, None, True]}
    one = ModelRequest(messages=first, tools=tools, output_schema=schema, params=params)
    return one, ModelRequest(messages=[*first, *turn], tools=tools, output_schema=schema, params=params)


def test_the_fingerprints_of_a_fixed_request_are_the_recorded_ones() -> None:
    one, two = _golden_requests()
    chain = RequestChain()
    first = chain.key(one, 0)
    first.commit()
    extended = chain.key(two, 2)
    assert [first.fingerprint, extended.fingerprint] == _GOLDEN_V4
    assert RequestChain().key(two, 0).fingerprint == _GOLDEN_V4[1]  # whole or chained: one value
    # as the format says: the messages' JSON list without its brackets, then the other fields' hash
    listed = TypeAdapter(list[Message]).dump_json(two.messages)[1:-1]
    payload = two.fingerprint_payload()
    settings = fingerprint({k: payload[k] for k in ("tools", "output_schema", "params")})
    assert hashlib.sha256(b"request v4\n" + listed + b"\n" + settings.encode()).hexdigest() == _GOLDEN_V4[1]
    assert plain_key({"name": "lookup", "arguments": '{"k": "\u00fc"}'}).fingerprint == _GOLDEN_V3[2]
    # a v3 record of either request is matched by the v3 hash of the whole request
    assert [older_fingerprint(3, r.fingerprint_payload()) for r in (one, two)] == _GOLDEN_V3[:2]
    for index, request in enumerate((one, two)):
        record = StepRecord(v=3, session_id="s", index=index, kind="model", fingerprint=_GOLDEN_V3[index])
        assert RequestChain().key(request, index).matches(record)
    # a record of a later schema that kept this fingerprint (KEY_VERSION) is matched as it is
    later = StepRecord(v=KEY_VERSION + 1, session_id="s", index=1, kind="model", fingerprint=_GOLDEN_V4[1])
    assert RequestChain().key(two, 1).matches(later)


def test_canonical_json_is_what_json_dumps_writes_with_sorted_keys() -> None:
    """Fingerprints hash `canonical(payload)`: the text `json.dumps(payload, sort_keys=True,
    separators=(",", ":"), ensure_ascii=False, default=str)` writes, for every kind of value."""
    import datetime
    import decimal

    from jeeves.journal.records import canonical

    payloads: list[Any] = [
        'ü\u2028\x00"\\',
        1,
        -0.0,
        1e16,
        float("nan"),
        float("-inf"),
        10**30,
        True,
        None,
        [],
        (1, "2"),
        {"b": 1, "a": [1, {"z": "é", "y": None, "x": 1.5}]},
        {3: "int keys", 1: "sorted"},
        {1.5: "float keys", 0.5: "too"},
        {"when": datetime.date(2026, 11, 27), "amount": decimal.Decimal("1.10"), "set": {1}},
        {"name": "lookup", "arguments": '{"k": "ü"}'},
    ]
    for payload in payloads:
        expected = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
        assert canonical(payload) == expected, payload
    looped: list[Any] = []
    looped.append(looped)
    with pytest.raises(RecursionError):  # no shared markers: a payload holding itself recurses
        canonical(looped)
    assert canonical({"after": "a failure"}) == '{"after":"a failure"}'
