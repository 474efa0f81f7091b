"""The terminal view: the session tree a run's events fold into, drawn with rich or as JSON lines."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

import jeeves
from jeeves.approvals.decide import Decision, pending_gates, record_decision
from jeeves.cli.terminal import SessionTree, follow
from jeeves.events import ApprovalDecided, ApprovalRequested, ModelDelta, SessionStarted, event_from_json
from tests.server.gated import POLICY, team_entry
from tests.server.nested import nested, nested_router

pytestmark = pytest.mark.anyio


async def test_a_nested_run_becomes_a_tree_with_rounds_scores_and_usage() -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, width=140, color_system=None)
    async with jeeves.stream(
        nested(), "Write and document add.", router=nested_router(), session_id="t"
    ) as events:
        tree = await follow(events, console=console)
        result = await events.result()
    coder, critic = tree.nodes["t__coder_0"], tree.nodes["t__coder_0__critic_1"]
    assert tree.roots == ["t"] and sorted(tree.nodes["t"].children) == ["t__coder_0", "t__writer_0"]
    assert (coder.role, coder.architecture, coder.round, coder.score, coder.passed) == (
        "coder",
        "actor_critic",
        1,
        0.95,
        True,
    )
    assert (critic.score, critic.passed, tree.nodes["t__coder_0__critic_0"].score) == (0.95, True, 0.3)
    assert all(node.status == "completed" for node in tree.nodes.values())
    assert tree.tree_usage("t").total_tokens == result.usage.total_tokens > 0
    drawn = buffer.getvalue()
    assert "coder actor_critic · round 1 · score 0.95 ✓" in drawn
    assert "critic llm_critic · scripted · score 0.30 ✗" in drawn
    assert f"{result.usage.total_tokens:,} tok · $0.0000 · completed" in drawn


async def test_json_mode_prints_one_event_per_line() -> None:
    out = io.StringIO()
    async with jeeves.stream(nested(), "Write.", router=nested_router(), session_id="j") as events:
        await follow(events, as_json=True, file=out)
    lines = out.getvalue().splitlines()
    parsed = [event_from_json(line) for line in lines]
    assert [e.seq for e in parsed] == list(range(1, len(parsed) + 1))
    assert json.loads(lines[0])["type"] == "session.started"


async def test_a_failed_run_is_drawn_then_its_error_raised() -> None:
    buffer = io.StringIO()
    router = jeeves.Router({"default": jeeves.ScriptedModel({})})
    with pytest.raises(jeeves.JeevesError, match="no step left"):
        async with jeeves.stream(nested(), "Write.", router=router, session_id="f") as events:
            await follow(events, console=Console(file=buffer, width=120, color_system=None))
    assert "✗ supervisor supervisor · scripted · UnexpectedModelCall" in buffer.getvalue()


def test_a_running_node_shows_its_streamed_text_tail_and_a_spinner() -> None:
    tree = SessionTree()
    tree.apply(SessionStarted(session_id="r", role="agent", architecture="agent", model="m"))
    tree.apply(ModelDelta(session_id="r", text="word " * 40))
    tree.apply(ModelDelta(session_id="elsewhere", text="ignored"))
    node = tree.nodes["r"]
    assert node.text.startswith("…") and node.text.endswith("word") and len(node.text) == 70
    buffer = io.StringIO()
    Console(file=buffer, width=100, color_system=None).print(tree)
    assert "agent agent · m" in buffer.getvalue() and "word word" in buffer.getvalue()
    tree.mark_unfinished()
    assert node.status == "cancelled"


async def test_a_self_refine_feedback_session_shows_its_score() -> None:
    script = jeeves.ScriptedModel(
        {"draft": ["one", "two"], "feedback": ['{"score": 0.4, "issues": ["x"]}', '{"score": 0.9}']}
    )
    arch = jeeves.SelfRefine(jeeves.Agent("Write.", role="writer"))
    async with jeeves.stream(arch, "Write.", model=script, session_id="s") as events:
        tree = await follow(events, console=Console(file=io.StringIO(), width=120, color_system=None))
    scores = [(n.role, n.index, n.score) for n in tree.nodes.values() if n.role == "feedback"]
    assert scores == [("feedback", 0, 0.4), ("feedback", 1, 0.9)]


def test_watchdog_firings_are_counted_in_words_and_steering_shown_as_text() -> None:
    from jeeves.cli.terminal import SessionTree
    from jeeves.events import SessionStarted, SteeringInjected, WatchdogVerdictEvent

    tree = SessionTree()
    tree.apply(SessionStarted(session_id="g", role="goal", architecture="goal"))
    tree.apply(
        WatchdogVerdictEvent(session_id="g", firing=1, verdict="PROGRESSING", reason="ok", source="model")
    )
    tree.apply(
        WatchdogVerdictEvent(session_id="g", firing=2, verdict="STUCK", reason="loops", source="signal")
    )
    assert tree.nodes["g"].watchdog == ["PROGRESSING", "STUCK"]
    assert tree.nodes["g"].text == "watchdog STUCK (signal): loops"
    tree.apply(
        SteeringInjected(session_id="g", target_session_id="g__agent_0", cause="stuck", message="step back")
    )
    assert tree.nodes["g"].text == "↳ steering (stuck): step back"
    tree.apply(
        WatchdogVerdictEvent(session_id="g", firing=3, verdict="STUCK", reason="loops", source="signal")
    )
    label = tree._label(tree.nodes["g"])
    assert "watchdog: PROGRESSING ×1, STUCK ×2" in str(getattr(label, "text", label))


async def test_to_a_pipe_the_tree_ends_its_last_line_and_is_not_wrapped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    out = io.StringIO()  # not a terminal, as `jeeves run ... | cat`
    async with jeeves.stream(
        nested(), "Write and document add.", router=nested_router(), session_id="p"
    ) as events:
        await follow(events, file=out)
    lines = out.getvalue().splitlines()
    assert out.getvalue().endswith("\n")
    nodes = [line for line in lines[1:] if not line.lstrip("│ ├└─").startswith("issue:")]
    assert all(line.endswith((" · completed", " · approved")) for line in nodes), lines  # one line a node
    assert max(len(line) for line in lines) > 80


async def test_columns_sets_the_width_of_a_tree_to_a_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    out = io.StringIO()
    async with jeeves.stream(
        nested(), "Write and document add.", router=nested_router(), session_id="c"
    ) as events:
        await follow(events, file=out)
    assert max(len(line) for line in out.getvalue().splitlines()) <= 60


async def test_pending_gates_and_their_decisions_show_under_their_sessions(tmp_path: Path) -> None:
    journal = tmp_path / "runs.db"
    buffer = io.StringIO()
    console = Console(file=buffer, width=200, color_system=None)
    arch, router = team_entry()
    async with jeeves.stream(
        arch, "Refund order 881", router=router, session_id="t", journal=journal, approvals=POLICY
    ) as events:
        tree = await follow(events, console=console)
        assert (await events.result()).status == "awaiting_approval"
    (gate,) = tree.pending_gates()
    assert (gate.gate_id, gate.tool, gate.mode) == ("t__refunds_0#1", "issue_refund", "destructive")
    assert tree.nodes["t__refunds_0"].status == "awaiting approval"
    drawn = buffer.getvalue()
    assert (
        "⏸ gate t__refunds_0#1: issue_refund(order_id='881', amount=12.5) [destructive] · awaiting approval"
        in drawn
    )
    assert "⏸ refunds agent" in drawn

    (pending,) = await pending_gates(journal, "t")
    await record_decision(journal, pending.gate_id, Decision.approve(pending, by="alice", note="checked"))
    buffer = io.StringIO()
    arch, router = team_entry()
    async with jeeves.stream(
        arch, "Refund order 881", router=router, session_id="t", journal=journal, approvals=POLICY
    ) as events:
        tree = await follow(events, console=Console(file=buffer, width=200, color_system=None))
        assert (await events.result()).status == "completed"
    assert tree.pending_gates() == [] and tree.nodes["t__refunds_0"].gates["t__refunds_0#1"].by == "alice"
    assert (
        "✓ gate t__refunds_0#1: issue_refund(order_id='881', amount=12.5) [destructive] · approved by alice (checked)"
        in buffer.getvalue()
    )


def test_a_denied_and_an_expired_gate_say_so() -> None:
    tree = SessionTree()
    tree.apply(SessionStarted(session_id="s", role="agent", architecture="agent"))
    for step, decision in ((1, "deny"), (3, "expire")):
        tree.apply(
            ApprovalRequested(
                session_id="s",
                step=step,
                gate_id=f"s#{step}",
                tool="rm",
                arguments={"path": "/"},
                mode="destructive",
                arguments_hash="h",
            )
        )
        tree.apply(
            ApprovalDecided(
                session_id="s",
                step=step,
                gate_id=f"s#{step}",
                decision=decision,
                by="bob" if step == 1 else "jeeves",
            )
        )  # type: ignore[arg-type]
    lines = [g.render().plain for g in tree.nodes["s"].gates.values()]
    assert lines == [
        "✗ gate s#1: rm(path='/') [destructive] · denied by bob",
        "⌛ gate s#3: rm(path='/') [destructive] · expired",
    ]


# -- the tree in words: NO_COLOR and a pipe lose nothing ---------------------------------


def _run_offline(spec: str) -> str:
    """`jeeves run architectures/SPEC --offline` through a pipe with NO_COLOR, as a user's
    `| cat` or a CI log sees it; its stdout."""
    from tests.conftest import jeeves_cli, offline_env

    env = {k: v for k, v in offline_env().items() if k != "COLUMNS"}  # unwrapped: one line a node
    done = jeeves_cli("run", f"architectures/{spec}", "--offline", env={**env, "NO_COLOR": "1"})
    assert done.returncode == 0, done.stderr
    assert "\x1b[" not in done.stdout  # no colour codes: the words carry it all
    return done.stdout


def test_a_goal_run_says_its_watchdog_verdicts_and_prints_its_report_once() -> None:
    out = _run_offline("ops_goal.toml")
    assert "· watchdog: STUCK ×1, PROGRESSING ×1 ·" in out
    assert "●" not in out
    assert (
        "\n\nweb listened on 9090; set port 8080, restarted it, /health answers 200\n\nstop reason: verified"
        in out
    )
    assert "\n\n\n" not in out and out.endswith("\n") and not out.endswith("\n\n")
    assert "goal.success: 1 call, " in out and " 1 calls" not in out


def test_a_refused_plan_is_marked_refused_with_its_kind_step_and_reason() -> None:
    out = _run_offline("refund_plan.toml")
    refused = next(line for line in out.splitlines() if "plan_attempt" in line)
    assert "✓" not in refused and refused.lstrip("│├└─ ").startswith("✗ plan plan_attempt")
    assert refused.endswith("plan refused: missing_evidence at step 1 (refund)")
    assert "reason: step 1 requires evidence class refund_window_evidence, none pinned" in out
    assert "refused_by_critic" not in out


def test_a_failed_round_shows_its_critics_top_issues() -> None:
    out = _run_offline("codegen.toml")
    assert "score 0.20 ✗ hard fail" in out and "score 0.95 ✓ passed" in out
    issues = [line for line in out.splitlines() if "issue:" in line]
    assert len(issues) == 3 and "[tests] test_combined_units failed" in issues[0]
    assert "… and 3 more issues" in out
    assert all(len(line) < 160 for line in issues)


def test_the_other_offline_specs_read_the_same_without_colour() -> None:
    for spec, said in (
        ("self_refine.toml", "issue: uses jargon the reader does not know"),
        ("research_team.toml", "issue: [citations] uncited claim"),
    ):
        out = _run_offline(spec)
        assert said in out and "\n\n\n" not in out and " 1 calls" not in out


def test_plurals_and_an_empty_output_are_said_right() -> None:
    from jeeves.cli.terminal import output_lines, plural, spend_lines
    from jeeves.messages import Usage

    assert [plural(n, "call") for n in (0, 1, 2, 1200)] == ["0 calls", "1 call", "2 calls", "1,200 calls"]
    assert output_lines("\n\n") == ["", "no output", ""]
    assert output_lines("  answer\n\n") == ["", "  answer", ""]
    one = Usage(input_tokens=1, model_calls=1, cost_usd=0.5)
    assert spend_lines(one, {"a": one}) == [
        "1 model call · 1 token · $0.5000",
        "  a: 1 call, 1 token, $0.5000",
    ]


def test_a_refused_plan_without_a_step_and_a_critique_without_a_critic_session() -> None:
    from jeeves.events import Critique, PlanVerified

    tree = SessionTree()
    tree.apply(SessionStarted(session_id="p", role="plan", architecture="plan_attempt"))
    tree.apply(
        PlanVerified(session_id="p", attempt=0, plan_id="x", ok=False, kind="loop_guard", reasons=["r"] * 5)
    )
    tree.apply(Critique(session_id="p", round=0, score=0.1, passed=False, issues=["too long " * 30]))
    node = tree.nodes["p"]
    assert node.refusal == "plan refused: loop_guard" and node.issues == ["too long " * 30]
    buffer = io.StringIO()
    tree.mark_unfinished("completed")
    Console(file=buffer, width=400, color_system=None).print(tree)
    drawn = buffer.getvalue()
    assert drawn.count("reason: r") == 3 and "✗ plan plan_attempt" in drawn
    (issue,) = [line for line in drawn.splitlines() if "issue:" in line]
    assert issue.rstrip().endswith("…") and len(issue.strip()) < 140
