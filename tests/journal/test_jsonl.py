"""JSONLJournal: one record a line, flushed per step; torn last lines and other damage."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path

import pytest

import jeeves
from jeeves.errors import JournalError, UserError
from jeeves.journal import jsonl
from jeeves.journal.jsonl import JSONLJournal
from jeeves.journal.open import list_runs
from jeeves.journal.records import StepRecord
from jeeves.journal.store import JournalWarning, encode_record
from tests.journal import archs
from tests.journal.test_base import session, step

pytestmark = pytest.mark.anyio


async def record_two(path: Path) -> None:
    async with JSONLJournal(path) as journal:
        await journal.put_session(session())
        await journal.put_step(step(index=0))


async def test_each_record_is_one_line_on_disk_before_put_returns(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "run.jsonl"
    journal = JSONLJournal(path)
    await journal.put_step(step(index=0))
    await journal.put_session(session())
    lines = path.read_text().splitlines()  # read while the journal is still open: flushed, not buffered
    assert [json.loads(line)["type"] for line in lines] == ["step", "session"]
    await journal.aclose()


async def test_a_torn_last_line_is_ignored_with_a_warning_and_cut_on_the_next_write(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    await record_two(path)
    whole = path.read_bytes()
    path.write_bytes(whole + encode_half(step(index=1)))

    journal = JSONLJournal(path)
    with pytest.warns(
        JournalWarning,
        match=rf"^{re.escape(str(path))} line 3: the last line is incomplete \(\d+ bytes.* the 2 records before it are kept",
    ) as caught:
        assert await journal.get_step("r1", 1) is None
    assert (caught[0].filename, caught[0].lineno) == (str(path), 3)  # printed as run.jsonl:3
    assert await journal.get_step("r1", 0) == step(index=0)
    await journal.put_step(step(index=2))
    await journal.aclose()

    assert path.read_bytes().startswith(whole)
    assert [json.loads(line)["index"] for line in path.read_text().splitlines()[2:]] == [2]
    async with JSONLJournal(path) as again:  # no warning now: the file is whole again
        assert await again.step_indices("r1") == [0, 2]


def encode_half(record: StepRecord) -> bytes:
    line = encode_record(record).encode()
    return line[: len(line) // 2]


async def test_a_whole_last_line_without_its_newline_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    await record_two(path)
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    async with JSONLJournal(path) as journal:
        assert await journal.get_step("r1", 0) == step(index=0)
        await journal.put_step(step(index=1))
    assert len(path.read_text().splitlines()) == 3


async def test_damage_before_the_last_line_names_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    await record_two(path)
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], lines[1][:20], lines[1]]) + "\n")
    with pytest.raises(JournalError, match=r"run.jsonl:2: the line is not JSON .* damaged here"):
        await JSONLJournal(path).get_step("r1", 0)


async def test_a_record_from_a_newer_jeeves_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    await record_two(path)
    newer = json.loads(path.read_text().splitlines()[1]) | {"v": 99}
    with path.open("a") as file:
        file.write(json.dumps(newer) + "\n")
    with pytest.raises(
        JournalError, match=r"run.jsonl:3: .*newer jeeves \(journal schema v99; this jeeves reads up to v4\)"
    ):
        await JSONLJournal(path).sessions()


async def test_blank_lines_are_not_records(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    await record_two(path)
    path.write_text(path.read_text().replace("\n", "\n\n"))
    async with JSONLJournal(path) as journal:
        assert len(await journal.sessions()) == 1


async def test_a_missing_file_is_empty_when_recording_and_an_error_when_reading(tmp_path: Path) -> None:
    path = tmp_path / "none.jsonl"
    assert await JSONLJournal(path).get_step("r1", 0) is None
    assert not path.exists()  # reading never creates the file
    with pytest.raises(UserError, match="There is no journal at .*none.jsonl"):
        await JSONLJournal(path, create=False).sessions()


async def test_file_work_runs_off_the_event_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    threads: set[int] = set()
    original = JSONLJournal._append

    def spy(self: JSONLJournal, line: str) -> None:
        threads.add(threading.get_ident())
        original(self, line)

    monkeypatch.setattr(JSONLJournal, "_append", spy)
    async with JSONLJournal(tmp_path / "run.jsonl") as journal:
        await jeeves.run(archs.build_agent(), "count these", model=archs.model(), journal=journal)
    assert threads and threading.get_ident() not in threads


async def test_fsync_mode_syncs_every_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    monkeypatch.setattr(jsonl.os, "fsync", synced.append)
    async with JSONLJournal(tmp_path / "a.jsonl", fsync=True) as journal:
        await journal.put_step(step(index=0))
        await journal.put_step(step(index=1))
    async with JSONLJournal(tmp_path / "b.jsonl") as journal:
        await journal.put_step(step(index=0))
    assert len(synced) == 2


async def _record_runs(path: Path, *ids: str) -> None:
    for sid in ids:
        await jeeves.run(
            archs.build_agent(), "count these", model=archs.model(), journal=path, session_id=sid
        )


async def test_a_new_run_decodes_no_record_of_the_runs_before_it(tmp_path: Path) -> None:
    """The file is indexed by each line's head and a record decoded when read: a line whose
    body is damaged (its head whole) stops only what reads that record, naming the line."""
    path = tmp_path / "runs.jsonl"
    await _record_runs(path, "r1", "r2")
    lines = path.read_text().splitlines()
    number = next(
        n for n, line in enumerate(lines, 1) if line.startswith('{"type":"step","v":4,"session_id":"r1",')
    )
    lines[number - 1] = lines[number - 1][:-1] + "#"  # its body no longer JSON; its head whole
    path.write_text("\n".join(lines) + "\n")

    await _record_runs(path, "r3")  # loads the index: decodes neither r1's lines nor r2's
    assert [r.session_id for r in await list_runs(path)] == ["r1", "r2", "r3"]
    assert (await jeeves.replay(archs.build_agent(), path, "r2")).text
    with pytest.raises(JournalError, match=rf"runs.jsonl:{number}: the line is not JSON .* damaged here"):
        await jeeves.replay(archs.build_agent(), path, "r1")


async def test_a_line_whose_body_is_another_record_than_its_head_names_is_damage(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    await record_two(path)
    lines = path.read_text().splitlines()
    lines[1] = lines[1][:-1] + ',"index":7}'  # JSON keeps the last key: the body says step 7
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(JournalError, match=r"run.jsonl:2: the line's record is not the one its head names"):
        await JSONLJournal(path).get_step("r1", 0)
    assert await JSONLJournal(path).step_indices("r1") == [0]


async def test_a_record_from_a_newer_jeeves_is_refused_as_the_file_is_read_whatever_its_spacing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "run.jsonl"
    await record_two(path)
    line = path.read_text().splitlines()[1]
    with path.open("a") as file:
        file.write(line.replace('"v":4,', '"v":99,', 1) + "\n")
    with pytest.raises(JournalError, match=r"run.jsonl:3: .*newer jeeves \(journal schema v99"):
        await JSONLJournal(path).get_session("nobody")


async def test_a_snapshot_decoding_an_older_line_leaves_the_newer_record_in_the_index(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    await record_two(path)
    async with JSONLJournal(path) as journal:
        snapshot = await journal.read_run("r1")  # holds step 0's line, not decoded yet
        await journal.put_step(step(index=0, result={"again": True}))  # a resume records it again
        assert snapshot.step("r1", 0).result != {"again": True}  # type: ignore[union-attr]
        assert (await journal.get_step("r1", 0)).result == {"again": True}  # type: ignore[union-attr]
