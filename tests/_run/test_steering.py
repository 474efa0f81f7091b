"""Steering: the inbox a human's messages wait in, and their way into a live agent (`RunStream.inject`)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

import jeeves
from jeeves import Agent, FunctionModel, ScriptedModel
from jeeves._run.steering import Inbox
from jeeves.errors import UserError
from jeeves.events import Event
from jeeves.messages import ModelRequest
from jeeves.testing import Reply, call
from tests.memory_journal import DictJournal

pytestmark = pytest.mark.anyio

ADVICE = "The config is in /etc/web.conf, not /etc/nginx."


def test_the_inbox_hands_a_message_to_its_session_or_to_the_first_taker() -> None:
    inbox = Inbox()
    inbox.put("for b", "r__b_0")
    inbox.put("for anyone")
    assert inbox.take("r__a_0") == ("for anyone",)
    assert inbox.take("r__a_0") == ()
    assert len(inbox) == 1
    assert inbox.take("r__b_0") == ("for b",)
    assert len(inbox) == 0


def operator_agent(requests: list[ModelRequest]) -> tuple[Agent, FunctionModel, anyio.Event]:
    """An agent whose first tool waits until the test lets it go, then follows what it is told."""
    gate = anyio.Event()

    @jeeves.tool
    async def look_around() -> str:
        """Look at the box."""
        await gate.wait()
        return "nothing obvious"

    def act(request: ModelRequest) -> Reply:
        requests.append(request)
        if len(requests) == 1:
            return Reply(tool_calls=[call("look_around")])
        told = [m.content for m in request.messages if m.role == "user" and m.content == ADVICE]
        return Reply(text="Fixed /etc/web.conf." if told else "I give up.")

    return Agent("You operate a box.", tools=[look_around], max_turns=5), FunctionModel(act), gate


async def run_with_injection(
    journal: Any = None, target: str | None = None
) -> tuple[list[ModelRequest], list[Event], jeeves.RunResult]:
    requests: list[ModelRequest] = []
    agent, model, gate = operator_agent(requests)
    seen: list[Event] = []
    async with jeeves.stream(
        agent, "Fix the web service.", model=model, session_id="op", journal=journal
    ) as events:
        async for event in events:
            seen.append(event)
            if event.type == "tool.started":  # the tool is waiting: the message lands before its turn ends
                events.inject(ADVICE, session_id=target)
                gate.set()
        result = await events.result()
    return requests, seen, result


@pytest.mark.parametrize("target", [None, "op"])
async def test_a_message_injected_live_reaches_the_next_model_request(target: str | None) -> None:
    requests, seen, result = await run_with_injection(target=target)
    assert result.text == "Fixed /etc/web.conf."
    second = requests[1].messages
    assert [m.role for m in second[-2:]] == ["tool", "user"] and second[-1].content == ADVICE
    injected = [e for e in seen if e.type == "steering.injected"]
    assert [(e.source, e.cause, e.target_session_id, e.message) for e in injected] == [
        ("human", "human", "op", ADVICE)
    ]
    kinds = [e.type for e in seen]
    assert (
        kinds.index("tool.completed") < kinds.index("steering.injected") < kinds.index("model.completed", 3)
    )


async def test_replay_adds_the_injected_message_without_the_injector() -> None:
    journal = DictJournal()
    requests, live, recorded = await run_with_injection(journal)
    assert ("op", 2, "function", "inject") in await journal.kinds()

    replay_requests: list[ModelRequest] = []
    agent, _, gate = operator_agent(replay_requests)
    gate.set()
    async with jeeves.stream(
        agent,
        "Fix the web service.",
        model=ScriptedModel([]),
        session_id="op",
        journal=journal,
        mode="replay",
    ) as events:
        again = [e async for e in events]
        replayed = await events.result()
        with pytest.raises(UserError, match="strict replay"):
            events.inject("hello")

    def same(events: list[Event]) -> list[dict[str, object]]:
        return [e.model_dump(exclude={"seq", "ts", "replayed"}) for e in events]

    assert same(again) == same(live)
    assert replayed.text == recorded.text == "Fixed /etc/web.conf."
    assert replay_requests == []  # no model was asked: every call was served


async def test_a_message_for_a_goals_agent_keeps_it_going_after_a_final_reply() -> None:
    model = ScriptedModel({"agent": [Reply(text="Done, I think."), Reply(text="Checked again: done.")]})
    goal = jeeves.Goal(
        Agent("You operate a box.", tools=[], max_turns=5),
        goal="web answers 200",
        success=lambda task, output: "again" in output,
    )
    async with jeeves.stream(goal, "Fix web.", model=model, session_id="g") as events:
        events.inject("Check again before you claim.", session_id="g__agent_0")
        seen = [e async for e in events]
        result = await events.result()
    model.assert_consumed()
    assert result.stop_reason == "verified"
    human = [e for e in seen if e.type == "steering.injected" and e.source == "human"]
    assert [e.target_session_id for e in human] == ["g__agent_0"]


async def test_bad_injections_are_user_errors() -> None:
    model = ScriptedModel([Reply(text="ok")])
    async with jeeves.stream(Agent("x"), "t", model=model, session_id="r") as events:
        with pytest.raises(UserError, match="empty"):
            events.inject("  ")
        with pytest.raises(UserError, match="'other__agent_0' is not part of run 'r'"):
            events.inject("hi", session_id="other__agent_0")
        await events.result()
        with pytest.raises(UserError, match="has ended"):
            events.inject("too late")
