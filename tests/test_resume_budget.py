"""Seed 001 on resume: the budget left is the original minus what the journal shows was used,
across any number of resumes (a SIGKILL cannot refill it); progress envelopes count the run's
completed steps across resumes and report what is left after charging the call; a plan's
total rides on them; a lost heartbeat shows `paused` after two intervals."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

import jeeves
from jeeves import Agent, Budget, ScriptedModel
from jeeves.journal.open import open_journal, shown_status
from jeeves.journal.records import HEARTBEAT_S, LEASE_S, SessionRecord
from jeeves.messages import Usage
from jeeves.testing import Reply, call
from tests.conftest import REPO, crash_child, subprocess_env
from tests.resume_budget_child import resume_run


def calls(root: Path) -> list[str]:
    return (root / "calls").read_text().splitlines()


def killed_at(root: Path, block: int) -> list[dict[str, Any]]:
    """Run the child until `work {block}` hangs, SIGKILL it; its progress envelopes."""
    child = crash_child("tests.resume_budget_child", str(root), str(block))
    envelopes = []
    try:
        assert child.stdout is not None
        for line in child.stdout:
            if line == "blocked\n":
                break
            envelopes.append(json.loads(line))
        else:
            raise AssertionError(child.communicate()[1])
        child.send_signal(signal.SIGKILL)
    finally:
        child.communicate(timeout=30)
    assert child.returncode == -signal.SIGKILL
    return envelopes


def test_two_sigkills_and_resumes_neither_refill_the_budget_nor_lose_the_step_count(tmp_path: Path) -> None:
    whole = tmp_path / "whole"
    whole.mkdir()
    assert anyio.run(resume_run, whole) == "budget"
    # Four model calls allowed: the run does four pieces of work and is stopped asking for a fifth call.
    uninterrupted = calls(whole)
    assert uninterrupted == ["model", "work 0", "model", "work 1", "model", "work 2", "model", "work 3"]

    root = tmp_path / "killed"
    root.mkdir()
    first = killed_at(root, 2)  # killed while `work 2` runs: 3 model calls spent
    assert calls(root) == uninterrupted[:6]
    assert (first[-1]["completed_steps"], first[-1]["model_calls_left"], first[-1]["tokens_left"]) == (
        5,
        1,
        700,
    )

    second = killed_at(root, 3)  # resumed, then killed again while `work 3` runs
    assert calls(root) == uninterrupted[:6] + ["work 2", "model", "work 3"]
    # The resume served 5 completed steps and 3 calls: its envelopes go on from there.
    assert [(e["completed_steps"], e["model_calls_left"], e["tokens_left"]) for e in second] == [
        (6, 1, 700),  # work 2, live
        (7, 0, 600),  # the fourth model call, charged before it is reported
    ]

    out = subprocess.run(
        [sys.executable, "-m", "tests.resume_budget_child", str(root)],
        cwd=REPO,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    *third, result = [json.loads(line) for line in out.stdout.splitlines()]
    assert result == {"stop_reason": "budget"}  # the original's four calls were spent: no fresh budget
    assert calls(root) == uninterrupted[:6] + ["work 2", "model", "work 3", "work 3"]  # no fifth model call
    assert [(e["completed_steps"], e["model_calls_left"], e["tokens_left"]) for e in third] == [
        (8, 0, 600),  # work 3 again (in flight at the kill), then the refused call, which completes nothing
        (8, 0, 600),
    ]

    async def root_record() -> SessionRecord | None:
        async with open_journal(str(root / "runs.db")) as store:
            return await store.get_session("job")

    record = anyio.run(root_record)
    assert record is not None and record.progress is not None
    assert (record.progress["completed_steps"], record.progress["model_calls_left"]) == (8, 0)


def usage(tokens: int) -> Usage:
    return Usage(input_tokens=tokens - 10, output_tokens=10, model_calls=1)


@pytest.mark.anyio
async def test_an_envelope_reports_the_budget_left_after_charging_the_call_it_follows() -> None:
    @jeeves.tool(approval="read_only")
    def lookup(q: str) -> str:
        """Look it up."""
        return "found"

    model = ScriptedModel(
        [
            Reply(tool_calls=[call("lookup", {"q": "a"})], usage=usage(100)),
            Reply(text="done", usage=usage(50)),
        ]
    )
    budget = Budget(max_tokens=1000, max_model_calls=5)
    async with jeeves.stream(
        Agent("x", tools=[lookup]), "t", model=model, budget=budget, progress_s=0
    ) as events:
        seen = [(e.step, e.tokens_left, e.model_calls_left) async for e in events if e.type == "progress"]
    assert seen == [(0, 900, 4), (1, 900, 4), (2, 850, 3)]


@pytest.mark.anyio
async def test_a_verified_plans_total_rides_on_the_envelopes() -> None:
    from tests.architectures.test_plan_execute import Shop, arch, refund_plan

    model = ScriptedModel({"planner": [refund_plan(pinned=True)]})
    async with jeeves.stream(arch(Shop()), "Refund order 881.", model=model, progress_s=0) as events:
        seen = [
            (e.total_steps, e.plan_steps_completed, e.current_step)
            async for e in events
            if e.type == "progress"
        ]
    assert seen[0] == (None, None, None)  # the planner's call: no plan yet
    assert (3, 0, "lookup") in seen and (3, 2, "refund") in seen
    assert seen[-1] == (3, 3, "refund")  # the evaluator's step, after the plan's three


def test_a_lost_heartbeat_shows_paused_after_two_intervals() -> None:
    assert LEASE_S == 2 * HEARTBEAT_S
    record = SessionRecord(session_id="job", role="agent", architecture="agent", lease_renewed_at=1000.0)
    assert shown_status(record, 1000.0 + 1.9 * HEARTBEAT_S) == "in_progress"
    assert shown_status(record, 1000.0 + 2.1 * HEARTBEAT_S) == "paused"
