"""The server's request log holds each call's additions, not the whole conversation again, and is freed."""

from __future__ import annotations

import gc
import json
import sys
import weakref
from pathlib import Path
from typing import Any

import pytest

from jeeves import Agent, FunctionModel, Router, tool
from jeeves.messages import ModelRequest
from jeeves.server import create_app
from jeeves.server.requests import RequestLog, delta_form, whole_requests
from jeeves.testing import Reply, call
from tests.server.conftest import asgi_client

pytestmark = pytest.mark.anyio


@tool(approval="read_only")
def step(n: int) -> str:
    """Take one step."""
    return f"step {n} done: " + "log line " * 20


def long_agent(turns: int) -> Agent:
    def act(request: ModelRequest) -> Reply:
        done = sum(m.role == "tool" for m in request.messages)
        if done < turns - 1:
            return Reply(text=f"Turn {done}: " + "thinking " * 20, tool_calls=[call("step", {"n": done})])
        return Reply(text="All steps done.")

    return Agent("Take the steps one by one.", tools=[step], model=FunctionModel(act), max_turns=turns)


def held_bytes(root: object) -> int:
    """Bytes of every object reachable from `root` (each counted once, as memory holds it)."""
    seen: set[int] = set()
    stack: list[Any] = [root]
    total = 0
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        total += sys.getsizeof(item)
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple | set):
            stack.extend(item)
        elif hasattr(item, "__dict__"):
            stack.append(vars(item))
    return total


sent: dict[int, int] = {}
"""Bytes of the route's answer per run length."""


async def run_turns(turns: int) -> tuple[int, list[dict[str, Any]], weakref.ref[RequestLog]]:
    """Run a `turns`-turn agent on a server; the bytes its request log held, its calls as read, and
    a weak reference to the log, taken after the run was dropped."""
    app = create_app({"long": long_agent(turns)}, router=Router({}))
    async with asgi_client(app) as client:
        started = await client.post("/runs", json={"architecture": "long", "task": "Go.", "session_id": "L"})
        assert started.status_code == 201, started.text
        record = app.state.runs.get("L")
        await record.wait()
        assert record.status == "completed", record.summary()
        log = record.requests
        size = held_bytes(log)
        calls = log.calls("L")
        read = await client.get("/runs/L/requests/L")
        assert whole_requests(read.json()["calls"]) == calls  # the route sends the same calls
        sent[turns] = len(read.content)
        app.state.runs.retention_s = 0
        del record
        assert app.state.runs.get("L") is None  # past retention: the record and its log are dropped
    return size, calls, weakref.ref(log)


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_600_turn_runs_request_log_is_linear_in_turns_and_freed_after_the_run() -> None:
    half, calls_300, _ = await run_turns(300)
    full, calls_600, freed = await run_turns(600)
    gc.collect()
    assert freed() is None
    assert full < 2.5 * half, (half, full)
    assert sent[600] < 2.2 * sent[300], sent  # the route sends each message once, too
    assert len(calls_600) == 600 and len(calls_300) == 300
    last = calls_600[-1]["request"]["messages"]  # each call still reads as its whole request
    assert len(last) == 2 + 2 * 599 and last[0]["role"] == "system" and last[-1]["role"] == "tool"
    assert calls_600[1]["request"]["messages"] == last[:4]
    assert [c["call"] for c in calls_600[:3]] == [0, 1, 2] and all(c["ok"] for c in calls_600)
    assert calls_600[5]["request"]["tools"][0]["name"] == "step"


async def test_the_route_reads_the_calls_of_a_short_run_whole() -> None:
    _, calls, _ = await run_turns(20)
    assert [len(c["request"]["messages"]) for c in calls] == [2 + 2 * i for i in range(20)]


def test_a_request_that_rewrites_its_history_is_stored_and_read_back_as_asked() -> None:
    from jeeves.messages import Message

    log = RequestLog()
    first = ModelRequest(messages=[Message(role="user", content="a"), Message(role="assistant", content="b")])
    second = ModelRequest(messages=[Message(role="user", content="a"), Message(role="user", content="c")])
    for request in (first, second, first):
        entry = log.open("s", request)
        assert entry is not None
        entry.ok = True
    read = [[m["content"] for m in c["request"]["messages"]] for c in log.calls("s")]
    assert read == [["a", "b"], ["a", "c"], ["a", "b"]]
    assert log.calls("other") == []


def test_the_route_form_sends_each_message_once_and_reads_back_whole() -> None:
    def message(i: int) -> dict[str, str]:
        return {"role": "user", "content": f"m{i}"}

    tools = [{"name": "step"}]
    whole = [
        {"call": 0, "ok": True, "request": {"messages": [message(0)], "tools": tools}},
        {"call": 1, "ok": True, "request": {"messages": [message(0), message(1)], "tools": tools}},
        {"call": 2, "ok": None, "request": None},  # not kept
        {"call": 3, "ok": True, "request": {"messages": [message(0), message(9)], "tools": []}},
    ]
    sent = delta_form(whole)
    assert [(c["kept"], [m["content"] for m in c["added"]]) for c in sent] == [
        (0, ["m0"]),
        (1, ["m1"]),
        (0, []),
        (1, ["m9"]),
    ]
    assert ["shared" in c for c in sent] == [True, False, False, True]  # only when the tools changed
    assert sent[2]["missing"] is True
    assert whole_requests(sent) == whole


async def test_a_recorded_sessions_requests_are_sent_as_additions(tmp_path: Path) -> None:
    from jeeves import run
    from jeeves.journal.sqlite import SQLiteJournal
    from jeeves.server.recorded import JournalBrowser

    sizes = {}
    for turns in (30, 60):
        path = tmp_path / f"{turns}.db"
        async with SQLiteJournal(path) as journal:
            await run(long_agent(turns), "Go.", session_id="L", journal=journal)
        calls = await JournalBrowser(path).requests("L")
        sizes[turns] = len(json.dumps(calls))
        read = whole_requests(calls)
        assert len(read) == turns and [c["step"] for c in read[:2]] == [0, 2]
        assert len(read[-1]["request"]["messages"]) == 2 + 2 * (turns - 1)
    assert sizes[60] < 2.2 * sizes[30], sizes


def test_each_call_dumps_only_the_messages_it_adds(monkeypatch: pytest.MonkeyPatch) -> None:
    """A call that extends its session's previous one is found to by its `Message` objects, so
    the log serializes only what is new: linear in the run, not in the sum of its requests."""
    import jeeves.server.requests as requests
    from jeeves.messages import Message, messages_serializer

    dumped: list[int] = []

    class Counting:
        def to_python(self, messages: list[Message], **options: Any) -> Any:
            dumped.append(len(messages))
            return messages_serializer().to_python(messages, **options)

    monkeypatch.setattr(requests, "messages_serializer", lambda: Counting())
    log = RequestLog()
    history = [Message.system("s"), Message.user("go")]
    for turn in range(50):
        entry = log.open("s", ModelRequest(messages=list(history)))  # a new list of the same objects
        assert entry is not None
        history += [Message(role="assistant", content=f"a{turn}"), Message(role="tool", content=f"t{turn}")]
    assert dumped == [2] + [2] * 49  # the first call whole, then each call's two new messages
    calls = log.calls("s")
    assert [len(c["request"]["messages"]) for c in calls] == [2 + 2 * i for i in range(50)]
    assert calls[-1]["request"]["messages"][-1] == {
        "role": "tool",
        "content": "t48",
        "tool_calls": [],
        "tool_call_id": None,
        "name": None,
    }


def test_a_message_edited_in_place_reads_back_as_each_call_asked_it() -> None:
    from jeeves.messages import Message

    log = RequestLog()
    first = Message.user("a")
    for messages in (
        [first],
        "edit",
        [Message.user("a"), Message.user("c")],  # equal to what `first` was, not what it is now
        [first],  # the edited object: the log must not read it as the "a" it stored
        [first, Message.user("d")],
    ):
        if messages == "edit":
            first.content = "edited"
            continue
        assert log.open("s", ModelRequest(messages=messages)) is not None
    read = [[m["content"] for m in c["request"]["messages"]] for c in log.calls("s")]
    assert read == [["a"], ["a", "c"], ["edited"], ["edited", "d"]]
