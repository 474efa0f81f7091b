"""Branches (`jeeves._run.branch`): a child session executed apart from its run, then adopted.

A durable worker queues spread children to other workers (tests/durable/test_spread.py
does it across processes on PostgreSQL). Here the "other worker" is `stream_branch` in
this process on a fresh build of the architecture, sharing only the journal, so the
adoption contract can be checked exactly: the run's output, events, usage and model calls
are those of a run that executed every child itself, and a strict replay is exact.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

import pytest

import jeeves
from jeeves import ActorCritic, Agent, Budget, FunctionModel
from jeeves._run.branch import Placement, placement_of, stream_branch
from jeeves._run.context import SPREADER, Architecture, Context
from jeeves._run.runner import build_router
from jeeves.critics import LLMCritic
from jeeves.durable.spread import arch_path, resolve_path
from jeeves.errors import JournalError, ReplayDivergence, UserError
from jeeves.events import Event
from jeeves.journal.memory import MemoryJournal
from jeeves.messages import ModelRequest
from jeeves.models.router import Router
from tests.architectures.test_plan_execute import detail, run_stream, slice_script, sliced
from tests.journal.archs import build_team, passes_tests, team_models

pytestmark = pytest.mark.anyio
TASK = "add and count"


def counted(calls: Counter[str]) -> dict[str, FunctionModel]:
    """The team's models, each call counted by the session that made it."""

    def wrap(model: FunctionModel) -> FunctionModel:
        inner = model.function

        def answer(request: ModelRequest) -> Any:
            calls[request.session_id or ""] += 1
            return inner(request)

        return FunctionModel(answer, model_name=model.model_name)

    return {role: wrap(model) for role, model in team_models().items()}


class Elsewhere:
    """A spreader that executes each child as another worker would: on a fresh build of the
    architecture, found by its path, with only the journal shared."""

    def __init__(
        self,
        root: Architecture,
        journal: MemoryJournal,
        models: Mapping[str, FunctionModel],
        build: Callable[[], Architecture] = build_team,
        router: Callable[[], Router] | None = None,
    ) -> None:
        self.root, self.journal, self.build = root, journal, build
        self.router = router or (lambda: build_router(None, None, models))
        self.placements: list[Placement] = []
        self.events: list[Event] = []

    async def __call__(self, ctx: Context, child: Architecture, task: str, index: int) -> bool:
        path = arch_path(self.root, child)
        assert path is not None
        placement = Placement.from_json(placement_of(ctx, index).to_json())  # as it travels in a queue
        self.placements.append(placement)
        arch = resolve_path(self.build(), path)
        async with stream_branch(arch, task, placement, journal=self.journal, router=self.router()) as events:
            async for event in events:
                self.events.append(event)
            result = await events.result()
        assert result.status in ("completed", "failed"), result  # a failed session is adopted too
        return True


async def spread_run(
    session_id: str, calls: Counter[str], **kwargs: Any
) -> tuple[jeeves.RunResult, list[Event], Elsewhere, MemoryJournal]:
    journal = MemoryJournal()
    root = build_team()
    models = counted(calls)
    elsewhere = Elsewhere(root, journal, kwargs.pop("branch_models", models), kwargs.pop("build", build_team))
    token = SPREADER.set(elsewhere)
    try:
        async with jeeves.stream(
            root, TASK, models=models, journal=journal, session_id=session_id, **kwargs
        ) as events:
            seen = [event async for event in events]
            result = await events.result()
    finally:
        SPREADER.reset(token)
    return result, seen, elsewhere, journal


async def here_run(
    session_id: str, calls: Counter[str], **kwargs: Any
) -> tuple[jeeves.RunResult, list[Event]]:
    async with jeeves.stream(
        build_team(), TASK, models=counted(calls), journal=MemoryJournal(), session_id=session_id, **kwargs
    ) as events:
        seen = [event async for event in events]
        return await events.result(), seen


def shape(events: list[Event]) -> Counter[tuple[str, str]]:
    return Counter((event.type, event.session_id) for event in events)


async def test_adopted_branches_give_the_run_an_uninterrupted_runs_output_events_usage_and_calls() -> None:
    spread_calls: Counter[str] = Counter()
    here_calls: Counter[str] = Counter()
    result, events, elsewhere, journal = await spread_run("team", spread_calls)
    expected, expected_events = await here_run("team", here_calls)

    assert [p.session_id for p in sorted(elsewhere.placements, key=lambda p: p.session_id)] == [
        "team__coder_0",
        "team__helper_0",
    ]
    assert result.text == expected.text and result.stop_reason == expected.stop_reason
    assert spread_calls == here_calls  # every call once: the adopted steps were served, not made again
    assert shape(events) == shape(expected_events)  # the branches' events are in the run's stream
    assert not any(event.replayed for event in events)  # they happened live (elsewhere)
    assert result.usage == expected.usage
    assert result.usage_by_role == expected.usage_by_role
    assert result.usage_by_session == expected.usage_by_session
    branch_sessions = {e.session_id for e in elsewhere.events}
    assert branch_sessions and all(s.startswith(("team__coder_0", "team__helper_0")) for s in branch_sessions)

    replayed = await jeeves.replay(build_team(), journal, "team")  # strict: every step used, none missing
    assert replayed.text == expected.text


async def test_a_branch_records_the_session_it_is_in_the_run() -> None:
    _, _, elsewhere, journal = await spread_run("placed", Counter())
    coder = next(p for p in elsewhere.placements if p.role == "coder")
    assert coder.parent_id == "placed"
    assert coder.role_path == ("supervisor", "coder")
    record = await journal.get_session(coder.session_id)
    assert record is not None
    assert (record.parent_id, record.role, record.status) == ("placed", "coder", "completed")


async def test_adoption_leaves_the_branchs_session_records_as_its_worker_wrote_them() -> None:
    """A parent adopting a branch writes none of its session records: rewriting them (in
    progress, then ended) let a parent taken over mid-adoption read an ended branch as
    unfinished (found by a fresh-clone CI run: `tests/durable/test_spread.py`)."""
    writes: list[tuple[str, str, bool]] = []

    class Watched(MemoryJournal):
        elsewhere: set[str] = set()  # the branches executing now (they run in parallel)

        async def put_session(self, record: Any) -> None:
            by_branch = any(record.session_id.startswith(sid) for sid in self.elsewhere)
            writes.append((record.session_id, record.status, by_branch))
            await super().put_session(record)

    journal = Watched()
    root = build_team()
    models = counted(Counter())
    elsewhere = Elsewhere(root, journal, models)
    branch_call = elsewhere.__call__

    async def marked(ctx: Context, child: Architecture, task: str, index: int) -> bool:
        journal.elsewhere.add(ctx.session_id)
        try:
            return await branch_call(ctx, child, task, index)
        finally:
            journal.elsewhere.discard(ctx.session_id)

    token = SPREADER.set(marked)
    try:
        result = await jeeves.run(root, TASK, models=models, journal=journal, session_id="kept")
    finally:
        SPREADER.reset(token)
    assert result.status == "completed"
    branch_writes = [w for w in writes if w[0].startswith(("kept__coder_0", "kept__helper_0"))]
    assert branch_writes and all(
        inside for _, _, inside in branch_writes
    )  # only the branch's worker wrote them
    assert {w[0] for w in branch_writes if w[1] == "completed"} >= {"kept__coder_0", "kept__helper_0"}


async def test_a_branch_runs_under_what_the_run_has_left_and_its_spend_is_charged_to_the_run() -> None:
    calls: Counter[str] = Counter()
    result, events, elsewhere, _ = await spread_run("budgeted", calls, budget=Budget(max_model_calls=50))
    assert all(p.budget is not None and p.budget["max_model_calls"] == 49 for p in elsewhere.placements)
    assert result.usage.model_calls == sum(calls.values())  # the branches' calls are the run's


async def test_a_branch_recorded_by_other_code_is_a_divergence_not_a_silent_rerun() -> None:
    def other_team() -> Architecture:
        team = build_team()
        team.workers["helper"] = Agent("You add, differently.", role="adder")  # type: ignore[index]
        return team

    calls: Counter[str] = Counter()
    with pytest.raises(ReplayDivergence, match="helper"):
        await spread_run("diverged", calls, build=other_team)


async def test_a_step_the_other_worker_did_not_record_is_a_divergence_naming_the_session() -> None:
    def shorter() -> Architecture:
        team = build_team()
        team.workers["coder"] = ActorCritic(
            Agent("You write code."), [LLMCritic(), passes_tests], max_rounds=0
        )  # type: ignore[index]
        return team

    with pytest.raises(ReplayDivergence, match="ran on another worker"):
        await spread_run("short", Counter(), build=shorter)


async def test_plan_execute_steps_spread_with_their_budget_slices_and_fail_as_in_one_process() -> None:
    """Parallel worker steps under 100-token slices: step `a` runs out of its slice on the
    other worker, `b` completes; adopted, the plan fails and replans as in one process."""
    here_model = slice_script()
    here, here_events = await run_stream(sliced(), here_model, journal=MemoryJournal())

    journal = MemoryJournal()
    root = sliced()
    elsewhere = Elsewhere(
        root, journal, {}, build=sliced, router=lambda: build_router(None, slice_script(), None)
    )
    token = SPREADER.set(elsewhere)
    try:
        model = slice_script()
        spread, spread_events = await run_stream(root, model, journal=journal)
    finally:
        SPREADER.reset(token)

    assert sorted(p.session_id for p in elsewhere.placements) == [
        "r__plan_0__step_0",
        "r__plan_0__step_1",
        "r__plan_1__step_0",
    ]
    assert all(
        p.slice == {"max_tokens": 100, "max_usd": None, "max_model_calls": None, "deadline_s": None}
        for p in elsewhere.placements
    )
    assert spread.text == here.text and spread.stop_reason == here.stop_reason
    assert detail(spread).reports[0].rationale == detail(here).reports[0].rationale
    assert shape(spread_events) == shape(here_events)
    (breach,) = [e for e in spread_events if e.type == "budget.exceeded"]
    assert (breach.session_id, breach.slice_id, breach.replayed) == (
        "r__plan_0__step_0",
        "r__plan_0__step_0",
        False,
    )
    assert spread.usage == here.usage
    assert model.requests and all(r.session_id and "__step_" not in r.session_id for r in model.requests)
    replayed = await jeeves.replay(sliced(), journal, "r")
    assert replayed.text == here.text


def test_paths_lead_from_the_root_to_its_children_and_back() -> None:
    team = build_team()
    coder = team.workers["coder"]  # type: ignore[attr-defined]
    assert arch_path(team, coder) == ["workers", "coder"]
    assert arch_path(team, coder.actor) == ["workers", "coder", "actor"]
    assert resolve_path(build_team(), ["workers", "helper"]).role == "adder"  # type: ignore[attr-defined]
    assert arch_path(team, Agent("built on the fly")) is None


def test_a_path_another_build_cannot_follow_is_a_user_error_naming_it() -> None:
    with pytest.raises(UserError, match=r"\['workers', 'tester'\].*same code"):
        resolve_path(build_team(), ["workers", "tester"])
    with pytest.raises(UserError, match="not an architecture"):
        resolve_path(build_team(), ["workers"])
    with pytest.raises(UserError, match="same code"):
        resolve_path(build_team(), ["_private"])


def test_a_malformed_placement_is_a_user_error_naming_it() -> None:
    with pytest.raises(UserError, match="malformed.*one version"):
        Placement.from_json({"session_id": "x__a_0"})
    good = Placement("r__a_0", "r", "a", ("r", "a"), 0)
    assert Placement.from_json(good.to_json()) == good


async def test_a_spreader_that_fails_stops_the_run_instead_of_failing_the_child_quietly() -> None:
    async def broken(ctx: Context, child: Architecture, task: str, index: int) -> bool:
        raise ConnectionError("database unreachable")

    token = SPREADER.set(broken)
    try:
        with pytest.raises(JournalError, match=r"could not run on another worker \(ConnectionError.*resume"):
            await jeeves.run(
                build_team(), TASK, models=team_models(), journal=MemoryJournal(), session_id="down"
            )
    finally:
        SPREADER.reset(token)


async def test_outside_a_worker_spread_children_run_here() -> None:
    calls: Counter[str] = Counter()
    result, events = await here_run("local", calls)
    assert result.status == "completed" and sum(calls.values()) == 9
    assert {e.session_id for e in events} >= {"local__coder_0", "local__helper_0"}


async def test_adopted_sessions_are_marked_on_their_spans_and_make_no_model_call_spans() -> None:
    from tests.telemetry.test_telemetry import Traced, attrs

    traced = Traced()
    calls: Counter[str] = Counter()
    await spread_run("traced", calls, tracer=traced.tracer)
    sessions = {
        attrs(s).get("jeeves.session.id"): attrs(s) for s in traced.spans if s.name.startswith("invoke_agent")
    }
    assert sessions["traced__coder_0"].get("jeeves.adopted") is True
    assert sessions["traced__helper_0"].get("jeeves.adopted") is True
    assert "jeeves.adopted" not in sessions["traced"]
    chats = [s for s in traced.spans if s.name.startswith("chat")]
    assert len(chats) == calls["traced"] == 2  # only the supervisor's calls were made here


async def test_a_durable_spreader_leaves_other_runs_children_alone_and_adopts_only_existing_branches() -> (
    None
):
    from jeeves.durable.spread import Spreader

    asked: list[str] = []

    class NoBranches:
        """A DBOS client that holds no workflow (a worker that never spread)."""

        def retrieve_workflow(self, sid: str) -> object:
            import dbos

            asked.append(sid)
            raise dbos.error.DBOSNonExistentWorkflowError("workflow", sid)

    async def client() -> object:
        return NoBranches()

    for run_id, expected in (("another-run", []), ("mine", ["mine__coder_0", "mine__helper_0"])):
        root = build_team()
        spreader = Spreader(client, "team", root, run_id, poll_s=0.01, enqueue=False)
        token = SPREADER.set(spreader)
        try:
            calls: Counter[str] = Counter()
            result = await jeeves.run(
                root, TASK, models=counted(calls), journal=MemoryJournal(), session_id="mine"
            )
        finally:
            SPREADER.reset(token)
        assert result.status == "completed" and sum(calls.values()) == 9  # every child ran here
        assert sorted(asked) == expected  # a run that is not the spreader's own asks nothing
        asked.clear()
