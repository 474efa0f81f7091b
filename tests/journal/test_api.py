"""open_journal, list_runs, and the checks around a run's journal (jeeves._run.replay)."""

from __future__ import annotations

from pathlib import Path

import pytest

import jeeves
from jeeves import Output, ScriptedModel
from jeeves._run.context import Context
from jeeves._run.replay import attach
from jeeves.errors import JournalError, ProviderError, UserError
from jeeves.journal.jsonl import JSONLJournal
from jeeves.journal.memory import MemoryJournal
from jeeves.journal.open import list_runs, open_journal
from jeeves.journal.records import SessionRecord, StepRecord
from jeeves.journal.sqlite import SQLiteJournal
from tests.journal import archs
from tests.journal.test_base import step

pytestmark = pytest.mark.anyio


def test_open_journal_picks_the_store_by_suffix(tmp_path: Path) -> None:
    assert isinstance(open_journal(tmp_path / "a.jsonl"), JSONLJournal)
    assert isinstance(open_journal(str(tmp_path / "a.db")), SQLiteJournal)
    assert isinstance(open_journal(tmp_path / "journal"), SQLiteJournal)
    memory = MemoryJournal()
    assert open_journal(memory) is memory
    with pytest.raises(UserError, match=r"journal=42 is neither a path nor a journal"):
        open_journal(42)  # type: ignore[call-overload]


class _Rounds:
    """Reports rounds the way critic loops do: an Output subclass with a `rounds` field."""

    name = "rounds"

    class Result(Output):
        rounds: list[str] = []

    async def run(self, ctx: Context, task: str) -> Output:
        await ctx.run(archs.build_agent(), task, role="actor", index=0)
        return self.Result(value="ok", text="ok", rounds=["draft", "revision"])


async def test_list_runs_shows_roots_with_status_rounds_and_cost(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    priced = jeeves.Usage(input_tokens=10, output_tokens=5, model_calls=1, cost_usd=0.25)
    model = ScriptedModel({"r2": [jeeves.ModelResponse(text="fine", usage=priced)], "default": []})
    await jeeves.run(_Rounds(), "count these", model=archs.model(), journal=path, session_id="r1")
    await jeeves.run(jeeves.Agent("x"), "be fine", model=model, journal=path, session_id="r2")
    with pytest.raises(ProviderError):
        await jeeves.run(
            jeeves.Agent("x"),
            "fail",
            model=ScriptedModel([ProviderError("down", status_code=400)]),
            journal=path,
            session_id="r3",
        )

    runs = await list_runs(path)

    assert [(r.session_id, r.status, r.rounds) for r in runs] == [
        ("r1", "completed", 2),
        ("r2", "completed", None),
        ("r3", "failed", None),
    ]
    assert runs[1].usage.cost_usd == 0.25 and runs[1].task == "be fine" and runs[1].output == "fine"
    assert runs[0].usage.model_calls == 3  # the whole tree's calls
    assert runs[2].stop_reason == "ProviderError"


async def test_list_runs_needs_an_existing_journal(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="There is no journal at"):
        await list_runs(tmp_path / "typo.db")


async def test_replaying_what_the_journal_lacks_says_what_it_holds(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    await jeeves.run(archs.build_fanout(), "count these", model=archs.model(), journal=path, session_id="r1")
    with pytest.raises(UserError, match=r"holds no run 'r9'; its runs are: 'r1'\."):
        await jeeves.replay(archs.build_fanout(), path, "r9")
    with pytest.raises(UserError, match=r"'r1__worker_0' is a child session; replay its run, 'r1'\."):
        await jeeves.replay(archs.build_fanout(), path, "r1__worker_0")
    with pytest.raises(UserError, match="There is no journal at"):
        await jeeves.replay(archs.build_fanout(), tmp_path / "typo.db", "r1")


async def test_journal_modes_are_checked() -> None:
    with pytest.raises(UserError, match="mode='replay' needs journal="):
        await jeeves.run(archs.build_agent(), "t", mode="replay")
    with pytest.raises(UserError, match="mode='rewind' is not a journal mode"):
        await jeeves.run(archs.build_agent(), "t", journal=MemoryJournal(), mode="rewind")  # type: ignore[arg-type]


async def test_a_bad_architecture_ref_fails_before_anything_runs() -> None:
    model = archs.model()
    with pytest.raises(UserError, match="has no attribute 'typo'"):
        await jeeves.run(
            archs.build_agent(),
            "t",
            model=model,
            journal=MemoryJournal(),
            architecture_ref="tests.journal.archs:typo",
        )
    assert model.requests == []


async def test_a_strict_replay_never_writes() -> None:
    journal = MemoryJournal()
    async with attach(journal, mode="replay", root_id="r1") as attached:
        assert attached.journal is not None
        with pytest.raises(JournalError, match="A strict replay tried to record step 0 of 'r1'"):
            await attached.journal.put_step(step())
    assert await journal.step_indices("r1") == []


class _CountingJournal(MemoryJournal):
    """A memory journal that counts its lookups."""

    def __init__(self) -> None:
        super().__init__()
        self.step_reads = 0
        self.session_reads = 0

    async def get_step(self, session_id: str, index: int) -> StepRecord | None:
        self.step_reads += 1
        return await super().get_step(session_id, index)

    async def get_session(self, session_id: str) -> SessionRecord | None:
        self.session_reads += 1
        return await super().get_session(session_id)


async def test_a_new_run_looks_up_no_step_and_its_root_once() -> None:
    journal = _CountingJournal()
    await jeeves.run(
        archs.build_agent(), "count these", model=archs.model(), journal=journal, session_id="r1"
    )
    assert (journal.step_reads, journal.session_reads) == (0, 1)  # nothing recorded can be served
    assert len(await journal.step_indices("r1")) > 1
    resumed = await jeeves.run(
        archs.build_agent(), "count these", model=archs.model(), journal=journal, session_id="r1"
    )
    assert resumed.text.startswith("count these")
    assert journal.step_reads > 1  # a resume looks its recorded steps up, and is served them
