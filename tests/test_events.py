from __future__ import annotations

import typing

import anyio
import pytest
from pydantic import ValidationError

import jeeves
from jeeves import events as ev
from jeeves._run.context import Context, Output
from jeeves.messages import ToolCall, Usage

SAMPLES: dict[str, dict[str, object]] = {
    "session.started": {
        "role": "critic",
        "architecture": "agent",
        "parent_id": "r",
        "model": "m",
        "role_path": ["a"],
    },
    "session.completed": {"output": "done", "stop_reason": "approved", "usage": Usage(input_tokens=3)},
    "session.failed": {"error_type": "ProviderError", "message": "boom"},
    "model.delta": {"text": "he"},
    "model.completed": {
        "text": "hi",
        "model": "m",
        "tool_calls": [ToolCall(id="c", name="t")],
        "fallback": True,
    },
    "model.retrying": {
        "model": "a",
        "next_model": "b",
        "attempt": 1,
        "error_type": "RateLimited",
        "message": "429",
    },
    "tool.started": {"tool_call_id": "c", "name": "t", "arguments": "{}"},
    "tool.completed": {"tool_call_id": "c", "name": "t", "result": "3", "is_error": True},
    "output.retrying": {"error": "bad"},
    "budget.exceeded": {"limit": "usd", "allowed": 1.0, "spent": 1.5, "slice_id": "r__step_0"},
    "budget.sliced": {"max_tokens": 700, "deadline_s": 3.5, "clamped": ["tokens"]},
    "round.started": {"round": 2},
    "critique": {
        "round": 1,
        "score": 0.5,
        "passed": False,
        "issues": ["x"],
        "obtained": "fallback",
        "source": "llm",
    },
    "refinement": {"round": 2, "based_on_round": 1},
    "critic.failed": {"round": 0, "error_type": "X", "message": "m", "action": "keep_draft"},
    "delegation.started": {"worker": "coder", "child_session_id": "r__coder_0", "instructions": "do"},
    "delegation.completed": {"worker": "coder", "child_session_id": "r__coder_0", "output": "ok"},
    "delegation.rejected": {"worker": "nobody", "reason": "unknown worker"},
    "watchdog.verdict": {
        "firing": 2,
        "verdict": "STUCK",
        "reason": "it repeats the same edit.",
        "source": "signal",
        "obtained": "signal",
        "step": 6,
        "window": ["edit({}) → failed"],
    },
    "steering.injected": {"target_session_id": "r__agent_0", "cause": "stuck", "message": "step back"},
    "plan.verified": {
        "attempt": 0,
        "plan_id": "p",
        "ok": False,
        "kind": "missing_evidence",
        "reasons": ["step '1' requires 'order_record' evidence and pins none"],
        "offending_step": "1",
    },
    "plan.decided": {
        "attempt": 0,
        "phase": "verify",
        "decision": "replan",
        "status": "refused_by_critic",
        "rationale": "refused before execution",
    },
    "approval.requested": {
        "step": 3,
        "gate_id": "run__x_0#3",
        "tool": "issue_refund",
        "tool_call_id": "c1",
        "arguments": {"order_id": "881", "amount": 12.5},
        "mode": "destructive",
        "arguments_hash": "ab" * 32,
        "requested_at": 10.0,
        "expires_at": 70.0,
    },
    "approval.decided": {
        "step": 3,
        "gate_id": "run__x_0#3",
        "decision": "approve",
        "by": "alice",
        "at": 12.0,
        "note": "checked",
        "arguments_hash": "ab" * 32,
    },
    "candidate.selected": {
        "candidate": 1,
        "child_session_id": "r__candidate_1",
        "passed": True,
        "score": 1.0,
        "cancelled": [2],
        "not_started": [3],
    },
    "budget.unpriced": {"model": "anthropic/claude-3-haiku-20240307", "max_usd": 0.5},
    "progress": {
        "step": 4,
        "completed_steps": 5,
        "tokens_left": 100,
        "model_calls_left": 2,
        "usd_left": 0.5,
        "seconds_left": 30.0,
        "gate": None,
    },
}


def event_classes() -> list[type[ev.BaseEvent]]:
    union = typing.get_args(ev.Event)[0]
    return list(typing.get_args(union))


def test_every_event_type_has_a_sample() -> None:
    types = {cls.model_fields["type"].default for cls in event_classes()}
    assert types == set(SAMPLES)


@pytest.mark.parametrize("cls", event_classes(), ids=lambda c: c.__name__)
def test_json_round_trip(cls: type[ev.BaseEvent]) -> None:
    type_name = cls.model_fields["type"].default
    event = cls(session_id="run__x_0", seq=7, ts=1.5, replayed=True, **SAMPLES[type_name])  # type: ignore[arg-type]
    back = ev.event_from_json(ev.event_to_json(event))  # type: ignore[arg-type]
    assert type(back) is cls
    assert back == event


def test_unknown_type_is_rejected() -> None:
    with pytest.raises(ValidationError):
        ev.event_from_json('{"type": "nope", "session_id": "a"}')


class _Parallel:
    """Runs several scripted agents at once, as a Supervisor would."""

    name = "parallel"

    def __init__(self, n: int) -> None:
        self.n = n

    async def run(self, ctx: Context, task: str) -> Output:
        async def one(i: int) -> None:
            await ctx.run(jeeves.Agent("work"), f"{task} {i}", role="worker", index=i)

        async with anyio.create_task_group() as group:
            for i in range(self.n):
                group.start_soon(one, i)
        return Output.of("done")


@pytest.mark.anyio
async def test_seq_strictly_increasing_with_concurrent_children() -> None:
    model = jeeves.FunctionModel(lambda r: "several words of streamed text " * 5)
    seen: list[int] = []
    sessions: set[str] = set()
    async with jeeves.stream(_Parallel(8), "go", model=model, max_buffer=4) as events:
        async for event in events:
            seen.append(event.seq)
            sessions.add(event.session_id)
    assert seen == list(range(1, len(seen) + 1))
    assert len(sessions) == 9
