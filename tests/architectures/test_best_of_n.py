from __future__ import annotations

import json

import anyio
import pytest

import jeeves
from jeeves import ActorCritic, Agent, BestOfN, FunctionModel, ScriptedModel, Verdict
from jeeves.architectures import BestOfNOutput
from jeeves.errors import UserError
from jeeves.events import Event
from jeeves.messages import ModelRequest

pytestmark = pytest.mark.anyio

TASK = "Write add(a, b)."
GOOD = "def add(a, b): return a + b"


def adds(task: str, output: str) -> Verdict:
    ok = "a + b" in output
    return Verdict(score=1.0 if ok else 0.0, hard_fail=not ok, issues=[] if ok else ["wrong"], source="tests")


async def streamed(arch: object, model: object, **kw: object) -> tuple[jeeves.RunResult, list[Event]]:
    async with jeeves.stream(arch, TASK, model=model, session_id="bon", **kw) as events:  # type: ignore[arg-type]
        seen = [e async for e in events]
        return await events.result(), seen


def detail(result: jeeves.RunResult) -> BestOfNOutput:
    assert isinstance(result.detail, BestOfNOutput)
    return result.detail


async def test_picks_the_passing_candidate_stops_early_and_replays_exactly(tmp_path: object) -> None:
    journal = jeeves.MemoryJournal()
    judged_first = anyio.Event()  # candidate 1 answers once candidate 0 was judged: a fixed order

    async def adds_in_order(task: str, output: str) -> Verdict:
        if "a + b" not in output:
            judged_first.set()
        return adds(task, output)

    async def reply(request: ModelRequest) -> str:
        k = int(request.session_id.rsplit("_", 1)[1])
        if k == 1:
            await judged_first.wait()
        if k == 2:
            await anyio.sleep_forever()
        return {0: "def add(a, b): return a - b", 1: GOOD}[k]

    model = FunctionModel(reply)
    arch = BestOfN(Agent("You write Python."), [adds_in_order], n=3)
    live, live_events = await streamed(arch, model, journal=journal)
    out = detail(live)
    assert (live.output, out.selected, live.stop_reason) == (GOOD, 1, "passed")
    states = [(c.index, c.passed, c.cancelled, c.started) for c in out.candidates]
    assert states == [(0, False, False, True), (1, True, False, True), (2, False, True, True)]
    assert out.candidates[0].verdicts[0].issues == ["wrong"]
    selected = [e for e in live_events if e.type == "candidate.selected"]
    assert [(e.candidate, e.cancelled, e.passed) for e in selected] == [(1, [2], True)]  # type: ignore[union-attr]

    replayed, replay_events = await streamed(arch, None, journal=journal, mode="replay")
    assert replayed.detail == live.detail
    assert replayed.output == GOOD

    def per_session(events: list[Event], *, skip: str = "bon__candidate_2") -> dict[str, list[object]]:
        out: dict[str, list[object]] = {}
        for e in events:
            if not e.session_id.startswith(skip):
                out.setdefault(e.session_id, []).append(e.model_dump(exclude={"seq", "ts", "replayed"}))
        return out

    assert per_session(replay_events) == per_session(live_events)
    again = await jeeves.replay(arch, journal, "bon")  # the public replay, too
    assert again.detail == live.detail


async def test_sequential_candidates_after_the_first_pass_never_start() -> None:
    model = ScriptedModel({"bon__candidate_0": [GOOD]})
    result = await jeeves.run(
        BestOfN(Agent("You write Python."), [adds], n=3, parallel=False), TASK, model=model, session_id="bon"
    )
    out = detail(result)
    assert [(c.started, c.passed) for c in out.candidates] == [(True, True), (False, False), (False, False)]
    assert len(model.requests) == 1


async def test_tests_first_then_a_judge_on_the_survivors_and_the_best_when_none_passes() -> None:
    model = ScriptedModel(
        {
            "bon__candidate_0": ["def add(a, b): return a - b"],
            "bon__candidate_1": [GOOD],
            "bon__candidate_2": [GOOD + "  # fine"],
            "bon__candidate_1__critic_1": [json.dumps({"score": 0.5, "issues": ["no docstring"]})],
            "bon__candidate_2__critic_1": [json.dumps({"score": 0.7, "issues": ["terse"]})],
        }
    )
    arch = BestOfN(Agent("You write Python."), [adds, Agent("You judge code.", role="judge")], n=3)
    result = await jeeves.run(arch, TASK, model=model, session_id="bon")
    out = detail(result)
    assert (out.selected, result.stop_reason) == (2, "none_passed")
    assert [len(c.verdicts) for c in out.candidates] == [1, 2, 2]  # the judge saw only the survivors
    assert [c.stages_passed for c in out.candidates] == [0, 1, 1]


async def test_several_models_one_candidate_each_and_actor_critic_repairs_the_best() -> None:
    first = Agent("You write Python.", model=ScriptedModel(["def add(a, b): return a - b"] * 2))
    second = Agent("You write Python.", model=ScriptedModel(["def add(a, b): return a * b", GOOD]))
    repaired = ActorCritic(BestOfN([first, second], [adds]), [adds], max_rounds=1)
    result = await jeeves.run(repaired, TASK, session_id="job")
    assert (result.output, result.stop_reason) == (GOOD, "approved")


async def test_bad_configuration_is_one_user_error() -> None:
    with pytest.raises(UserError, match="needs at least one critic"):
        BestOfN(Agent("x"), [])
    with pytest.raises(UserError, match="n=3"):
        BestOfN([Agent("x"), Agent("y")], [adds], n=3)
    with pytest.raises(UserError, match="not an architecture"):
        BestOfN(["x"], [adds])  # type: ignore[list-item]


async def test_a_supervisor_worker_can_be_a_best_of_n() -> None:
    from jeeves import Supervisor
    from jeeves.testing import Reply, call

    model = ScriptedModel(
        {
            "supervisor": [
                Reply(tool_calls=[call("delegate", {"worker": "coder", "instructions": TASK})]),
                "Done: " + GOOD,
            ],
            "lead__coder_0__candidate_0": ["def add(a, b): return a - b"],
            "lead__coder_0__candidate_1": [GOOD],
        }
    )
    coder = BestOfN(Agent("You write Python."), [adds], n=2, parallel=False)
    result = await jeeves.run(Supervisor({"coder": coder}), TASK, model=model, session_id="lead")
    assert result.output == "Done: " + GOOD
    worker = result.usage_by_session
    assert "lead__coder_0__candidate_1" in worker and "lead__coder_0__candidate_0" in worker
