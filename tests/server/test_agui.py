"""The AG-UI endpoint and the jeeves → AG-UI mapping, in-process on asyncio and trio."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from ag_ui.core import Event as AguiEvent
from ag_ui.core import RunAgentInput
from pydantic import TypeAdapter

from jeeves import Router
from jeeves.events import (
    DelegationCompleted,
    ModelCompleted,
    ModelDelta,
    ModelRetrying,
    SessionStarted,
    SteeringInjected,
    ToolCompleted,
    ToolStarted,
    WatchdogVerdictEvent,
)
from jeeves.messages import ToolCall
from jeeves.server import AguiMapper, create_app
from jeeves.server.runs import RunRecord
from tests.server.conftest import Blocked, asgi_client, messages
from tests.server.nested import nested, nested_router

pytestmark = pytest.mark.anyio

AGUI = TypeAdapter[Any](AguiEvent)


def agui_input(task: str = "Write and document add.", run_id: str = "run-1", **props: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "threadId": "thread-1",
        "runId": run_id,
        "messages": [{"id": "m1", "role": "user", "content": task}],
    }
    if props:
        body["forwardedProps"] = props
    return body


# A stream kind: its START, its middle and END events, and the field naming the stream.
STREAMS = {
    "TEXT_MESSAGE": ("TEXT_MESSAGE_START", ("TEXT_MESSAGE_CONTENT",), "TEXT_MESSAGE_END", "message_id"),
    "TOOL_CALL": ("TOOL_CALL_START", ("TOOL_CALL_ARGS",), "TOOL_CALL_END", "tool_call_id"),
}


def check_well_formed(events: list[Any], earlier: list[Any] = ()) -> None:  # type: ignore[assignment]
    """The protocol's sequencing rules, as @ag-ui/client's verifier applies them; a run that
    resumes `earlier` (an interrupted run) may answer the tool calls that run made."""
    assert events[0].type == "RUN_STARTED"
    assert events[-1].type in ("RUN_FINISHED", "RUN_ERROR")
    assert all(e.type not in ("RUN_STARTED", "RUN_FINISHED", "RUN_ERROR") for e in events[1:-1])
    active: set[str] = set()
    finished: set[str] = set()
    open_streams: dict[str, str | None] = {}
    owners: dict[str, str | None] = {
        e.tool_call_id: getattr(e, "subagent_run_id", None) for e in earlier if e.type == "TOOL_CALL_START"
    }
    for e in events[1:-1]:
        who = getattr(e, "subagent_run_id", None)
        if e.type == "SUBAGENT_STARTED":
            assert who not in active and who not in finished
            assert e.parent_subagent_run_id is None or e.parent_subagent_run_id in active
            active.add(who)
            continue
        if e.type in ("SUBAGENT_FINISHED", "SUBAGENT_ERROR"):
            assert who in active
            active.remove(who)
            finished.add(who)
            continue
        assert who is None or who in active, f"{e.type} from {who!r}, which is not running"
        if e.type == "TOOL_CALL_RESULT":
            assert owners[e.tool_call_id] == who
        for start, middle, end, key in STREAMS.values():
            if e.type == start:
                assert getattr(e, key) not in owners
                open_streams[getattr(e, key)] = owners[getattr(e, key)] = who
            elif e.type in (*middle, end):
                assert open_streams[getattr(e, key)] == who
                if e.type == end:
                    del open_streams[getattr(e, key)]
    if events[-1].type == "RUN_FINISHED":
        assert not active and not open_streams


async def post_agui(app: Any, path: str, body: dict[str, Any]) -> list[Any]:
    async with asgi_client(app) as client:
        response = await client.post(path, json=body, headers={"Accept": "text/event-stream"})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    return [AGUI.validate_json(m.data) for m in messages(response.text)]


async def test_a_nested_run_is_one_run_with_a_subagent_per_session() -> None:
    app = create_app({"nested": nested}, router=nested_router)
    events = await post_agui(app, "/agui/nested", agui_input())
    check_well_formed(events)
    assert events[0].run_id == "run-1" and events[0].protocol_version == "1.0"
    assert events[0].input.messages[0].content == "Write and document add."
    started = {e.subagent_run_id: e for e in events if e.type == "SUBAGENT_STARTED"}
    assert set(started) == {
        "run-1__coder_0",
        "run-1__coder_0__actor_0",
        "run-1__coder_0__critic_0",
        "run-1__coder_0__actor_1",
        "run-1__coder_0__critic_1",
        "run-1__writer_0",
        "run-1__writer_0__actor_0",
        "run-1__writer_0__critic_0",
    }
    coder, critic = started["run-1__coder_0"], started["run-1__coder_0__critic_1"]
    assert coder.name == "coder" and coder.parent_subagent_run_id is None
    assert critic.name == "critic" and critic.parent_subagent_run_id == "run-1__coder_0"
    assert critic.parent_tool_call_id is None
    delegate_calls = [e for e in events if e.type == "TOOL_CALL_START" and e.tool_call_name == "delegate"]
    assert [c.tool_call_id for c in delegate_calls] == ["run-1/call_0_0", "run-1/call_0_1"]
    assert all(c.subagent_run_id is None for c in delegate_calls)
    assert coder.parent_tool_call_id == "run-1/call_0_0"
    assert started["run-1__writer_0"].parent_tool_call_id == "run-1/call_0_1"
    assert coder.parent_message_id == delegate_calls[0].parent_message_id == "run-1/step-0"
    results = {e.tool_call_id: e.content for e in events if e.type == "TOOL_CALL_RESULT"}
    assert results == {
        "run-1/call_0_0": "def add(a, b): return a + b",
        "run-1/call_0_1": "add(a, b) returns the sum of a and b.",
    }
    finished = {e.subagent_run_id: e.result for e in events if e.type == "SUBAGENT_FINISHED"}
    assert json.loads(finished["run-1__coder_0__critic_0"])["summary"] == "subtracts instead of adding"
    custom = [(e.name, e.subagent_run_id, e.value.get("round")) for e in events if e.type == "CUSTOM"]
    assert ("jeeves.critique", "run-1__coder_0", 0) in custom
    assert ("jeeves.critique", "run-1__coder_0", 1) in custom
    assert ("jeeves.delegation.started", None, None) in custom
    assert ("jeeves.round.started", "run-1__writer_0", 0) in custom
    assert all(name.startswith("jeeves.") for name, _, _ in custom)
    scores = [e.value["score"] for e in events if e.type == "CUSTOM" and e.name == "jeeves.critique"]
    assert sorted(scores) == [0.3, 0.9, 0.95]
    last = events[-1]
    assert last.type == "RUN_FINISHED" and last.result == "Done: add is written and documented."
    assert [(u.model, u.input_tokens > 0) for u in last.usage] == [("scripted", True)]


async def test_child_text_streams_as_messages_that_carry_the_childs_run_id() -> None:
    app = create_app({"nested": nested}, router=nested_router)
    events = await post_agui(app, "/agui", agui_input(architecture="nested"))
    texts: dict[str, list[str]] = {}
    for e in events:
        if e.type == "TEXT_MESSAGE_CONTENT":
            texts.setdefault(e.message_id, []).append(e.delta)
    start = next(
        e for e in events if e.type == "TEXT_MESSAGE_START" and e.subagent_run_id == "run-1__coder_0__actor_1"
    )
    assert start.message_id == "run-1__coder_0__actor_1/step-0" and start.name == "actor"
    assert "".join(texts[start.message_id]) == "def add(a, b): return a + b"
    assert len(texts[start.message_id]) > 1  # streamed, not sent whole
    root_text = next(e for e in events if e.type == "TEXT_MESSAGE_START" and e.subagent_run_id is None)
    assert root_text.name == "supervisor"


async def test_the_only_architecture_is_the_default_and_the_session_id_can_be_chosen() -> None:
    app = create_app({"nested": nested}, router=nested_router)
    events = await post_agui(app, "/agui", agui_input(session_id="mine"))
    assert {e.subagent_run_id for e in events if e.type == "SUBAGENT_STARTED"} >= {"mine__coder_0"}
    assert app.state.runs.get("mine").status == "completed"  # the same run is on the jeeves stream


async def test_a_failed_run_ends_with_run_error() -> None:
    app = create_app({"nested": nested}, router=Router())
    events = await post_agui(app, "/agui", agui_input())
    check_well_formed(events)
    assert events[-1].type == "RUN_ERROR" and events[-1].code == "UserError"
    assert "No model route" in events[-1].message


async def test_a_cancelled_run_closes_its_subagents_and_finishes_cancelled() -> None:
    started = anyio.Event()

    class Parent:
        name = "parent"

        async def run(self, ctx: Any, task: str) -> Any:
            started.set()  # the POST has registered the run
            return await ctx.run(Blocked(), task, role="worker")

    app = create_app({"parent": Parent()})
    async with asgi_client(app) as client:
        async with anyio.create_task_group() as group:

            async def cancel_when_blocked() -> None:
                with anyio.fail_after(10):
                    await started.wait()
                    record = app.state.runs.get("run-1")
                    assert record is not None
                    while record.last_seq < 3:
                        await record.wait_after(record.last_seq, 10)
                await client.delete("/runs/run-1")

            group.start_soon(cancel_when_blocked)
            response = await client.post("/agui", json=agui_input())
    events = [AGUI.validate_json(m.data) for m in messages(response.text)]
    check_well_formed(events)
    assert [e.type for e in events[-2:]] == ["SUBAGENT_ERROR", "RUN_FINISHED"]
    assert events[-2].subagent_run_id == "run-1__worker_0" and events[-2].code == "cancelled"
    assert events[-1].outcome.type == "cancelled"


@pytest.mark.parametrize(
    ("path", "body", "status", "needle"),
    [
        ("/agui", {"threadId": "t"}, 422, "runId"),
        (
            "/agui/nested",
            {**agui_input(), "messages": [{"id": "a", "role": "assistant", "content": "hi"}]},
            422,
            "no user message",
        ),
        ("/agui/nope", agui_input(), 404, "'nope'"),
        ("/agui/nested", agui_input(run_id="bad__id"), 422, "'bad__id'"),
    ],
)
async def test_bad_agui_requests_are_refused_before_streaming(
    path: str, body: dict[str, Any], status: int, needle: str
) -> None:
    app = create_app({"nested": nested, "other": nested}, router=nested_router)
    async with asgi_client(app) as client:
        response = await client.post(path, json=body)
        unnamed = await client.post("/agui", json=agui_input())
    assert response.status_code == status, response.text
    assert needle in response.json()["error"]
    assert unnamed.status_code == 422 and "nested, other" in unnamed.json()["error"]


# -- the mapper alone ---------------------------------------------------------------------
def mapper() -> AguiMapper:
    return AguiMapper(RunAgentInput.model_validate(agui_input()), "root")


def types(events: list[Any]) -> list[str]:
    return [e.type.value for e in events]


def test_a_retry_closes_the_half_streamed_message_and_the_retry_gets_its_own_id() -> None:
    m = mapper()
    m.map(SessionStarted(session_id="root", role="agent", architecture="agent"))
    first = m.map(ModelDelta(session_id="root", text="Hel", step=0))
    retry = m.map(
        ModelRetrying(
            session_id="root", model="a", next_model="a", attempt=1, error_type="RateLimited", message="429"
        )
    )
    again = m.map(ModelDelta(session_id="root", text="Hello", step=0))
    done = m.map(ModelCompleted(session_id="root", text="Hello", model="a", step=0))
    assert types(first) == ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT"]
    assert first[0].message_id == "root/step-0" and first[0].name == "agent"
    assert types(retry) == ["TEXT_MESSAGE_END", "CUSTOM"] and retry[0].message_id == "root/step-0"
    assert again[0].message_id == "root/step-0.1"
    assert types(done) == ["TEXT_MESSAGE_END"] and done[0].message_id == "root/step-0.1"


def test_watchdog_verdicts_and_steering_are_namespaced_custom_events() -> None:
    m = mapper()
    verdict = m.map(
        WatchdogVerdictEvent(
            session_id="root__goal_0",
            firing=1,
            verdict="STUCK",
            reason="the same restart three times",
            source="signal",
            obtained="signal",
            step=3,
            window=["restart_service({}) → ok"],
        )
    )
    steer = m.map(
        SteeringInjected(
            session_id="root", target_session_id="root__agent_0", cause="stuck", message="Step back."
        )
    )
    assert [(e.type.value, e.name, e.subagent_run_id) for e in verdict + steer] == [
        ("CUSTOM", "jeeves.watchdog.verdict", "root__goal_0"),
        ("CUSTOM", "jeeves.steering.injected", None),
    ]
    assert verdict[0].value["verdict"] == "STUCK" and verdict[0].value["source"] == "signal"
    assert steer[0].value["message"] == "Step back."


def test_text_that_was_not_streamed_is_sent_whole_and_tool_calls_hang_off_it() -> None:
    m = mapper()
    calls = [ToolCall(id="c1", name="search", arguments='{"q": "x"}')]
    out = m.map(ModelCompleted(session_id="root", text="Let me look.", tool_calls=calls, model="a", step=2))
    assert types(out) == [
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
    ]
    assert out[1].delta == "Let me look." and out[3].parent_message_id == "root/step-2"
    assert out[3].tool_call_id == "root/c1" and out[4].delta == '{"q": "x"}'
    assert m.map(ToolStarted(session_id="root", tool_call_id="c1", name="search", arguments="{}")) == []
    result = m.map(
        ToolCompleted(session_id="root", tool_call_id="c1", name="search", result="oops", is_error=True)
    )
    assert types(result) == ["TOOL_CALL_RESULT"] and result[0].metadata == {"jeeves": {"is_error": True}}


def test_a_tool_result_is_sent_once_and_a_call_never_announced_is_opened_first() -> None:
    m = mapper()
    delegated = m.map(
        DelegationCompleted(
            session_id="root", worker="w", child_session_id="root__w_0", output="ok", tool_call_id="d1"
        )
    )
    first = m.map(ToolCompleted(session_id="root", tool_call_id="d1", name="delegate", result="ok"))
    again = m.map(ToolCompleted(session_id="root", tool_call_id="d1", name="delegate", result="ok"))
    assert types(delegated) == ["CUSTOM"]
    assert types(first) == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT"]
    assert again == []


def test_finish_closes_open_messages_and_subagents_innermost_first() -> None:
    m = mapper()
    m.map(SessionStarted(session_id="root__a_0", parent_id="root", role="a", architecture="agent"))
    m.map(SessionStarted(session_id="root__a_0__b_0", parent_id="root__a_0", role="b", architecture="agent"))
    m.map(ModelDelta(session_id="root__a_0__b_0", text="half", step=0))
    record = RunRecord("root", "x", "t")
    record.status = "failed"
    record.error = RuntimeError("boom")
    out = m.finish(record)
    assert types(out) == ["TEXT_MESSAGE_END", "SUBAGENT_ERROR", "SUBAGENT_ERROR", "RUN_ERROR"]
    assert [e.subagent_run_id for e in out[1:3]] == ["root__a_0__b_0", "root__a_0"]
    assert out[-1].message == "boom" and out[-1].code == "RuntimeError"
