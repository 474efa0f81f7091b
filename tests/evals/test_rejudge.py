"""`jeeves rejudge`: a stricter critic over a journal of several runs reports exactly what changes."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

import jeeves
from jeeves import ActorCritic, Agent, LLMCritic, PlanExecute, ScriptedModel, Verdict
from jeeves.cli.main import main
from jeeves.critics import FunctionCritic
from jeeves.critics.plan import DecisionSpec
from jeeves.errors import UserError
from jeeves.evals.rejudge import CriticVersion, Evaluator, rejudge
from jeeves.journal.open import open_journal
from jeeves.spec.critic_version import load_critic_version
from tests.architectures.test_plan_execute import SPEC, Shop, order_record, refund_plan

pytestmark = pytest.mark.anyio


def passes(task: str, output: str) -> bool:
    return "refunded" in output


def policy_v2(task: str, output: str) -> Verdict:
    """The stricter rule: refunds above 40 need a manager."""
    over = [line for line in output.splitlines() if "refunded" in line and float(line.split()[2]) > 40]
    return Verdict(score=0.0 if over else 1.0, issues=["refunds over 40 need a manager"] if over else [])


def mentions_total(task: str, output: str) -> bool:
    return "total" in output


async def record(journal: str) -> None:
    """Four runs: two single-attempt refunds (30 and 42), one refund whose plan A was refused,
    and an ActorCritic approved in round 0."""

    def plan_execute() -> PlanExecute:
        return PlanExecute(
            Agent("You plan refunds.", role="planner"),
            tools=Shop().tools(),
            spec=SPEC,
            evaluators=[passes],
            evidence=order_record,
        )

    model = ScriptedModel({"planner": [refund_plan(pinned=True, amount=30.0)]})
    await jeeves.run(plan_execute(), "Refund order 881.", model=model, session_id="small", journal=journal)
    model = ScriptedModel({"planner": [refund_plan(pinned=True)]})
    await jeeves.run(plan_execute(), "Refund order 881.", model=model, session_id="big", journal=journal)
    model = ScriptedModel(
        {"planner": [refund_plan(pinned=False, amount=30.0), refund_plan(pinned=True, amount=30.0)]}
    )
    await jeeves.run(
        plan_execute(), "Refund order 881.", model=model, session_id="replanned", journal=journal
    )
    loop = ActorCritic(Agent("Answer."), passes, max_rounds=1)
    model = ScriptedModel({"actor": ["refunded 42.0 on 881"]})
    await jeeves.run(loop, "Refund order 881.", model=model, session_id="loop", journal=journal)


STRICTER = CriticVersion(
    evaluators=[Evaluator("passes"), Evaluator("policy_v2", FunctionCritic(policy_v2), hard=True)],
    critic=FunctionCritic(mentions_total),
)


async def test_a_stricter_critic_reports_exactly_the_verdicts_that_change(tmp_path: Path) -> None:
    path = str(tmp_path / "runs.jsonl")
    await record(path)
    async with open_journal(path) as store:
        judged = await rejudge(store, STRICTER)
    # Every judged verdict, in recording order: 1 + 1 + 2 plan attempts and 1 loop round.
    assert [j.session_id for j in judged] == [
        "small__plan_0",
        "big__plan_0",
        "replanned__plan_0",
        "replanned__plan_1",
        "loop__critic_0",
    ]
    changed = [(j.session_id, j.before, j.after) for j in judged if j.changed]
    assert changed == [
        ("big__plan_0", "completed", "refused_by_critic"),
        ("loop__critic_0", "approved", "refused"),
    ]
    big = judged[1]
    assert (big.score_before, big.score_after) == (1.0, 0.0)
    assert big.rationale == "policy_v2 fail: refunds over 40 need a manager"
    # The refused plan stays refused for the same reason; nothing was executed to judge it again.
    assert (judged[2].before, judged[2].after, judged[2].refusal_after) == (
        "refused_by_critic",
        "refused_by_critic",
        "missing_evidence",
    )


async def test_a_tighter_decision_spec_refuses_recorded_plans_with_their_kind(tmp_path: Path) -> None:
    path = str(tmp_path / "runs.jsonl")
    await record(path)
    tighter = CriticVersion(decision=DecisionSpec(required_outputs=["refund_amount"], max_steps=2))
    async with open_journal(path) as store:
        judged = await rejudge(store, tighter, ["small", "replanned"])
    rows = [(j.session_id, j.before, j.after, j.refusal_before, j.refusal_after) for j in judged if j.changed]
    assert rows == [
        ("small__plan_0", "completed", "refused_by_critic", None, "loop_guard"),
        ("replanned__plan_1", "completed", "refused_by_critic", None, "loop_guard"),
    ]
    # The seed's order checks evidence before the loop guard: plan A stays refused for its evidence.
    (plan_a,) = [j for j in judged if j.session_id == "replanned__plan_0"]
    assert (plan_a.refusal_before, plan_a.refusal_after, plan_a.changed) == (
        "missing_evidence",
        "missing_evidence",
        False,
    )
    # decided_at is the journal's, not a clock read now.
    async with open_journal(path) as store:
        again = await rejudge(store, tighter, ["small"])
    assert again == judged[:1]


async def test_an_llm_evaluator_is_skipped_unless_asked_live(tmp_path: Path) -> None:
    path = str(tmp_path / "runs.jsonl")
    await record(path)
    version = CriticVersion(evaluators=[Evaluator("llm", LLMCritic())], critic=LLMCritic())
    async with open_journal(path) as store:
        judged = await rejudge(store, version, ["big", "loop"])
    assert [(j.session_id, j.skipped) for j in judged] == [
        ("big__plan_0", "evaluator 'llm' needs a model (an LLM critic); pass --live to call it"),
        ("loop__critic_0", "needs a model (an LLM critic); pass --live to call it"),
    ]
    assert not any(j.changed for j in judged)
    with pytest.raises(UserError, match="No run 'nope' in the journal"):
        async with open_journal(path) as store:
            await rejudge(store, version, ["nope"])


RULES = """
from jeeves import Verdict

def policy_v2(task, output):
    over = [l for l in output.splitlines() if "refunded" in l and float(l.split()[2]) > 40]
    return Verdict(score=0.0 if over else 1.0, issues=["refunds over 40 need a manager"] if over else [])

def mentions_total(task, output):
    return "total" in output
"""

CRITIC_FILE = """
hard = ["policy_v2"]

[[evaluators]]
type = "recorded"
name = "passes"

[[evaluators]]
type = "function"
function = "rules_v2:policy_v2"

[critic]
type = "function"
function = "rules_v2:mentions_total"
"""


def test_the_command_prints_the_changes_as_a_table_and_as_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(tmp_path / "runs.jsonl")
    anyio.run(record, path)
    (tmp_path / "rules_v2.py").write_text(RULES)
    critic = tmp_path / "stricter.toml"
    critic.write_text(CRITIC_FILE)
    assert main(["rejudge", path, "--critic", str(critic)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["SESSION", "BEFORE", "AFTER", "WHY"]
    assert [line.split()[0] for line in out[1:-1]] == ["big__plan_0", "loop__critic_0"]
    assert "completed 1.00" in out[1] and "refused_by_critic 0.00" in out[1]
    assert out[-1] == "5 verdict(s) judged again: 2 changed, 0 skipped."
    assert main(["rejudge", path, "big", "small", "--critic", str(critic), "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["session_id"], r["before"], r["after"]) for r in rows] == [
        ("big__plan_0", "completed", "refused_by_critic")
    ]


def test_a_bad_critic_file_is_one_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('threshold = "high"\nhard = ["nobody"]\n[[evaluators]]\ntype = "recorded"\nname = "x"\n')
    with pytest.raises(UserError, match="threshold"):
        load_critic_version(bad)
    bad.write_text('hard = ["nobody"]\n[[evaluators]]\ntype = "recorded"\nname = "x"\n')
    with pytest.raises(UserError, match=r"hard=\['nobody'\] names no evaluator"):
        load_critic_version(bad)
    assert main(["rejudge", str(tmp_path / "none.jsonl"), "--critic", str(bad)]) == 2
    assert "names no evaluator" in capsys.readouterr().err


async def test_self_refine_rounds_are_judged_against_their_drafts() -> None:
    from jeeves import SelfRefine
    from jeeves.journal.memory import MemoryJournal

    journal = MemoryJournal()
    model = ScriptedModel(
        [
            "draft one",
            json.dumps({"score": 0.5, "issues": ["too short"], "summary": "short"}),
            "draft two, longer",
            json.dumps({"score": 0.9, "issues": [], "summary": "good"}),
        ]
    )
    await jeeves.run(
        SelfRefine(Agent("Write."), max_rounds=1), "Write.", model=model, session_id="sr", journal=journal
    )
    seen: list[str] = []

    def judge(task: str, output: str) -> float:
        seen.append(output)
        return 0.9 if "one" in output else 0.2

    judged = await rejudge(journal, CriticVersion(critic=FunctionCritic(judge)))
    assert seen == ["draft one", "draft two, longer"]  # each round's own candidate
    assert [(j.session_id, j.before, j.after, j.changed) for j in judged] == [
        ("sr__feedback_0", "refused", "approved", True),
        ("sr__feedback_1", "approved", "refused", True),
    ]


async def test_asked_live_an_llm_critic_is_called_through_the_router(tmp_path: Path) -> None:
    from jeeves import Router

    path = str(tmp_path / "runs.jsonl")
    await record(path)
    harsh = ScriptedModel([json.dumps({"score": 0.3, "issues": ["no apology to the customer"]})])
    version = CriticVersion(evaluators=[Evaluator("llm", LLMCritic(), hard=True)])
    async with open_journal(path) as store:
        judged = await rejudge(store, version, ["small"], live=True, router=Router({"default": harsh}))
    assert [(j.session_id, j.before, j.after, j.score_after) for j in judged] == [
        ("small__plan_0", "completed", "refused_by_critic", 0.3)
    ]
    assert judged[0].rationale == "llm fail: no apology to the customer"
    assert len(harsh.requests) == 1
