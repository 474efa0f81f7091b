"""Goal: a watched tool agent, ended by a success critic or a stop condition."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import anyio
import pytest

import jeeves
from jeeves import Agent, FunctionModel, Goal, Router, ScriptedModel, Watchdog
from jeeves.architectures import GoalOutput
from jeeves.errors import ProviderError, UserError
from jeeves.events import Event
from jeeves.messages import ModelRequest
from jeeves.stop import MaxToolCalls, WatchdogVerdict
from jeeves.testing import Reply, call
from tests.conftest import crash_child, wait_for_line
from tests.memory_journal import DictJournal

pytestmark = pytest.mark.anyio

GOAL = "the test suite passes"


class Box:
    """A tiny world: `fix` makes the tests pass, `run_tests` reports, `edit_docs` drifts."""

    def __init__(self) -> None:
        self.fixed = False
        self.tool_calls = 0

    def tools(self) -> list[jeeves.Tool]:
        box = self

        @jeeves.tool
        def run_tests() -> str:
            """Run the test suite."""
            box.tool_calls += 1
            if not box.fixed:
                raise RuntimeError("1 failed: test_add")
            return "all passed"

        @jeeves.tool
        def fix(change: str) -> str:
            """Change the code."""
            box.tool_calls += 1
            box.fixed = change == "return a + b"
            return "edited"

        @jeeves.tool
        def edit_docs(text: str) -> str:
            """Edit the documentation."""
            box.tool_calls += 1
            return "docs edited"

        return [run_tests, fix, edit_docs]

    def success(self, task: str, output: str) -> bool:
        return self.fixed


def verdict(v: str, reason: str) -> str:
    return json.dumps({"verdict": v, "reason": reason})


def goal(box: Box, **kw: Any) -> Goal:
    agent = Agent("You maintain a small Python project.", tools=box.tools(), max_turns=40)
    return Goal(agent, goal=GOAL, success=box.success, **kw)


async def run_stream(arch: Goal, model: object, **kw: Any) -> tuple[jeeves.RunResult, list[Event]]:
    async with jeeves.stream(arch, "Make the tests pass.", model=model, session_id="g", **kw) as events:  # type: ignore[arg-type]
        seen = [e async for e in events]
        result = await events.result()
    return result, seen


def detail(result: jeeves.RunResult) -> GoalOutput:
    assert isinstance(result.detail, GoalOutput)
    return result.detail


def stubborn_agent(requests: list[ModelRequest]) -> FunctionModel:
    """Runs the failing tests again and again until told it is stuck, then fixes and claims."""

    def act(request: ModelRequest) -> Reply:
        requests.append(request)
        told = any(
            "You appear to be stuck" in (m.content or "") for m in request.messages if m.role == "user"
        )
        fixed = any(m.role == "tool" and m.name == "fix" for m in request.messages)
        if fixed:
            return Reply(tool_calls=[call("claim_complete", {"report": "fixed add"})])
        if told:
            return Reply(tool_calls=[call("fix", {"change": "return a + b"})])
        return Reply(tool_calls=[call("run_tests")])

    return FunctionModel(act)


async def test_a_stuck_agent_is_steered_and_changes_course() -> None:
    box, requests = Box(), []
    result, events = await run_stream(
        goal(box, watchdog=Watchdog(every=0, repeat_limit=3)), stubborn_agent(requests)
    )
    out = detail(result)
    assert result.stop_reason == "verified"
    assert [(f.verdict, f.source) for f in out.watchdog] == [("STUCK", "signal")]
    assert "run_tests with the same arguments 3 times" in out.watchdog[0].reason
    # The steering message is in the very next model request, then the agent changes course.
    fourth = requests[3].messages
    assert fourth[-1].role == "user" and "You appear to be stuck" in (fourth[-1].content or "")
    assert [e.cause for e in events if e.type == "steering.injected"] == ["stuck"]
    assert box.tool_calls == 4  # three test runs, one fix


async def test_without_the_watchdog_the_same_agent_burns_its_budget() -> None:
    box, requests = Box(), []
    result, _ = await run_stream(goal(box, stop=MaxToolCalls(12)), stubborn_agent(requests))
    assert result.stop_reason == "max_tool_calls"
    assert box.tool_calls == 12 and not box.fixed


async def test_misled_restates_the_goal() -> None:
    box = Box()
    script = {
        "agent": [
            Reply(tool_calls=[call("edit_docs", {"text": "a"})]),
            Reply(tool_calls=[call("edit_docs", {"text": "b"})]),
            Reply(tool_calls=[call("fix", {"change": "return a + b"})]),
            Reply(tool_calls=[call("claim_complete", {"report": "done"})]),
        ],
        "watchdog": [verdict("MISLED", "it edits the docs instead of the code.")],
    }
    model = ScriptedModel(script)
    result, events = await run_stream(goal(box, watchdog=Watchdog(every=2)), model)
    model.assert_consumed()
    assert result.stop_reason == "verified"
    injected = [e for e in events if e.type == "steering.injected"]
    assert [e.cause for e in injected] == ["misled"]
    assert GOAL in injected[0].message and "it edits the docs instead of the code" in injected[0].message
    assert injected[0].target_session_id == "g__agent_0"
    started = {e.session_id: e for e in events if e.type == "session.started"}
    assert started["g__watchdog_0"].role == "watchdog"


async def test_achieved_verifies_at_once_and_ends_a_turn_before_the_claim() -> None:
    box = Box()
    script = {
        "agent": [
            Reply(tool_calls=[call("fix", {"change": "return a + b"})]),
            Reply(tool_calls=[call("run_tests")]),
            # never reached: the watchdog's ACHIEVED is verified first
            Reply(tool_calls=[call("claim_complete", {"report": "done"})]),
        ],
        "watchdog": [verdict("ACHIEVED", "the tests pass now.")],
    }
    model = ScriptedModel(script)
    result, _ = await run_stream(goal(box, watchdog=Watchdog(every=2)), model)
    assert result.stop_reason == "verified"
    assert len(detail(result).verifications) == 1
    with pytest.raises(jeeves.errors.UnconsumedSteps):
        model.assert_consumed()  # the claim turn never happened


async def test_achieved_with_a_failing_check_hands_the_findings_back() -> None:
    box = Box()
    requests: list[ModelRequest] = []

    def act(request: ModelRequest) -> Reply:
        requests.append(request)
        if request.messages[0].content and "supervise" in request.messages[0].content:
            return Reply(text=verdict("ACHIEVED", "looks done."))
        turn = sum(1 for m in request.messages if m.role == "assistant")
        plan = [
            [call("edit_docs", {"text": "a"})],
            [call("run_tests")],
            [call("fix", {"change": "return a + b"})],
            [call("claim_complete", {"report": "fixed"})],
        ]
        return Reply(tool_calls=plan[turn])

    result, events = await run_stream(
        goal(box, watchdog=Watchdog(every=2, repeat_limit=None)), FunctionModel(act)
    )
    out = detail(result)
    assert result.stop_reason == "verified"
    assert [v.score for v in out.verifications] == [0.0, 1.0]
    injected = [e for e in events if e.type == "steering.injected"]
    assert [e.cause for e in injected] == ["verification_failed"]
    agent_requests = [r for r in requests if "supervise" not in (r.messages[0].content or "")]
    assert "the goal is not met yet" in (agent_requests[2].messages[-1].content or "")


async def test_an_unreadable_or_failing_watchdog_never_interrupts() -> None:
    box = Box()
    script = {
        "agent": [
            Reply(tool_calls=[call("edit_docs", {"text": "a"})]),
            Reply(tool_calls=[call("fix", {"change": "return a + b"})]),
            Reply(tool_calls=[call("edit_docs", {"text": "b"})]),
            Reply(tool_calls=[call("claim_complete", {"report": "done"})]),
        ],
        "watchdog": [
            "I think it is fine, mostly?",
            ProviderError("bad request", status_code=400),
            verdict("PROGRESSING", "fine."),
        ],
    }
    result, events = await run_stream(
        goal(box, watchdog=Watchdog(every=1, repeat_limit=None)), ScriptedModel(script)
    )
    assert result.stop_reason == "verified"
    firings = detail(result).watchdog
    assert [(f.verdict, f.obtained) for f in firings[:2]] == [
        ("PROGRESSING", "fallback"),
        ("PROGRESSING", "error"),
    ]
    assert not [e for e in events if e.type == "steering.injected"]


async def test_a_watchdog_that_must_not_fail_raises() -> None:
    box = Box()
    script = {
        "agent": [Reply(tool_calls=[call("edit_docs", {"text": "a"})])],
        "watchdog": [ProviderError("down", status_code=401)],
    }
    with pytest.raises(ProviderError):
        await jeeves.run(
            goal(box, watchdog=Watchdog(every=1, on_error="raise")), "t", model=ScriptedModel(script)
        )


async def test_stuck_too_often_ends_the_run_stuck_keeping_the_work() -> None:
    box = Box()
    model = FunctionModel(
        lambda r: (
            Reply(text=verdict("STUCK", "no progress."))
            if "supervise" in (r.messages[0].content or "")
            else Reply(tool_calls=[call("edit_docs", {"text": str(len(r.messages))})])
        )
    )
    result, _ = await run_stream(goal(box, watchdog=Watchdog(every=1, repeat_limit=None), max_stuck=2), model)
    out = detail(result)
    assert result.stop_reason == "stuck"
    assert [f.verdict for f in out.watchdog] == ["STUCK", "STUCK"]
    assert out.steps == 2


async def test_a_watchdog_stop_condition() -> None:
    box = Box()
    model = FunctionModel(
        lambda r: (
            Reply(text=verdict("MISLED", "off track."))
            if "supervise" in (r.messages[0].content or "")
            else Reply(tool_calls=[call("edit_docs", {"text": str(len(r.messages))})])
        )
    )
    arch = goal(box, watchdog=Watchdog(every=1, repeat_limit=None), stop=WatchdogVerdict(("MISLED",)))
    result, _ = await run_stream(arch, model)
    assert (result.stop_reason, detail(result).steps) == ("watchdog", 1)


async def test_abort_ends_the_run_with_the_report() -> None:
    box = Box()
    model = ScriptedModel({"agent": [Reply(tool_calls=[call("abort", {"report": "no access to the box"})])]})
    result, _ = await run_stream(goal(box), model)
    assert (result.stop_reason, detail(result).report) == ("aborted", "no access to the box")


async def test_replay_of_a_watched_run_is_exact_and_offline() -> None:
    box, requests = Box(), []
    journal = DictJournal()
    arch = goal(box, watchdog=Watchdog(every=2, repeat_limit=3))
    watchdog = FunctionModel(lambda r: verdict("PROGRESSING", "ok"))
    router = Router({"agent": stubborn_agent(requests), "watchdog": watchdog})
    recorded, live = await run_stream(arch, None, router=router, journal=journal)
    assert recorded.stop_reason == "verified"
    assert [f.source for f in detail(recorded).watchdog] == ["model", "signal", "model"]

    replay_box = Box()
    replay_arch = goal(replay_box, watchdog=Watchdog(every=2, repeat_limit=3))
    replayed, again = await run_stream(replay_arch, ScriptedModel([]), journal=journal, mode="replay")

    def per_session(events: list[Event]) -> list[dict[str, object]]:
        return [e.model_dump(exclude={"seq", "ts", "replayed"}) for e in events]

    assert per_session(again) == per_session(live)
    assert replayed.detail == recorded.detail
    assert replay_box.tool_calls == 0  # tools were served from the journal


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"goal": ""}, "Goal(goal=) must be a non-empty str"),
        ({"watchdog": 5}, "Goal(watchdog=)"),
        ({"max_stuck": 0}, "max_stuck"),
        ({"stop": "never"}, "Goal(stop=)"),
    ],
)
def test_bad_goal_options_are_user_errors(kwargs: dict[str, Any], needle: str) -> None:
    box = Box()
    options: dict[str, Any] = {"goal": GOAL, "success": box.success, **kwargs}
    with pytest.raises(UserError, match=needle.replace("(", r"\(").replace(")", r"\)")):
        Goal(Agent("x", tools=box.tools()), **options)


def test_watchdog_options_are_checked() -> None:
    with pytest.raises(UserError, match="every"):
        Watchdog(every=-1)
    with pytest.raises(UserError, match="repeat_limit"):
        Watchdog(repeat_limit=1)


def test_resume_after_sigkill_mid_run_repeats_nothing(tmp_path: Path) -> None:
    from tests.architectures.goal_crash_child import goal_run

    whole = tmp_path / "whole"
    whole.mkdir()
    uninterrupted = anyio.run(goal_run, whole)
    assert uninterrupted.stop_reason == "verified"
    calls_whole = (whole / "calls").read_text().splitlines()

    killed = tmp_path / "killed"
    killed.mkdir()
    child = crash_child("tests.architectures.goal_crash_child", str(killed), "2")
    try:
        wait_for_line(child, "blocked")  # printed when its tool call is in flight
        child.send_signal(signal.SIGKILL)
    finally:
        child.communicate(timeout=30)
    before = (killed / "calls").read_text().splitlines()
    assert len(before) == 2  # two model calls done and journaled; the second test run was in flight

    resumed = anyio.run(goal_run, killed)
    assert (resumed.stop_reason, resumed.output) == (uninterrupted.stop_reason, uninterrupted.output)
    assert resumed.detail == uninterrupted.detail
    calls = (killed / "calls").read_text().splitlines()
    assert calls == calls_whole  # the same model calls, each made once across both processes
    assert resumed.usage.model_calls == len(calls_whole) - 2
