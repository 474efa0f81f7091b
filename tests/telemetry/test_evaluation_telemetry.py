"""Every verdict is also an OpenTelemetry `gen_ai.evaluation.result` event (GenAI semconv)."""

from __future__ import annotations

from typing import Any

import pytest

import jeeves
from jeeves import ActorCritic, Agent, BestOfN, ScriptedModel, Verdict
from jeeves._run.steering import watchdog_evaluation
from jeeves.architectures.plan_execute import plan_evaluation
from jeeves.critics.plan import CriticReport, VerifyVerdict
from jeeves.events import WatchdogVerdictEvent
from tests.telemetry.test_telemetry import Traced, _python, attrs, collector  # noqa: F401 (a fixture)

EVALUATION = "gen_ai.evaluation.result"


def adds(task: str, output: str) -> Verdict:
    ok = "a + b" in output
    return Verdict(
        score=1.0 if ok else 0.2, hard_fail=not ok, summary="" if ok else "it subtracts", source="tests"
    )


def evaluations(traced: Traced, span_name: str) -> list[dict[str, Any]]:
    found = [s for s in traced.spans if s.name == span_name]
    return [dict(e.attributes or {}) for s in found for e in s.events if e.name == EVALUATION]


@pytest.mark.anyio
async def test_each_critic_verdict_is_an_evaluation_event_on_the_loop_span() -> None:
    traced = Traced(capture_content=True)
    model = ScriptedModel({"actor": ["def add(a, b): return a - b", "def add(a, b): return a + b"]})
    arch = ActorCritic(Agent("You write Python."), adds, max_rounds=1)
    await jeeves.run(arch, "Write add.", model=model, session_id="ev", tracer=traced.tracer)
    assert evaluations(traced, "invoke_agent actor_critic") == [
        {
            "gen_ai.evaluation.name": "tests",
            "gen_ai.evaluation.score.value": 0.2,
            "gen_ai.evaluation.score.label": "fail",
            "gen_ai.evaluation.explanation": "it subtracts",
            "jeeves.evaluated.session.id": "ev__actor_0",
            "jeeves.evaluation.obtained": "function",
        },
        {
            "gen_ai.evaluation.name": "tests",
            "gen_ai.evaluation.score.value": 1.0,
            "gen_ai.evaluation.score.label": "pass",
            "jeeves.evaluated.session.id": "ev__actor_1",
            "jeeves.evaluation.obtained": "function",
        },
    ]


@pytest.mark.anyio
async def test_best_of_n_verdicts_sit_on_the_candidate_they_judge_and_explanations_need_capture() -> None:
    traced = Traced()  # no content capture: the explanation (a critic's words) is left out
    model = ScriptedModel(
        {"bon__candidate_0": ["def add(a, b): return a - b"], "bon__candidate_1": ["a + b"]}
    )
    arch = BestOfN(Agent("You write Python."), [adds], n=2, parallel=False, early_stop=False)
    await jeeves.run(arch, "Write add.", model=model, session_id="bon", tracer=traced.tracer)
    by_session = {
        attrs(s)["jeeves.session.id"]: [dict(e.attributes or {}) for e in s.events if e.name == EVALUATION]
        for s in traced.spans
        if s.name == "invoke_agent candidate"
    }
    assert {
        k: [(e["gen_ai.evaluation.score.label"], e["jeeves.evaluated.session.id"]) for e in v]
        for k, v in by_session.items()
    } == {
        "bon__candidate_0": [("fail", "bon__candidate_0")],
        "bon__candidate_1": [("pass", "bon__candidate_1")],
    }
    assert all("gen_ai.evaluation.explanation" not in e for v in by_session.values() for e in v)


def test_watchdog_verdicts_and_plan_gate_reports_are_evaluations() -> None:
    fired = WatchdogVerdictEvent(
        session_id="g",
        firing=1,
        verdict="STUCK",
        reason="it repeats",
        source="signal",
        obtained="signal",
        step=3,
    )
    assert watchdog_evaluation(fired, "g__agent_0") == (
        EVALUATION,
        {
            "gen_ai.evaluation.name": "watchdog",
            "gen_ai.evaluation.score.label": "stuck",
            "gen_ai.evaluation.explanation": "it repeats",
            "jeeves.evaluated.session.id": "g__agent_0",
            "jeeves.evaluation.obtained": "signal",
        },
    )
    refused = CriticReport(
        session_id="p__plan_0",
        decision_key="plan#0",
        verify=VerifyVerdict(ok=False, kind="missing_evidence", reasons=["no order"]),
        status="refused_by_critic",
        rationale="refused before execution",
        decided_at="2026-01-01T00:00:00Z",
    )
    name, attributes = plan_evaluation(refused)
    assert (name, attributes["gen_ai.evaluation.score.label"], attributes["jeeves.evaluated.session.id"]) == (
        EVALUATION,
        "refused_by_critic",
        "p__plan_0",
    )
    assert "gen_ai.evaluation.score.value" not in attributes


def test_evaluation_events_reach_a_real_otlp_consumer(collector: tuple[str, list[tuple[str, bytes]]]) -> None:  # noqa: F811
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    url, bodies = collector
    code = (
        "import anyio, jeeves\n"
        "from jeeves.telemetry import configure\n"
        f"tracer = configure(otlp_endpoint={url!r}, service_name='jeeves-test')\n"
        "def tests(task, output):\n"
        "    return jeeves.Verdict(score=0.9, summary='fine', source='tests')\n"
        "arch = jeeves.ActorCritic(jeeves.Agent('x'), tests)\n"
        "anyio.run(lambda: jeeves.run(arch, 't', model=jeeves.ScriptedModel(['ok']), session_id='otlp'))\n"
        "tracer.provider.shutdown()\n"
    )
    done = _python("-c", code)
    assert done.returncode == 0, done.stderr
    events = []
    for _, body in bodies:
        for resource_spans in ExportTraceServiceRequest.FromString(body).resource_spans:
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    for event in span.events:
                        if event.name == EVALUATION:
                            values = {a.key: a.value for a in event.attributes}
                            events.append((span.name, values))
    assert len(events) == 1
    span_name, values = events[0]
    assert span_name == "invoke_agent actor_critic"
    assert values["gen_ai.evaluation.name"].string_value == "tests"
    assert values["gen_ai.evaluation.score.value"].double_value == 0.9
    assert values["gen_ai.evaluation.score.label"].string_value == "pass"
    assert values["jeeves.evaluated.session.id"].string_value == "otlp__actor_0"
