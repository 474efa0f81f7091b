"""A damaged journal fails as a `JournalError` naming the file and the record, in every store,
through `jeeves.replay` and through `jeeves replay` (one line, exit 2); a replay that ends
otherwise than the recording (stop reason, verdicts, a missing end) is a divergence."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import jeeves
from jeeves.cli.main import main
from jeeves.errors import JournalError, ReplayDivergence
from jeeves.journal.open import list_runs
from jeeves.journal.records import SessionRecord, StepRecord
from jeeves.journal.store import JournalStore, JournalWarning
from tests.conftest import REPO, offline_env
from tests.journal import archs
from tests.journal.conftest import KINDS_ON_DISK, Stores, rewrite_postgres, stores_of

pytestmark = pytest.mark.anyio

REF = "tests.journal.archs:build_checked"
ACTOR, CRITIC = "r1__actor_0", "r1__critic_0"
BIG = "A" * 4_000_000


async def record(journal: JournalStore) -> None:
    result = await jeeves.run(
        archs.build_checked(),
        "Write add",
        model=archs.coder_model(),
        journal=journal,
        session_id="r1",
        architecture_ref=REF,
    )
    assert result.stop_reason == "approved"


async def record_jsonl(path: Path) -> None:
    async with jeeves.JSONLJournal(path) as journal:
        await record(journal)


def _critic_error(attrs: dict[str, Any], name: str = "CriticError") -> dict[str, Any]:
    return {"result": None, "error": {"type": name, "message": "no", "attrs": attrs}}


# (session, step index, fields replaced in the recorded step, what the message says)
STEP_DAMAGE: dict[str, tuple[str, dict[str, Any], str]] = {
    "result-shape": (ACTOR, {"result": {"response": 5}}, "the recorded result does not fit the step"),
    "unknown-event": (ACTOR, {"events": [{"type": "no.such.event"}]}, "a recorded event does not validate"),
    "bad-event": (
        ACTOR,
        {"events": [{"type": "model.delta", "session_id": ACTOR, "text": ["not", "text"]}]},
        "a recorded event does not validate",
    ),
    "error-class-attr": (
        CRITIC,
        _critic_error({"__class__": "str"}),
        'a recorded CriticError cannot have attribute "__class__"',
    ),
    "error-attr-type": (
        CRITIC,
        _critic_error({"status_code": "500"}, "ProviderError"),
        'a recorded ProviderError cannot have attribute "status_code" = "500"',
    ),
    "error-huge-type": (CRITIC, _critic_error({}, BIG), 'the recorded error type "AAAA'),
}


async def damage_step(stores: Stores, session_id: str, fields: dict[str, Any]) -> None:
    """Write the step again with `fields` replaced, through the store (the last record wins)."""
    journal = stores.open()
    recorded = await journal.get_step(session_id, 0)
    assert recorded is not None
    await journal.put_step(StepRecord.model_validate({**recorded.model_dump(), **fields}))


def where(stores: Stores, session_id: str) -> str:
    """What the message must name: the journal's file (or the memory journal) and the record."""
    store = "MemoryJournal" if stores.kind == "memory" else str(stores.path)
    return f"{store}.*session '{session_id}' step 0"


def one_bounded_line(message: str) -> None:
    assert "\n" not in message and len(message) <= JournalError.MAX_MESSAGE + 100, len(message)


@pytest.mark.parametrize("case", list(STEP_DAMAGE))
async def test_a_damaged_step_is_a_journal_error_naming_file_and_record(stores: Stores, case: str) -> None:
    await record(stores.open())
    session_id, fields, says = STEP_DAMAGE[case]
    await damage_step(stores, session_id, fields)
    with pytest.raises(JournalError, match=f"{where(stores, session_id)}.*{says}") as info:
        await jeeves.replay(None, stores.open(), "r1")
    one_bounded_line(str(info.value))
    assert "damaged here" in str(info.value)


@pytest.mark.parametrize("case", list(STEP_DAMAGE))
@pytest.mark.parametrize("kind", KINDS_ON_DISK)
def test_jeeves_replay_of_a_damaged_step_prints_one_line_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, case: str, request: pytest.FixtureRequest
) -> None:
    import anyio

    stores = stores_of(kind, tmp_path, request)
    session_id, fields, says = STEP_DAMAGE[case]

    async def prepare() -> None:
        await record(stores.open())
        await damage_step(stores, session_id, fields)
        stores.close()

    anyio.run(prepare)
    assert main(["replay", str(stores.path), "r1"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1, err[:500]
    assert err.startswith("error: ") and str(stores.path) in err and f"session '{session_id}' step 0" in err
    assert says.replace("\\", "") in err


def rewrite_jsonl(path: Path, match: Callable[[dict[str, Any]], bool], text: str) -> None:
    lines = path.read_text().splitlines()
    number = max(i for i, line in enumerate(lines) if match(json.loads(line)))
    lines[number] = text
    path.write_text("\n".join(lines) + "\n")


def rewrite_sqlite(path: Path, session_id: str, text: str) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE steps SET record = ? WHERE session_id = ? AND idx = 0", (text, session_id))
    conn.close()


@pytest.mark.parametrize("kind", KINDS_ON_DISK)
async def test_deeply_nested_json_is_a_journal_error_not_a_recursion_error(
    tmp_path: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    stores = stores_of(kind, tmp_path, request)
    await record(stores.open())
    stores.close()
    deep = '{"type": "step", "v": 1, "result": ' + "[" * 100_000 + "]" * 100_000 + "}"
    if kind == "jsonl":
        rewrite_jsonl(stores.path, lambda r: r.get("session_id") == ACTOR and r["type"] == "step", deep)
        named = f"{stores.path}:3"
    elif kind == "postgres":
        rewrite_postgres(str(stores.path), ACTOR, deep)
        named = f"{stores.path} (session '{ACTOR}' step 0)"
    else:
        rewrite_sqlite(stores.path, ACTOR, deep)
        named = f"{stores.path} (session '{ACTOR}' step 0)"
    with pytest.raises(JournalError) as info:
        await jeeves.replay(None, stores.path, "r1")
    assert str(info.value).startswith(f"{named}: the ") and "nested too deeply" in str(info.value)
    one_bounded_line(str(info.value))


async def test_a_huge_value_where_a_record_is_expected_gives_a_bounded_message(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text(json.dumps({"type": "step", "v": BIG}) + "\n")
    with pytest.raises(
        JournalError, match=r"run.jsonl:1: the record has no schema version \(v=\"AAA"
    ) as info:
        await jeeves.replay(None, path, "r1")
    one_bounded_line(str(info.value))


async def replace_session(journal: JournalStore, session_id: str, **fields: Any) -> None:
    recorded = await journal.get_session(session_id)
    assert recorded is not None
    await journal.put_session(SessionRecord.model_validate({**recorded.model_dump(), **fields}))
    await journal.aclose()  # a SQL store commits a child's record with its next call, or here


async def test_a_replay_that_ends_with_another_stop_reason_diverges(stores: Stores) -> None:
    """The text is the same; the recorded verdict was another one: that is not the recorded run."""
    await record(stores.open())
    await replace_session(stores.open(), "r1", stop_reason="critic_failed")
    with pytest.raises(ReplayDivergence, match='stop_reason "critic_failed", replayed "approved"') as info:
        await jeeves.replay(None, stores.open(), "r1")
    assert (info.value.session_id, info.value.step) == ("r1", -1)


async def test_a_child_session_that_ends_otherwise_diverges(stores: Stores) -> None:
    await record(stores.open())
    await replace_session(stores.open(), CRITIC, output="a verdict the critic never gave")
    with pytest.raises(ReplayDivergence, match=f"Session '{CRITIC}' .* another output") as info:
        await jeeves.replay(None, stores.open(), "r1")
    assert info.value.session_id == CRITIC


async def test_a_run_with_no_recorded_end_does_not_replay_as_a_success(stores: Stores) -> None:
    await record(stores.open())
    await replace_session(stores.open(), "r1", status="running", stop_reason=None, output=None)
    with pytest.raises(ReplayDivergence, match="the journal holds no end for it"):
        await jeeves.replay(None, stores.open(), "r1")


def cut_last_record(path: Path) -> int:
    """Cut the JSONL file inside its last line (the root's end); returns that line's number."""
    data = path.read_bytes().rstrip(b"\n")
    last = data.rsplit(b"\n", 1)[1]
    assert json.loads(last)["session_id"] == "r1" and json.loads(last)["status"] == "completed"
    path.write_bytes(data[: len(data) - len(last) // 2])
    return data.count(b"\n") + 1


async def test_a_jsonl_cut_inside_its_last_root_record_does_not_replay_as_a_success(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    await record_jsonl(path)
    number = cut_last_record(path)
    with pytest.warns(JournalWarning, match=f"the {number - 1} records before it are kept") as caught:
        with pytest.raises(ReplayDivergence, match="the journal holds no end for it"):
            await jeeves.replay(None, path, "r1")
    assert (caught[0].filename, caught[0].lineno) == (str(path), number)


def test_jeeves_replay_of_a_cut_jsonl_warns_in_one_line_and_exits_2(tmp_path: Path) -> None:
    import anyio

    path = tmp_path / "run.jsonl"
    anyio.run(record_jsonl, path)
    number = cut_last_record(path)
    done = subprocess.run(
        [sys.executable, "-m", "jeeves", "replay", str(path), "r1"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=offline_env(),
        timeout=300,
    )
    assert done.returncode == 2, done.stderr
    warning, error, *_ = done.stderr.splitlines()  # the warning, then at once the error: no source line
    assert warning.startswith(f"warning: {path} line {number}: the last line is incomplete (")
    assert error.startswith("error: Session 'r1' replayed every recorded step but the journal holds no end")
    assert "output:" not in done.stdout


def test_jeeves_replay_of_a_damaged_journal_in_a_subprocess_is_one_line_exit_2(tmp_path: Path) -> None:
    import anyio

    stores = Stores("sqlite", tmp_path)
    path = stores.path

    async def prepare() -> None:
        await record(stores.open())
        await damage_step(stores, CRITIC, _critic_error({"__class__": "str"}))
        stores.close()

    anyio.run(prepare)
    done = subprocess.run(
        [sys.executable, "-m", "jeeves", "replay", str(path)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=offline_env(),
        timeout=300,
    )
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"error: {path} (session '{CRITIC}' step 0): a recorded CriticError cannot have attribute "
        f'"__class__" = "str". The journal is damaged here; restore it from a backup or record into a new file.'
    ]


async def test_listing_runs_with_a_damaged_usage_is_a_journal_error(stores: Stores) -> None:
    await record(stores.open())
    await replace_session(stores.open(), "r1", usage={"model_calls": "many"})
    with pytest.raises(
        JournalError, match="session 'r1'.: the recorded usage does not validate .*model_calls"
    ):
        await list_runs(stores.open())


@pytest.mark.parametrize("suffix", [".db", ".jsonl"])
async def test_a_journal_path_no_file_can_be_at_is_one_user_error_naming_it(
    tmp_path: Path, suffix: str
) -> None:
    """A folder where the file should be, or a file where one of its folders should be: the
    same one line for reading and for recording, in both file stores."""
    folder = tmp_path / f"runs{suffix}"
    folder.mkdir()
    (tmp_path / "notes").write_text("a file, not a folder")
    under_a_file = tmp_path / "notes" / f"runs{suffix}"
    for path, said in (
        (folder, f"{str(folder)!r} is a folder, not a journal file; give a file path, e.g. runs{suffix}."),
        (under_a_file, f"{str(tmp_path / 'notes')!r} is a file, so no journal can be made"),
    ):
        with pytest.raises(jeeves.UserError) as recording:
            await record(path)  # type: ignore[arg-type]
        with pytest.raises(jeeves.UserError) as listing:
            await list_runs(path)
        assert str(recording.value).startswith(said) and "\n" not in str(recording.value)
        assert "\n" not in str(listing.value)
        if path == folder:  # reading a path under a file may also say there is no journal there
            assert str(listing.value).startswith(said)


def test_jeeves_commands_on_a_folder_journal_print_one_line_and_exit_2(tmp_path: Path) -> None:
    folder = tmp_path / "runs.jsonl"
    folder.mkdir()
    for args in (
        ["runs", str(folder)],
        ["replay", str(folder), "r1"],
        ["run", "architectures/self_refine.toml", "--offline", "--journal", str(folder)],
        ["serve", "architectures/self_refine.toml", "--offline", "--journal", str(folder), "--port", "0"],
    ):
        done = subprocess.run(
            [sys.executable, "-m", "jeeves", *args],
            cwd=REPO,
            env=offline_env(),
            capture_output=True,
            text=True,
        )
        assert done.returncode == 2, (args, done.stderr)
        assert done.stderr.strip().splitlines()[-1] == (
            f"error: {str(folder)!r} is a folder, not a journal file; give a file path, e.g. runs.jsonl."
        ), args
        assert "Traceback" not in done.stderr, args
