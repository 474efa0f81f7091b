"""The run registry on its own: starting, following, cancelling, retention."""

from __future__ import annotations

import pytest

from jeeves import UserError
from jeeves.server import RunRegistry
from tests.server.conftest import Blocked
from tests.server.nested import nested, nested_router

pytestmark = pytest.mark.anyio


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def test_a_finished_run_is_kept_for_the_retention_window_then_dropped() -> None:
    clock = Clock()
    async with RunRegistry(retention_s=60, clock=clock) as runs:
        record = runs.start(nested(), "Write.", name="nested", router=nested_router(), session_id="kept")
        await record.wait()
        assert record.status == "completed" and record.finished_at == 100.0
        clock.now = 159.0
        assert runs.get("kept") is record
        with runs.following(record):  # a follower keeps it past the window
            clock.now = 1000.0
            assert runs.get("kept") is record
        assert runs.get("kept") is None and runs.runs() == []


async def test_events_after_a_seq_are_a_suffix_and_waiting_times_out_quietly() -> None:
    async with RunRegistry() as runs:
        record = runs.start(Blocked(), "wait", name="blocked")
        assert await record.wait_after(0, 10)
        assert [e.type for e in record.events_after(0)] == ["session.started", "round.started"]
        assert [e.seq for e in record.events_after(1)] == [2]
        assert record.events_after(2) == []
        assert await record.wait_after(2, 0.01) is False
        assert runs.running() == [record]
    assert record.status == "cancelled"  # leaving the registry cancels what still runs
    assert runs.running() == []


async def test_cancel_on_disconnect_cancels_when_the_last_follower_leaves() -> None:
    async with RunRegistry(cancel_on_disconnect=True) as runs:
        record = runs.start(Blocked(), "wait", name="blocked")
        with runs.following(record), runs.following(record):
            pass
        assert record.followers == 0
        await record.wait()
        assert record.status == "cancelled"


async def test_a_run_cancelled_before_its_task_started_never_runs() -> None:
    async with RunRegistry() as runs:
        record = runs.start(Blocked(), "wait", name="blocked")
        assert record.cancel() is True
        await record.wait()
    assert record.status == "cancelled" and record.events_after(0) == []
    assert record.cancel() is False


async def test_misuse_is_a_clear_error() -> None:
    runs = RunRegistry()
    with pytest.raises(UserError, match="not open"):
        runs.start(Blocked(), "x", name="blocked")
    with pytest.raises(UserError, match="retention_s"):
        RunRegistry(retention_s=-1)
    async with runs:
        runs.start(Blocked(), "x", name="blocked", session_id="one")
        with pytest.raises(UserError, match="'one' is already held"):
            runs.start(Blocked(), "x", name="blocked", session_id="one")
        with pytest.raises(UserError, match="already open"):
            await runs.__aenter__()


async def test_a_failed_run_keeps_its_error() -> None:
    async with RunRegistry() as runs:
        record = runs.start(nested(), "x", name="nested", router=None)
        await record.wait()
    assert record.status == "failed" and isinstance(record.error, UserError)
    assert record.summary()["error"]["type"] == "UserError"


async def test_a_message_sent_before_the_run_opened_its_stream_is_delivered() -> None:
    from jeeves import Agent, ScriptedModel
    from jeeves.models.router import Router

    model = ScriptedModel(["Done.", "Done, and web restarted."])
    async with RunRegistry() as runs:
        record = runs.start(
            Agent("x"), "t", name="agent", router=Router({"default": model}), session_id="early"
        )
        record.inject("Restart web too.")  # the run's task has not run yet: the record holds it
        await record.wait()
    model.assert_consumed()
    assert record.result is not None and record.result.text == "Done, and web restarted."
    assert [e.message for e in record.events_after(0) if e.type == "steering.injected"] == [
        "Restart web too."
    ]
