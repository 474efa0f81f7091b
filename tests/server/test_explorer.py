"""The explorer's reads: live model requests, recorded runs (listed, replayed, their requests)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from jeeves import Agent, Router, ScriptedModel
from jeeves._base.redact import REDACTED
from jeeves.events import SessionStarted
from jeeves.messages import Message, ModelRequest, ToolSpec
from jeeves.server import create_app
from jeeves.server.recorded import view_target
from jeeves.server.requests import RecordingTracer, RequestLog, whole_requests
from jeeves.telemetry.tracer import NullSpan, SpanHandle
from tests.server import explorer_runs
from tests.server.conftest import asgi_client

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    path = tmp_path / "runs.jsonl"
    anyio.run(explorer_runs.record, path)
    return path


def agent_app(**kwargs: Any) -> Any:
    return create_app(
        {"agent": lambda: Agent("You are terse.")},
        router=lambda: Router({"default": ScriptedModel(["hello there"])}),
        **kwargs,
    )


async def test_a_server_run_keeps_each_model_calls_request_for_the_node_detail() -> None:
    async with asgi_client(agent_app()) as client:
        await client.post("/runs", json={"architecture": "agent", "task": "Say hi.", "session_id": "r1"})
        await client.get("/runs/r1/events")  # to the end of the run
        calls = whole_requests((await client.get("/runs/r1/requests/r1")).json()["calls"])
        elsewhere = await client.get("/runs/r1/requests/other__x")
        unknown = await client.get("/runs/nope/requests/nope")
    assert len(calls) == 1 and calls[0]["ok"] is True and calls[0]["call"] == 0
    messages = calls[0]["request"]["messages"]
    assert [m["role"] for m in messages] == ["system", "user"]
    assert messages[0]["content"] == "You are terse." and messages[1]["content"] == "Say hi."
    assert elsewhere.status_code == 404 and "not part of run 'r1'" in elsewhere.json()["error"]
    assert unknown.status_code == 404


class CountingTracer:
    def __init__(self) -> None:
        self.model_calls = 0

    def session(self, started: SessionStarted) -> AbstractContextManager[SpanHandle]:
        return _span()

    def model_call(
        self, started: SessionStarted, request: ModelRequest
    ) -> AbstractContextManager[SpanHandle]:
        self.model_calls += 1
        return _span()

    def tool_call(
        self, started: SessionStarted, name: str, call_id: str, arguments: str
    ) -> AbstractContextManager[SpanHandle]:
        return _span()


@contextmanager
def _span() -> Iterator[SpanHandle]:
    yield NullSpan()


def test_the_recording_tracer_defers_to_the_run_tracer_marks_failures_and_caps_its_log() -> None:
    inner = CountingTracer()
    log = RequestLog(max_calls=2)
    tracer = RecordingTracer(log, inner)
    started = SessionStarted(session_id="s", role="agent", architecture="agent")
    request = ModelRequest(messages=[Message(role="user", content="hi")], params={"api_key": "sk-secret"})
    with tracer.model_call(started, request):
        pass
    with pytest.raises(RuntimeError), tracer.model_call(started, request):
        raise RuntimeError("provider down")
    with tracer.model_call(started, request):
        pass
    calls = log.calls("s")
    assert inner.model_calls == 3  # OpenTelemetry (or any tracer) still sees every call
    assert [c["ok"] for c in calls] == [True, False] and log.dropped == 1
    assert "sk-secret" not in str(calls)


def test_the_request_log_masks_what_it_stored_when_it_is_read_and_keeps_the_call_time_copy() -> None:
    log = RequestLog()
    tracer = RecordingTracer(log, CountingTracer())
    started = SessionStarted(session_id="s", role="agent", architecture="agent")
    schema = {"type": "object", "properties": {}, "examples": [{"api_key": "sk-in-schema"}]}
    request = ModelRequest(
        messages=[Message(role="user", content="hi")],
        tools=[ToolSpec(name="lookup", description="", parameters=schema)],
    )
    with tracer.model_call(started, request):
        pass
    request.messages.append(Message(role="user", content="added after the call"))  # not what was asked
    first, again = log.calls("s"), log.calls("s")
    assert "sk-in-schema" not in str(first) and first == again
    assert first[0]["request"]["tools"][0]["parameters"]["examples"] == [{"api_key": REDACTED}]
    assert "added after the call" not in str(first)
    assert set(first[0]) == {"call", "model", "request", "ok"}


async def test_a_served_journal_lists_its_runs_and_replays_one_as_events(recorded: Path) -> None:
    async with asgi_client(agent_app(journal=recorded)) as client:
        listing = (await client.get("/journal")).json()
        body = (await client.get("/journal/runs/rec-1/events")).json()
        actor = whole_requests(
            (await client.get("/journal/runs/rec-1/requests/rec-1__actor_1")).json()["calls"]
        )
        missing = await client.get("/journal/runs/nope/events")
    assert listing["journal"] == "runs.jsonl"
    assert [(r["session_id"], r["status"]) for r in listing["runs"]] == [("rec-1", "completed")]
    assert listing["runs"][0]["usage"]["cost_usd"] == pytest.approx(0.000065)
    assert body["error"] is None
    events = body["events"]
    assert all(e["replayed"] for e in events)
    critiques = [e for e in events if e["type"] == "critique"]
    assert [(c["score"], c["threshold"]) for c in critiques] == [(0.4, 0.8), (0.9, 0.8)]
    costs = [e["usage"]["cost_usd"] for e in events if e["type"] == "model.completed"]
    assert costs == [0.000012, 0.000019, 0.000013, 0.000021]  # as recorded: a replay is not free to look at
    assert len(actor) == 1 and actor[0]["step"] == 0 and actor[0]["ok"] is True
    assert (
        "wrong sign" in actor[0]["request"]["messages"][-1]["content"]
    )  # the refine prompt quotes the critique
    assert missing.status_code == 404 and "holds no run 'nope'" in missing.json()["error"]


async def test_a_recorded_run_that_cannot_be_rebuilt_returns_the_reason_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "bare.jsonl"
    import jeeves

    await jeeves.run(
        Agent("Hi."), "x", router=Router({"default": ScriptedModel(["ok"])}), journal=path, session_id="bare"
    )
    async with asgi_client(agent_app(journal=path)) as client:
        body = (await client.get("/journal/runs/bare/events")).json()
    assert body["events"] == [] and "does not say how to rebuild" in body["error"]["message"]
    async with asgi_client(agent_app()) as client:
        no_journal = await client.get("/journal")
    assert no_journal.json() == {"journal": None, "runs": []}
    async with asgi_client(agent_app()) as client:
        elsewhere = await client.get("/journal/runs/bare/events")
    assert elsewhere.status_code == 404 and "--journal" in elsewhere.json()["error"]


async def test_the_journal_listing_gives_the_latest_runs_and_refuses_a_bad_count(tmp_path: Path) -> None:
    path = tmp_path / "served.jsonl"
    async with asgi_client(agent_app(journal=path)) as client:
        for sid in ("r1", "r2", "r3"):
            await client.post("/runs", json={"architecture": "agent", "task": "Say hi.", "session_id": sid})
            await client.get(f"/runs/{sid}/events")  # to the end of the run
        latest = (await client.get("/journal?last=2")).json()
        every = (await client.get("/journal")).json()
        more = (await client.get("/journal?last=501")).json()
        bad = [
            await client.get("/journal", params={"last": raw})
            for raw in ("0", "-1", "two", "١", "1" * 12, "")
        ]
    assert [r["session_id"] for r in latest["runs"]] == ["r2", "r3"] and latest["journal"] == "served.jsonl"
    assert (
        [r["session_id"] for r in every["runs"]]
        == ["r1", "r2", "r3"]
        == [r["session_id"] for r in more["runs"]]
    )
    assert [response.status_code for response in bad] == [400] * 6
    error = bad[2].json()["error"]
    assert error == 'last must be a number of runs from 1 to 999999999, got "two"; omit it for every run.'


async def test_the_journal_listing_sends_only_the_fields_asked_for(tmp_path: Path) -> None:
    """The page lists the latest 500 runs by id, architecture, status and cost: it need not
    carry every run's output (500 runs of 200 KB outputs made a 100 MB answer)."""
    path = tmp_path / "served.jsonl"
    async with asgi_client(agent_app(journal=path)) as client:
        await client.post("/runs", json={"architecture": "agent", "task": "Say hi.", "session_id": "r1"})
        await client.get("/runs/r1/events")
        slim = (await client.get("/journal?last=501&fields=session_id,architecture,status,usage")).json()
        whole = (await client.get("/journal?last=501")).json()
        refused = [await client.get("/journal", params={"fields": f}) for f in ("session_id,secret", "", ",")]
    assert slim["runs"] == [
        {k: whole["runs"][0][k] for k in ("session_id", "architecture", "status", "usage")}
    ]
    assert "output" in whole["runs"][0] and "task" in whole["runs"][0]
    assert [r.status_code for r in refused] == [400, 400, 400]
    said = refused[0].json()["error"]
    assert said.startswith('fields names what no run has ("secret"); use some of ') and "session_id" in said


async def test_view_opens_the_latest_run_or_the_one_named_and_refuses_others(recorded: Path) -> None:
    assert await view_target(recorded, None) == "rec-1"
    assert await view_target(recorded, "rec-1") == "rec-1"
    with pytest.raises(Exception, match=r"holds no run 'rec-9'.*'rec-1'"):
        await view_target(recorded, "rec-9")
    with pytest.raises(Exception, match=r"holds no run 'rec-1__actor_1'; its latest runs are: 'rec-1' "):
        await view_target(recorded, "rec-1__actor_1")  # a session of the run, not a run


async def test_one_journal_records_the_servers_runs_and_the_page_browses_them(tmp_path: Path) -> None:
    path = tmp_path / "new" / "served.jsonl"  # not there yet: the server creates it
    async with asgi_client(agent_app(journal=path)) as client:
        empty = (await client.get("/journal")).json()
        none_yet = await client.get("/journal/runs/r1/events")
        await client.post("/runs", json={"architecture": "agent", "task": "Say hi.", "session_id": "r1"})
        live = [line for line in (await client.get("/runs/r1/events")).text.splitlines() if line]
        listing = (await client.get("/journal")).json()
        body = (await client.get("/journal/runs/r1/events")).json()
        calls = whole_requests((await client.get("/journal/runs/r1/requests/r1")).json()["calls"])
    assert empty == {"journal": "served.jsonl", "runs": []}
    assert none_yet.status_code == 404 and "holds no run 'r1'" in none_yet.json()["error"]
    assert live and path.is_file()
    assert [(r["session_id"], r["status"]) for r in listing["runs"]] == [("r1", "completed")]
    assert body["error"] is None  # rebuilt from the catalog entry the run was recorded under
    events = body["events"]
    assert events and all(e["replayed"] for e in events)
    assert events[0]["type"] == "session.started" and events[-1]["type"] == "session.completed"
    assert len(calls) == 1 and calls[0]["request"]["messages"][-1]["content"] == "Say hi."


def test_jeeves_view_serves_the_recorded_run_and_prints_its_address(recorded: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with subprocess.Popen(
        [sys.executable, "-m", "jeeves", "view", str(recorded), "rec-1", "--no-browser"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as proc:
        try:
            assert proc.stdout is not None
            lines = [proc.stdout.readline(), proc.stdout.readline()]
            assert lines[0].startswith("jeeves: serving the viewer at http://127.0.0.1:"), lines
            url = lines[1].removeprefix("jeeves: open ").strip()
            assert url.endswith("/#journal=rec-1")
            base = url.split("#", 1)[0]
            events = httpx.get(f"{base}journal/runs/rec-1/events", timeout=30).json()["events"]
            page = httpx.get(base, timeout=30)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    assert events[0]["type"] == "session.started" and events[-1]["type"] == "session.completed"
    assert "run explorer" in page.text


def test_jeeves_view_of_a_run_the_journal_lacks_is_one_error_line(recorded: Path) -> None:
    from jeeves.cli.main import main

    assert main(["view", str(recorded), "rec-9", "--no-browser"]) == 2
    assert main(["view", str(recorded.with_name("none.db"))]) == 2  # view browses: the file must exist


async def test_a_long_sessions_requests_are_read_holding_only_the_request_the_next_extends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import jeeves
    from jeeves import ToolCall, tool
    from jeeves.journal.memory import MemoryJournal
    from jeeves.server import recorded
    from jeeves.testing import FunctionModel, Reply

    @tool
    async def lookup(key: str) -> str:
        """Look a key up."""
        return "r" * 50

    turns = 60

    def answer(request: Any) -> Any:
        made = (len(request.messages) - 2) // 2
        if made + 1 >= turns:
            return Reply(text="done")
        return Reply(tool_calls=[ToolCall(id=f"c{made}", name="lookup", arguments='{"key": "k"}')])

    journal, model = MemoryJournal(), FunctionModel(answer)
    await jeeves.run(
        Agent("You look things up.", tools=[lookup], max_turns=turns + 1),
        "Go.",
        model=model,
        journal=journal,
        session_id="long",
    )
    held: list[int] = []
    rebuild = recorded.whole_request

    def counted(stored: Any, earlier: Any, where: str = "") -> Any:
        held.append(len(earlier))  # the whole requests kept when this one is rebuilt
        return rebuild(stored, earlier, where)

    monkeypatch.setattr(recorded, "whole_request", counted)
    calls = whole_requests(await recorded.JournalBrowser(journal).requests("long"))
    assert len(held) == turns and max(held) == 1  # one whole request at a time, not all of them
    assert [len(c["request"]["messages"]) for c in calls] == [len(r.messages) for r in model.requests]
    assert calls[-1]["request"]["messages"][-1]["content"] == "r" * 50


async def test_a_request_extending_an_older_step_is_rebuilt_from_it() -> None:
    from jeeves.journal.memory import MemoryJournal
    from jeeves.journal.records import StepRecord
    from jeeves.server.recorded import JournalBrowser

    def user(text: str) -> dict[str, Any]:
        return {"role": "user", "content": text}

    settings = {"tools": [], "output_schema": None, "params": {}}
    stored = [
        {"messages": [user("a")], **settings},
        {"base": 0, "messages": [user("b")]},
        {"base": 0, "messages": [user("c")]},  # a retry from step 0, not from step 1
        {"base": 2, "messages": [user("d")]},
        {"messages": [user("x")], **settings},  # a rewritten history, stored whole
        {"base": 4, "messages": [user("y")]},
    ]
    journal = MemoryJournal()
    for index, request in enumerate(stored):
        await journal.put_step(
            StepRecord(session_id="s", index=index, kind="model", fingerprint="f", request=request, result={})
        )
    calls = whole_requests(await JournalBrowser(journal).requests("s"))
    texts = [[m["content"] for m in call["request"]["messages"]] for call in calls]
    assert texts == [["a"], ["a", "b"], ["a", "c"], ["a", "c", "d"], ["x"], ["x", "y"]]
