"""`jeeves runs` and `jeeves replay` (jeeves/cli/runs.py), through the CLI entry point."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

import jeeves
from jeeves.cli.main import main
from jeeves.errors import ProviderError
from tests.conftest import subprocess_env
from tests.journal import archs

FANOUT = "tests.journal.archs:build_fanout"


def record(path: Path, session_id: str, **kwargs: Any) -> jeeves.RunResult:
    async def go() -> jeeves.RunResult:
        return await jeeves.run(
            archs.build_fanout(),
            "count these",
            model=archs.model(),
            journal=path,
            session_id=session_id,
            **kwargs,
        )

    return anyio.run(go)


def test_runs_lists_each_run_with_status_rounds_cost_and_task(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "runs.db"
    record(path, "job-1")
    record(path, "job-2")
    assert main(["runs", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["SESSION", "STATUS", "ROUNDS", "COST", "TASK"]
    assert lines[1].split() == ["job-1", "completed", "-", "$0.0000", "count", "these"]
    assert [line.split()[0] for line in lines[1:]] == ["job-1", "job-2"]

    assert main(["runs", str(path), "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["session_id"], r["status"], r["usage"]["model_calls"]) for r in rows] == [
        ("job-1", "completed", 9),
        ("job-2", "completed", 9),
    ]


def test_runs_last_lists_only_the_latest_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "runs.db"
    for sid in ("job-1", "job-2", "job-3"):
        record(path, sid)
    assert main(["runs", str(path), "--last", "2"]) == 0
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()] == ["SESSION", "job-2", "job-3"]
    assert main(["runs", str(path), "--json", "--last", "1", "--status", "completed"]) == 0
    assert [json.loads(line)["session_id"] for line in capsys.readouterr().out.splitlines()] == ["job-3"]
    assert main(["runs", str(path), "--last", "2", "--status", "failed"]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == []
    assert main(["runs", str(path), "--last", "0"]) == 2
    assert capsys.readouterr().err == "error: --last must be at least 1 run, got 0.\n"


def test_replay_prints_the_event_tree_and_the_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "runs.jsonl"
    recorded = record(path, "job-1", architecture_ref=FANOUT)
    assert main(["replay", str(path), "job-1"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("job-1  session.started  role=fanout architecture=fanout task=count these")
    assert (
        "  worker_0  session.started  role=worker architecture=agent model=fixture-model task=count these part 0"
        in lines
    )
    assert any(line.startswith("  worker_2  tool.completed  name=add result=") for line in lines)
    assert not any("model.delta" in line for line in lines)
    assert f"output: {recorded.text}" in lines
    assert "stop reason: completed (replayed offline)" in lines


def test_replay_without_a_session_plays_the_latest_run_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "runs.jsonl"
    record(path, "job-1", architecture_ref=FANOUT)
    assert main(["replay", str(path)]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("job-1  session.started") and err == ""  # the only run: nothing to say
    record(path, "job-2", architecture_ref=FANOUT)
    assert main(["replay", str(path), "--json"]) == 0
    out, err = capsys.readouterr()
    assert {jeeves.event_from_json(line).session_id.split("__")[0] for line in out.splitlines()} == {"job-2"}
    assert (
        err
        == f"Replaying the latest run, job-2; the journal holds others (`jeeves runs {path}` lists them).\n"
    )
    empty = tmp_path / "empty.jsonl"
    empty.touch()
    assert main(["replay", str(empty)]) == 2
    assert capsys.readouterr().err == (
        f"error: {empty} holds no runs; record one with `jeeves run SPEC --journal {empty}`.\n"
    )


def test_replay_json_prints_events_marked_replayed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "runs.db"
    record(path, "job-1")
    assert main(["replay", str(path), "job-1", "--spec", FANOUT, "--json"]) == 0
    events = [jeeves.event_from_json(line) for line in capsys.readouterr().out.splitlines()]
    assert events[-1].type == "session.completed" and events[-1].session_id == "job-1"
    assert all(e.replayed for e in events)
    assert {e.session_id for e in events} == {
        "job-1",
        "job-1__worker_0",
        "job-1__worker_1",
        "job-1__worker_2",
    }


def test_replay_failures_exit_2_with_the_reason(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "runs.db"
    record(path, "job-1")
    assert main(["replay", str(path), "job-1"]) == 2
    assert "does not say how to rebuild the architecture of run 'job-1'" in capsys.readouterr().err
    assert main(["replay", str(path), "job-1", "--spec", "tests.journal.archs:build_agent"]) == 2
    assert "error: Session 'job-1' step 0 (model call) differs" in capsys.readouterr().err
    assert main(["replay", str(path), "nobody", "--spec", FANOUT]) == 2
    assert "holds no run 'nobody'; its runs are: 'job-1'" in capsys.readouterr().err
    for odd in ("../x", "a/b", "x" * 300):  # no eval's id either (its report is a file beside the journal)
        assert main(["replay", str(path), odd]) == 2
        assert f"holds no run {odd!r}; its runs are: 'job-1'" in capsys.readouterr().err
    assert main(["runs", str(path), "--last", str(2**63)]) == 0  # past a SQL LIMIT: every run
    assert "job-1" in capsys.readouterr().out
    assert main(["runs", str(tmp_path / "typo.db")]) == 2
    assert "There is no journal at" in capsys.readouterr().err


def _record_a_failed_run(path: Path) -> None:
    """Run `job-1` into `path` until its provider fails with a 400."""

    async def go() -> None:
        model = jeeves.ScriptedModel([ProviderError("the provider is down", status_code=400)])
        with pytest.raises(ProviderError):
            await jeeves.run(
                archs.build_agent(),
                "t",
                model=model,
                journal=path,
                session_id="job-1",
                architecture_ref="tests.journal.archs:build_agent",
            )

    anyio.run(go)


def test_replaying_a_failed_run_fails_the_same_way_with_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "runs.jsonl"
    _record_a_failed_run(path)
    assert main(["replay", str(path), "job-1"]) == 1
    captured = capsys.readouterr()
    assert "session.failed  error_type=ProviderError message=the provider is down" in captured.out
    assert "its replay failed the same way: the provider is down" in captured.err


def test_the_command_imports_the_architecture_from_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my_arch.py").write_text(
        "from tests.journal.archs import Fanout\n\n\ndef build():\n    return Fanout()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    path = tmp_path / "runs.db"
    recorded = record(path, "job-1", architecture_ref="my_arch:build")
    out = subprocess.run(
        [sys.executable, "-m", "jeeves", "replay", "runs.db", "job-1"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=subprocess_env(),
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-4:] == [
        f"output: {recorded.text}",
        "stop reason: completed (replayed offline)",
        "recorded: 9 model calls · 123 tokens · $0.0000",  # what the run spent; the replay spends nothing
        "  fanout.worker: 9 calls, 123 tokens, $0.0000",
    ]


def test_a_failed_run_that_replays_into_another_failure_is_a_divergence_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "runs.jsonl"
    _record_a_failed_run(path)
    lines = path.read_text().splitlines()
    last = json.loads(lines[-1])
    assert (last["session_id"], last["status"]) == ("job-1", "failed")
    path.write_text("\n".join([*lines[:-1], json.dumps({**last, "output": "a quota error"})]) + "\n")
    assert main(["replay", str(path), "job-1"]) == 2
    err = capsys.readouterr().err
    assert "failed the same way" not in err
    assert "error: Session 'job-1' replayed every recorded step but ended otherwise than recorded" in err


CHILD = '''
import sys

import anyio

import jeeves
from jeeves import Agent, FunctionModel
from jeeves.testing import Reply, call


@jeeves.tool
async def wait_for_operator() -> str:
    """Wait until the operator says go (a line on stdin)."""
    print("waiting", flush=True)
    return await anyio.to_thread.run_sync(sys.stdin.readline)


def act(request):
    done = any(m.role == "tool" for m in request.messages)
    return Reply(text="done") if done else Reply(tool_calls=[call("wait_for_operator")])


async def main():
    agent = Agent("You wait for the operator.", tools=[wait_for_operator])
    await jeeves.run(agent, "Wait.", model=FunctionModel(act), session_id="op", journal=sys.argv[1])


anyio.run(main)
'''


def test_runs_watch_follows_a_run_another_process_is_running(tmp_path: Path) -> None:
    journal = tmp_path / "runs.jsonl"
    env = subprocess_env()
    child_args = [sys.executable, "-c", CHILD, str(journal)]
    watch_args = [sys.executable, "-m", "jeeves", "runs", str(journal), "--watch"]
    with subprocess.Popen(
        child_args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    ) as child:
        try:
            assert child.stdout is not None and child.stdin is not None
            assert child.stdout.readline() == "waiting\n"  # its tool is running: the run is in progress
            with subprocess.Popen(watch_args, stdout=subprocess.PIPE, text=True, env=env) as watch:
                try:
                    assert watch.stdout is not None
                    first = watch.stdout.readline()
                    assert first.startswith("op in_progress step="), first
                    child.stdin.write("go\n")
                    child.stdin.flush()
                    assert child.wait(timeout=120) == 0
                    rest = watch.stdout.read().splitlines()  # --watch ends once no run is in progress
                    assert watch.wait(timeout=120) == 0
                finally:
                    if watch.poll() is None:
                        watch.kill()
        finally:
            if child.poll() is None:
                child.kill()
    assert rest and rest[-1].startswith("op completed step="), rest
    assert all(line.startswith("op ") for line in rest), rest


async def _put_runs(path: Path, *runs: tuple[str, str]) -> None:
    from jeeves.journal.records import SessionRecord
    from jeeves.journal.sqlite import SQLiteJournal

    async with SQLiteJournal(path) as store:
        for sid, status in runs:
            await store.put_session(
                SessionRecord(session_id=sid, role="agent", architecture="agent", status=status)  # type: ignore[arg-type]
            )


@pytest.mark.anyio
async def test_a_watch_rereads_only_the_runs_that_can_still_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After the first poll, a poll reads the tail from the first run that has not ended for
    good (completed, rejected, expired never change; new runs come last), and sees exactly
    what listing every run sees: runs that ended, a failed run resumed, new runs past any
    guess of how many."""
    from jeeves.cli import runs as cli_runs
    from jeeves.journal.open import list_runs

    path = tmp_path / "runs.db"
    await _put_runs(path, *[(f"done-{i:03d}", "completed") for i in range(200)])
    await _put_runs(path, ("failed-1", "failed"), ("going-1", "in_progress"), ("going-2", "in_progress"))
    asked: list[int | None] = []

    async def counted(journal: Any, last: int | None = None) -> Any:
        asked.append(last)
        return await list_runs(journal, last=last)

    monkeypatch.setattr(cli_runs, "list_runs", counted)
    followed = cli_runs._Followed(str(path))

    def seen(runs: list[Any]) -> list[tuple[str, str]]:
        return [(r.session_id, r.status) for r in runs]

    assert len(await followed.poll()) == 203 and asked == [None]
    await _put_runs(path, ("going-1", "completed"), ("failed-1", "in_progress"))
    await _put_runs(path, *[(f"new-{i:03d}", "in_progress") for i in range(40)])  # more than a guess
    assert seen(await followed.poll()) == seen(await list_runs(path))
    assert all(last is not None and last < 100 for last in asked[1:]), asked  # never every run again

    await _put_runs(path, ("failed-1", "completed"), ("going-2", "rejected"))
    await _put_runs(path, *[(f"new-{i:03d}", "completed") for i in range(40)])
    asked.clear()
    assert seen(await followed.poll()) == seen(await list_runs(path))
    assert asked == [43 + 16]  # from failed-1, the first run that could still change, on


@pytest.mark.anyio
async def test_a_watch_of_the_latest_runs_starts_from_them_and_follows_what_comes_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jeeves.cli import runs as cli_runs
    from jeeves.journal.open import list_runs

    path = tmp_path / "runs.db"
    await _put_runs(path, *[(f"done-{i:03d}", "completed") for i in range(50)], ("going", "in_progress"))
    followed = cli_runs._Followed(str(path))
    assert [r.session_id for r in await followed.poll(2)] == ["done-049", "going"]
    await _put_runs(path, ("going", "completed"), ("next", "in_progress"))
    polled = [(r.session_id, r.status) for r in await followed.poll()]
    assert polled[-3:] == [(r.session_id, r.status) for r in await list_runs(path, last=3)]
    assert [sid for sid, _ in polled[-3:]] == ["done-049", "going", "next"]
