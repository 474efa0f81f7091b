"""PlanExecute: a refused plan touches nothing; a verified one runs, is scored, and is decided."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import anyio
import pytest

import jeeves
from jeeves import Agent, Budget, PlanExecute, ScriptedModel, Verdict
from jeeves.architectures import PlanExecuteOutput
from jeeves.critics.plan import DecisionSpec, Evidence
from jeeves.errors import UserError
from jeeves.events import Event
from jeeves.messages import Usage
from jeeves.models.testing import Reply, call
from tests.conftest import crash_child
from tests.memory_journal import DictJournal

pytestmark = pytest.mark.anyio

SPEC = DecisionSpec(
    required_outputs=["refund_amount", "refund_reason_class"], max_steps=12, max_plan_tokens=8000
)


class Shop:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def tools(self) -> list[jeeves.Tool]:
        shop = self

        @jeeves.tool(approval="read_only")
        def lookup_order(order_id: str) -> str:
            """Look an order up."""
            shop.calls.append("lookup_order")
            return json.dumps({"order_id": order_id, "total": 42.0, "status": "delivered damaged"})

        @jeeves.tool(approval="read_only")
        def eval_policy(reason: str) -> str:
            """Evaluate the refund policy for a reason."""
            shop.calls.append("eval_policy")
            return "refundable: damaged on delivery"

        @jeeves.tool(approval="destructive")
        def issue_refund(order_id: str, amount: float) -> str:
            """Refund an order."""
            shop.calls.append("issue_refund")
            return f"refunded {amount} on {order_id}"

        return [lookup_order, eval_policy, issue_refund]


def refund_plan(*, pinned: bool, amount: float = 42.0) -> str:
    return json.dumps(
        {
            "plan_id": "refund-881-" + ("b" if pinned else "a"),
            "intent": "Refund order 881 if the policy allows it.",
            "outputs": ["refund_amount", "refund_reason_class"],
            "steps": [
                {
                    "id": "lookup",
                    "tool": "lookup_order",
                    "arguments": {"order_id": "881"},
                    "evidence_required": ["order_record"],
                    "evidence": {"order_record": ["order:881"]} if pinned else {},
                    "estimated_tokens": 800,
                },
                {
                    "id": "policy",
                    "tool": "eval_policy",
                    "arguments": {"reason": "damaged"},
                    "depends_on": ["lookup"],
                    "outputs": ["refund_reason_class"],
                },
                {
                    "id": "refund",
                    "tool": "issue_refund",
                    "arguments": {"order_id": "881", "amount": amount},
                    "depends_on": ["policy"],
                    "outputs": ["refund_amount"],
                },
            ],
        }
    )


def passes(task: str, output: str) -> bool:
    return "refunded" in output


def order_record(task: str) -> list[Evidence]:
    """The run's evidence manifest: the order record the plans pin."""
    return [Evidence(id="order:881", classification="order_record", summary="order 881")]


def arch(shop: Shop, **kw: Any) -> PlanExecute:
    options: dict[str, Any] = {
        "tools": shop.tools(),
        "spec": SPEC,
        "evaluators": [passes],
        "evidence": order_record,
        **kw,
    }
    return PlanExecute(Agent("You plan refunds.", role="planner"), **options)


async def run_stream(a: PlanExecute, model: object, **kw: Any) -> tuple[jeeves.RunResult, list[Event]]:
    async with jeeves.stream(a, "Refund order 881.", model=model, session_id="r", **kw) as events:  # type: ignore[arg-type]
        seen = [e async for e in events]
        result = await events.result()
    return result, seen


def detail(result: jeeves.RunResult) -> PlanExecuteOutput:
    assert isinstance(result.detail, PlanExecuteOutput)
    return result.detail


async def test_the_seeds_refund_plan_a_is_refused_before_anything_runs_and_plan_b_completes() -> None:
    shop = Shop()
    model = ScriptedModel({"planner": [refund_plan(pinned=False), refund_plan(pinned=True)]})
    result, events = await run_stream(arch(shop), model)
    model.assert_consumed()
    out = detail(result)
    assert result.stop_reason == "completed"
    assert [r.status for r in out.reports] == ["refused_by_critic", "completed"]
    assert out.reports[0].verify.kind == "missing_evidence"
    assert (out.reports[0].verify.offending_step, out.reports[0].verify.offending_step_id) == (0, "lookup")
    verified = [e for e in events if e.type == "plan.verified"]
    assert [(e.attempt, e.ok, e.kind) for e in verified] == [(0, False, "missing_evidence"), (1, True, None)]
    # Nothing ran in attempt 0: no step session, no tool call, before plan B was verified.
    started = [e.session_id for e in events if e.type == "session.started"]
    assert not [s for s in started if s.startswith("r__plan_0__step_")]
    assert shop.calls == ["lookup_order", "eval_policy", "issue_refund"]
    assert [s for s in started if s.startswith("r__plan_1__step_")] == [
        "r__plan_1__step_0",
        "r__plan_1__step_1",
        "r__plan_1__step_2",
    ]
    decided = [(e.phase, e.decision) for e in events if e.type == "plan.decided"]
    assert decided == [("verify", "replan"), ("score", "accept")]
    # The refusal reaches the planner in the next attempt.
    assert "missing_evidence" in (model_requests(events, "r__plan_1__planner_0") or "")


def model_requests(events: list[Event], session: str) -> str | None:
    return next((e.task for e in events if e.type == "session.started" and e.session_id == session), None)


async def test_an_exhausted_replan_budget_escalates_with_the_report() -> None:
    shop = Shop()
    model = ScriptedModel({"planner": [refund_plan(pinned=False)] * 2})
    result, _ = await run_stream(arch(shop, replan_budget=1), model)
    out = detail(result)
    assert result.stop_reason == "escalated"
    assert out.report is not None and out.report.status == "refused_by_critic"
    assert shop.calls == []


async def test_a_hard_fail_evaluator_overrides_a_high_llm_score() -> None:
    def policy(task: str, output: str) -> Verdict:
        return Verdict(score=0.0, hard_fail=True, issues=["refunds over 40 need a manager"])

    shop = Shop()
    model = ScriptedModel(
        {
            "planner": [refund_plan(pinned=True)],
            "evaluator": [json.dumps({"score": 0.95, "issues": [], "summary": "great"})],
        }
    )
    result, events = await run_stream(
        arch(shop, evaluators=[jeeves.LLMCritic(), policy], hard=["policy"], replan_budget=0, retry_budget=0),
        model,
    )
    out = detail(result)
    assert result.stop_reason == "escalated"
    assert out.report is not None and out.report.score is not None
    assert (out.report.status, out.report.score.hard_failed) == ("refused_by_critic", ["policy"])
    assert out.report.rationale == "policy fail: refunds over 40 need a manager"
    assert [s.text for s in out.steps][-1] == "refunded 42.0 on 881"  # the completed steps are kept


async def test_independent_steps_run_concurrently() -> None:
    both = {"a": anyio.Event(), "b": anyio.Event()}

    def waiter(me: str, other: str) -> jeeves.Tool:
        async def wait(x: str) -> str:
            """Wait for the other step."""
            both[me].set()
            with anyio.fail_after(5):
                await both[other].wait()
            return f"{me} done"

        return jeeves.Tool(wait, name=f"wait_{me}", approval="read_only")

    plan = {
        "plan_id": "p",
        "intent": "two at once",
        "steps": [
            {"id": "a", "tool": "wait_a", "arguments": {"x": "1"}},
            {"id": "b", "tool": "wait_b", "arguments": {"x": "2"}},
        ],
    }
    a = PlanExecute(
        Agent("You plan."),
        tools=[waiter("a", "b"), waiter("b", "a")],
        evaluators=[lambda t, o: "b done" in o],
    )
    result = await jeeves.run(a, "Do both.", model=ScriptedModel({"planner": [json.dumps(plan)]}))
    assert result.stop_reason == "completed"
    assert result.text == "[a] a done\n[b] b done"


async def test_steps_run_in_waves_of_what_their_dependencies_unblocked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each wave is the steps whose last dependency finished in the wave before, in plan order,
    found by counting: no step is compared with another (a 3,200-step chain rescanned every
    waiting step each wave, 10 M comparisons; 2.7 ms a step, now 0.5)."""
    from jeeves.architectures.plan_execute import PlanStep

    def compared(self: PlanStep, other: object) -> bool:
        raise AssertionError("the scheduler compared two steps")

    monkeypatch.setattr(PlanStep, "__eq__", compared)
    waves: list[set[int]] = []

    @jeeves.tool(approval="read_only")
    def work(n: int) -> str:
        """Do part n."""
        waves[-1].add(n)
        return f"part {n}"

    deps = {0: [], 1: [], 2: [0], 3: [0, 1], 4: [3, 2], 5: [4], 6: [1]}  # a diamond, a chain, a branch
    steps = [
        {"id": f"s{n}", "tool": "work", "arguments": {"n": n}, "depends_on": [f"s{d}" for d in ds]}
        for n, ds in deps.items()
    ]
    import jeeves.architectures.plan_execute as pe

    real_run_all = pe.run_all

    async def run_all(calls: list[Any]) -> list[Any]:  # each call of it is one wave
        waves.append(set())
        return await real_run_all(calls)

    monkeypatch.setattr(pe, "run_all", run_all)
    plan = {"plan_id": "p", "intent": "parts", "steps": steps}
    a = PlanExecute(Agent("You plan."), tools=[work], evaluators=[lambda t, o: True])
    result = await jeeves.run(a, "Do the parts.", model=ScriptedModel({"planner": [json.dumps(plan)]}))
    assert result.stop_reason == "completed"
    assert waves == [{0, 1}, {2, 3, 6}, {4}, {5}]


async def test_a_failing_step_returns_to_the_planner() -> None:
    shop = Shop()
    boom = jeeves.Tool(lambda order_id: 1 / 0, name="lookup_order", approval="read_only")
    tools = [boom, *shop.tools()[1:]]
    model = ScriptedModel({"planner": [refund_plan(pinned=True), refund_plan(pinned=True)]})
    result, events = await run_stream(arch(shop, tools=tools, replan_budget=1, retry_budget=0), model)
    decided = [(e.phase, e.decision) for e in events if e.type == "plan.decided"]
    assert decided == [("score", "replan"), ("score", "escalate")]
    assert (
        "step 'lookup' failed: Tool 'lookup_order' failed: ZeroDivisionError"
        in detail(result).reports[0].rationale
    )
    assert shop.calls == []  # nothing after the failed step ran


async def test_replay_is_exact() -> None:
    shop = Shop()
    journal = DictJournal()
    model = ScriptedModel({"planner": [refund_plan(pinned=False), refund_plan(pinned=True)]})
    recorded, live = await run_stream(arch(shop), model, journal=journal)
    again_shop = Shop()
    replayed, again = await run_stream(arch(again_shop), ScriptedModel([]), journal=journal, mode="replay")

    def dump(events: list[Event]) -> list[dict[str, object]]:
        return [e.model_dump(exclude={"seq", "ts", "replayed"}) for e in events]

    assert dump(again) == dump(live)
    assert replayed.detail == recorded.detail
    assert again_shop.calls == []


def test_bad_options_are_user_errors() -> None:
    shop = Shop()
    with pytest.raises(UserError, match="needs tools or workers"):
        PlanExecute(Agent("x"))
    with pytest.raises(UserError, match=r"hard=\['nope'\] names no evaluator"):
        arch(shop, hard=["nope"])
    with pytest.raises(UserError, match="replan_budget"):
        arch(shop, replan_budget=-1)
    with pytest.raises(UserError, match="approval mode 'dangerous'"):
        jeeves.Tool(lambda: 1, name="x", approval="dangerous")  # type: ignore[arg-type]


def test_resume_after_sigkill_mid_execution_repeats_no_completed_step(tmp_path: Path) -> None:
    from tests.architectures.plan_crash_child import plan_run

    whole = tmp_path / "whole"
    whole.mkdir()
    uninterrupted = anyio.run(plan_run, whole)
    assert uninterrupted.stop_reason == "completed"
    assert (whole / "calls").read_text().split() == ["planner", "lookup_order", "eval_policy", "issue_refund"]

    killed = tmp_path / "killed"
    killed.mkdir()
    child = crash_child("tests.architectures.plan_crash_child", str(killed), "block")
    try:
        assert child.stdout is not None
        line = child.stdout.readline()  # printed while the plan's second step is in flight
        assert line == "blocked\n", child.communicate()[1]
        child.send_signal(signal.SIGKILL)
    finally:
        child.communicate(timeout=30)
    assert (killed / "calls").read_text().split() == ["planner", "lookup_order", "eval_policy"]

    resumed = anyio.run(plan_run, killed)
    assert (resumed.stop_reason, resumed.text) == (uninterrupted.stop_reason, uninterrupted.text)
    ours, theirs = detail(resumed).report, detail(uninterrupted).report
    assert ours is not None and theirs is not None
    assert ours.model_dump(exclude={"decided_at"}) == theirs.model_dump(exclude={"decided_at"})
    # The planner and the first step completed before the kill: served, not repeated. The step in
    # flight never completed, so it runs again, and the rest runs once.
    calls = (killed / "calls").read_text().split()
    assert calls == ["planner", "lookup_order", "eval_policy", "eval_policy", "issue_refund"]
    assert resumed.usage.model_calls == 0


def _minimal(**change: Any) -> str:
    """A one-step lookup plan that passes SPEC, with `change` applied to the plan (or, for the
    keys of a step, to its step)."""
    step: dict[str, Any] = {"id": "lookup", "tool": "lookup_order", "arguments": {"order_id": "881"}}
    plan: dict[str, Any] = {
        "plan_id": "p",
        "intent": "look the order up",
        "outputs": ["refund_amount", "refund_reason_class"],
        "steps": [step],
    }
    for key, value in change.items():
        (plan if key in plan else step)[key] = value
    return json.dumps(plan)


@pytest.mark.parametrize(
    ("bad", "kind", "spec"),
    [
        (_minimal(outputs=["refund_amount"]), "violates_decision_spec", SPEC),
        (_minimal(depends_on=["lookup"]), "loop_guard", SPEC),
        (
            _minimal(tool="issue_refund", arguments={"order_id": "881", "amount": 1.0}),
            "approval_mode_mismatch",
            DecisionSpec(required_outputs=SPEC.required_outputs, safety_mode="network"),
        ),
        (_minimal(evidence_required=["order_record"]), "missing_evidence", SPEC),
        (_minimal(estimated_tokens=9000), "budget_exceeded", SPEC),
    ],
)
async def test_each_refusal_kind_is_refused_before_anything_runs_and_a_replan_fixes_it(
    bad: str, kind: str, spec: DecisionSpec
) -> None:
    shop = Shop()
    model = ScriptedModel({"planner": [bad, _minimal()]})
    result, events = await run_stream(arch(shop, spec=spec, evaluators=[lambda t, o: "881" in o]), model)
    model.assert_consumed()
    out = detail(result)
    assert [(r.status, r.verify.kind) for r in out.reports] == [
        ("refused_by_critic", kind),
        ("completed", None),
    ]
    assert shop.calls == ["lookup_order"]  # only the fixed plan's step ran
    assert not [
        e for e in events if e.type == "session.started" and e.session_id.startswith("r__plan_0__step_")
    ]
    assert kind in (model_requests(events, "r__plan_1__planner_0") or "")  # the refusal reached the planner


async def test_a_gated_step_suspends_the_run_and_resumes_after_approval_running_the_tool_once() -> None:
    from jeeves.approvals.decide import Approvals, Decision, record_decision

    shop, journal = Shop(), DictJournal()
    planner = {"planner": [refund_plan(pinned=True)]}
    first = await jeeves.run(
        arch(shop),
        "Refund order 881.",
        model=ScriptedModel(planner),
        session_id="r",
        journal=journal,
        approvals=Approvals(),
    )
    assert first.status == "awaiting_approval"
    (gate,) = first.pending
    assert (gate.session_id, gate.tool, gate.arguments) == (
        "r__plan_0__step_2",
        "issue_refund",
        {"order_id": "881", "amount": 42.0},
    )
    assert shop.calls == ["lookup_order", "eval_policy"]  # the destructive step waits at its gate

    approve = Decision(decision="approve", by="dana", arguments_hash=gate.arguments_hash)
    await record_decision(journal, gate.gate_id, approve)
    resumed = await jeeves.resume(
        arch(shop), "r", journal=journal, model=ScriptedModel([]), approvals=Approvals()
    )
    assert resumed.status == "completed" and resumed.stop_reason == "completed"
    assert shop.calls == ["lookup_order", "eval_policy", "issue_refund"]  # each step once
    assert resumed.text.endswith("[refund] refunded 42.0 on 881")


async def test_a_denied_step_fails_the_attempt_and_goes_back_to_the_planner() -> None:
    from jeeves.approvals.decide import Approvals, Decision, PendingGate

    async def deny(gate: PendingGate) -> Decision:
        return Decision(decision="deny", by="dana", note="over the limit", arguments_hash=gate.arguments_hash)

    shop = Shop()
    model = ScriptedModel({"planner": [refund_plan(pinned=True)]})
    result = await jeeves.run(
        arch(shop, replan_budget=0, retry_budget=0),
        "Refund order 881.",
        model=model,
        approvals=Approvals(),
        approver=deny,
    )
    assert result.stop_reason == "escalated" and "issue_refund" not in shop.calls
    report = detail(result).report
    assert report is not None and "Denied by dana (over the limit)" in report.rationale


# -- budget slices -----------------------------------------------------------------------------


def _usage(tokens: int) -> Usage:
    return Usage(input_tokens=tokens, model_calls=1)


def _workers_plan(plan_id: str, *steps: dict[str, Any]) -> str:
    return json.dumps({"plan_id": plan_id, "intent": "look into it", "steps": list(steps)})


def _worker_step(id: str, **more: Any) -> dict[str, Any]:
    return {"id": id, "worker": "analyst", "arguments": {"task": f"look into {id}"}, **more}


def _analyst() -> Agent:
    @jeeves.tool(approval="read_only")
    def note(text: str) -> str:
        """Write a note down."""
        return "noted"

    return Agent("You analyse.", tools=[note])


def sliced(**kw: Any) -> PlanExecute:
    options: dict[str, Any] = {
        "workers": {"analyst": _analyst()},
        "evaluators": [lambda t, o: "done" in o],
        "step_budget": Budget(max_tokens=100),
        **kw,
    }
    return PlanExecute(Agent("You plan."), **options)


def slice_script() -> ScriptedModel:
    """Attempt 0: steps `a` and `b` in parallel, `c` after both. `a` spends 80 tokens on a tool
    call, so its next call (80 more, by the costliest call so far) could cross its 100-token slice
    and is refused: `a` fails, `b` completes, `c` never runs. Attempt 1 replans without `a`."""
    return ScriptedModel(
        {
            "planner": [
                Reply(
                    _workers_plan(
                        "p0", _worker_step("a"), _worker_step("b"), _worker_step("c", depends_on=["a", "b"])
                    ),
                    usage=_usage(100),
                ),
                Reply(_workers_plan("p1", _worker_step("b")), usage=_usage(100)),
            ],
            "r__plan_0__step_0": [Reply(tool_calls=[call("note", {"text": "x"})], usage=_usage(80))],
            "r__plan_0__step_1": [Reply("b done", usage=_usage(30))],
            "r__plan_1__step_0": [Reply("b done", usage=_usage(30))],
        }
    )


async def test_a_step_over_its_slice_fails_and_the_planner_replans_while_its_sibling_completes() -> None:
    model = slice_script()
    result, events = await run_stream(sliced(), model)
    model.assert_consumed()
    out = detail(result)
    assert result.stop_reason == "completed"
    first = out.reports[0]
    assert first.status == "refused_by_critic"  # a failed step is the executor's hard fail
    assert first.rationale.startswith("executor fail: step 'a' failed: budget_exceeded")
    decided = [(e.attempt, e.phase, e.decision) for e in events if e.type == "plan.decided"]
    assert decided == [(0, "score", "replan"), (1, "score", "accept")]
    # The slice's breach is announced for the step that ran out, and the run's budget is untouched.
    (breach,) = [e for e in events if e.type == "budget.exceeded"]
    assert (breach.session_id, breach.slice_id, breach.limit, breach.allowed) == (
        "r__plan_0__step_0",
        "r__plan_0__step_0",
        "tokens",
        100.0,
    )
    # The sibling in the same wave completed; the step after both never started.
    completed = {e.session_id: e.output for e in events if e.type == "session.completed"}
    assert completed["r__plan_0__step_1"] == "b done"
    started = [e.session_id for e in events if e.type == "session.started"]
    assert "r__plan_0__step_2" not in started
    failed = [e.session_id for e in events if e.type == "session.failed"]
    assert failed == ["r__plan_0__step_0"]
    # The planner was told which step ran out.
    assert "step 'a' failed: budget_exceeded" in (model_requests(events, "r__plan_1__planner_0") or "")


async def test_a_step_over_its_slice_fails_in_a_run_with_no_journal_and_no_reader() -> None:
    """`jeeves.run` with no journal and no run budget takes every fast path (no step wrapper,
    no delta events); the step's slice still refuses its call and the step still fails."""
    model = slice_script()
    result = await jeeves.run(sliced(), "Refund order 881.", model=model, session_id="r")
    model.assert_consumed()
    assert result.stop_reason == "completed"
    out = detail(result)
    assert [(s.step_id, s.failed, s.failure) for s in out.steps] == [("b", False, None)]
    assert out.reports[0].rationale.startswith("executor fail: step 'a' failed: budget_exceeded")
    assert result.usage_by_session["r__plan_0__step_0"].total_tokens == 80


async def test_the_attempts_step_results_say_which_step_ran_out() -> None:
    model = slice_script()
    recorded: list[list[tuple[str, bool, str | None]]] = []

    result, _ = await run_stream(sliced(replan_budget=0), model)
    out = detail(result)
    recorded.append([(s.step_id, s.failed, s.failure) for s in out.steps])
    assert result.stop_reason == "escalated"
    assert recorded == [[("a", True, "budget_exceeded"), ("b", False, None)]]


async def test_a_slices_spend_is_counted_once_in_the_runs_totals() -> None:
    # 340 tokens are spent: 100 + 80 + 30 by attempt 0, 100 + 30 by attempt 1. A run budget of
    # 460 admits that; counting the steps' 140 twice would refuse attempt 1's step (420 spent,
    # plus the 100 a call in flight may cost).
    model = slice_script()
    result, events = await run_stream(sliced(), model, budget=Budget(max_tokens=460))
    assert result.stop_reason == "completed"
    assert result.usage.total_tokens == 340
    assert [e.slice_id for e in events if e.type == "budget.exceeded"] == ["r__plan_0__step_0"]
    assert result.usage_by_session["r__plan_0__step_0"].total_tokens == 80


async def test_a_slice_is_clamped_to_what_remains_of_the_runs_budget() -> None:
    model = ScriptedModel(
        {
            "planner": [
                Reply(
                    _workers_plan("p0", _worker_step("a"), _worker_step("b", depends_on=["a"])),
                    usage=_usage(100),
                )
            ],
            "step": [Reply("done", usage=_usage(10)), Reply("done", usage=_usage(10))],
        }
    )
    arch_ = sliced(step_budget=Budget(max_tokens=1000, max_model_calls=3), estimate_headroom=None)
    result, events = await run_stream(arch_, model, budget=Budget(max_tokens=400))
    assert result.stop_reason == "completed"
    sliced_events = {e.session_id: e for e in events if e.type == "budget.sliced"}
    assert sorted(sliced_events) == ["r__plan_0__step_0", "r__plan_0__step_1"]
    # What remained when each started: 400 - the planner's 100; then 10 fewer, after `a`.
    a, b = sliced_events["r__plan_0__step_0"], sliced_events["r__plan_0__step_1"]
    assert (a.max_tokens, a.max_model_calls, a.deadline_s, a.clamped) == (300, 3, None, ["tokens"])
    assert (b.max_tokens, b.max_model_calls, b.clamped) == (290, 3, ["tokens"])
    # Unclamped when enough remains.
    model = ScriptedModel(
        {"planner": [Reply(_workers_plan("p0", _worker_step("a")), usage=_usage(100))], "step": ["done"]}
    )
    _, events = await run_stream(arch_, model, budget=Budget(max_tokens=5000))
    (e,) = [e for e in events if e.type == "budget.sliced"]
    assert (e.max_tokens, e.clamped) == (1000, [])


def test_a_steps_estimate_caps_its_tokens_with_headroom() -> None:
    from jeeves.critics.plan import PlanStep

    a = sliced(step_budget=Budget(max_tokens=500, max_model_calls=2), estimate_headroom=1.5)
    assert a.step_slice(PlanStep(id="x", worker="analyst", estimated_tokens=100)) == Budget(
        max_tokens=150, max_model_calls=2
    )
    assert a.step_slice(PlanStep(id="x", worker="analyst", estimated_tokens=1000)) == Budget(
        max_tokens=500, max_model_calls=2
    )
    assert a.step_slice(PlanStep(id="x", worker="analyst")) == Budget(max_tokens=500, max_model_calls=2)
    only_estimates = sliced(step_budget=None, estimate_headroom=2)
    assert only_estimates.step_slice(PlanStep(id="x", worker="analyst", estimated_tokens=40)) == Budget(
        max_tokens=80
    )
    assert only_estimates.step_slice(PlanStep(id="x", worker="analyst")) is None
    with pytest.raises(UserError, match="estimate_headroom"):
        sliced(estimate_headroom=0.5)
    with pytest.raises(UserError, match=r"step_budget=\) must be a jeeves.Budget or None, got 100"):
        sliced(step_budget=100)


async def test_a_sliced_run_replays_exactly() -> None:
    journal = DictJournal()
    recorded, live = await run_stream(sliced(), slice_script(), journal=journal)
    replayed, again = await run_stream(sliced(), ScriptedModel([]), journal=journal, mode="replay")

    def per_session(events: list[Event]) -> dict[str, list[dict[str, object]]]:
        out: dict[str, list[dict[str, object]]] = {}
        for e in events:  # parallel steps interleave as they like; each session's events are exact
            out.setdefault(e.session_id, []).append(e.model_dump(exclude={"seq", "ts", "replayed"}))
        return out

    assert per_session(again) == per_session(live)
    assert replayed.detail == recorded.detail
    assert [e.type for e in again].count("budget.sliced") == 3  # a and b; then b again
    assert [e.slice_id for e in again if e.type == "budget.exceeded"] == ["r__plan_0__step_0"]


async def test_a_resumed_sliced_run_serves_its_allotment_and_the_stopped_step() -> None:
    """A resume starts the run's own meter afresh, but each step keeps the slice it was allotted
    and a step its slice stopped stays stopped: the resumed run takes the recorded path."""
    journal = DictJournal()
    first = await jeeves.run(
        sliced(),
        "Look.",
        model=slice_script(),
        session_id="r",
        journal=journal,
        budget=Budget(max_tokens=460),
    )
    resumed = await jeeves.resume(sliced(), "r", journal=journal, model=ScriptedModel([]))
    assert (resumed.stop_reason, resumed.text) == (first.stop_reason, first.text)
    assert resumed.usage.model_calls == 0
    out, theirs = detail(resumed), detail(first)
    assert [s.failure for s in out.steps] == [s.failure for s in theirs.steps]
    assert [r.rationale for r in out.reports] == [r.rationale for r in theirs.reports]


async def test_a_gated_step_under_a_slice_suspends_and_resumes_with_its_allotment_served() -> None:
    from jeeves.approvals.decide import Approvals, Decision, record_decision

    shop, journal = Shop(), DictJournal()
    planner = {"planner": [refund_plan(pinned=True)]}
    budget = Budget(deadline_s=600.0)
    first = await jeeves.run(
        arch(shop, step_budget=budget),
        "Refund order 881.",
        model=ScriptedModel(planner),
        session_id="r",
        journal=journal,
        approvals=Approvals(),
    )
    (gate,) = first.pending
    assert (gate.session_id, gate.step) == ("r__plan_0__step_2", 1)  # the slice's allotment is step 0
    await record_decision(
        journal, gate.gate_id, Decision(decision="approve", by="dana", arguments_hash=gate.arguments_hash)
    )
    resumed = await jeeves.resume(
        arch(shop, step_budget=budget), "r", journal=journal, model=ScriptedModel([]), approvals=Approvals()
    )
    assert resumed.status == "completed"
    assert shop.calls == ["lookup_order", "eval_policy", "issue_refund"]


async def test_the_runs_own_budget_still_ends_the_run_from_inside_a_slice() -> None:
    model = ScriptedModel(
        {
            "planner": [Reply(_workers_plan("p0", _worker_step("a")), usage=_usage(100))],
            "step": [Reply(tool_calls=[call("note", {"text": "x"})], usage=_usage(60))],
        }
    )
    # The slice (1000, clamped to the 150 left) is not what stops `a`: the run's budget is, when
    # a second call could take it past 250. The run stops; no replan is tried.
    result, events = await run_stream(
        sliced(step_budget=Budget(max_tokens=1000)), model, budget=Budget(max_tokens=250)
    )
    assert result.stop_reason == "budget"
    (breach,) = [e for e in events if e.type == "budget.exceeded"]
    assert breach.slice_id is None
    assert not [e for e in events if e.type == "plan.decided"]


async def test_evidence_is_required_by_the_tool_and_must_resolve_in_the_journaled_manifest() -> None:
    """The planner cannot waive a tool's evidence requirement, a made-up reference is refused
    with its own kind, and the manifest is a journaled step: a replay and `rejudge` re-derive
    the same verdicts without calling the retriever."""
    from jeeves.evals.rejudge import CriticVersion, rejudge

    window = "kg:refund_window:rw_881#snapshot_kg_2026_05_09_T0930"
    retrieved: list[str] = []

    def retriever(task: str) -> list[Evidence]:
        retrieved.append(task)
        return [Evidence(id=window, classification="refund_window", summary="inside the window")]

    @jeeves.tool(approval="destructive", requires_evidence=["refund_window"])
    def issue_refund(payment_id: str, amount_inr: int) -> str:
        """Refund a payment."""
        return f"refunded {amount_inr} INR on {payment_id}"

    def plan(plan_id: str, **refund: Any) -> str:
        step = {
            "id": "refund",
            "tool": "issue_refund",
            "arguments": {"payment_id": "pay_8861", "amount_inr": 24500},
        }
        return json.dumps({"plan_id": plan_id, "intent": "refund", "steps": [{**step, **refund}]})

    def build(source: Any) -> PlanExecute:
        return PlanExecute(
            Agent("You plan refunds.", role="planner"),
            tools=[issue_refund],
            evidence=source,
            evaluators=[passes],
        )

    scripts = [
        plan("waived", evidence_required=[]),  # the planner leaves the tool's requirement off
        plan("made-up", evidence={"refund_window": ["kg:refund_window:rw_999#snapshot_invented"]}),
        plan("pinned", evidence={"refund_window": [window]}),
    ]
    journal = DictJournal()
    result, events = await run_stream(build(retriever), ScriptedModel({"planner": scripts}), journal=journal)
    out = detail(result)
    assert result.stop_reason == "completed"
    assert [(r.verify.kind, r.verify.offending_step, r.verify.offending_step_id) for r in out.reports] == [
        ("missing_evidence", 0, "refund"),
        ("unresolved_evidence", 0, "refund"),
        (None, None, None),
    ]
    assert out.reports[1].verify.reasons == [
        "step 0 pins kg:refund_window:rw_999#snapshot_invented as refund_window evidence, "
        "which is not in the run's evidence manifest"
    ]
    assert len(retrieved) == 3  # one journaled manifest per attempt
    planner_task = model_requests(events, "r__plan_0__planner_0") or ""
    assert f"- {window} (refund_window): inside the window" in planner_task

    def unreachable(task: str) -> list[Evidence]:
        raise AssertionError("a replay is served the recorded manifest")

    replayed, _ = await run_stream(build(unreachable), ScriptedModel([]), journal=journal, mode="replay")
    assert detail(replayed).reports == out.reports
    judged = await rejudge(journal, CriticVersion(decision=DecisionSpec()))
    assert [(j.after, j.refusal_after, j.changed) for j in judged] == [
        ("refused_by_critic", "missing_evidence", False),
        ("refused_by_critic", "unresolved_evidence", False),
        ("completed", None, False),
    ]
