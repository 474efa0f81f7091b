"""`jeeves resume` of a spec's run: from the spec and the `--model` routes recorded with the
run, offline from where its `[demo]` script stopped, and a failure before any step leaving
the run waiting."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.conftest import REPO, jeeves_cli


def _suspended(tmp_path: Path, *flags: str) -> Path:
    """refund_desk.toml copied into `tmp_path`, run offline to its gate as t-881 in runs.db."""
    shutil.copytree(REPO / "architectures", tmp_path / "architectures")
    ran = jeeves_cli(
        "run", "architectures/refund_desk.toml", "--offline", "--journal", "runs.db", "--session-id", "t-881",
        *flags, cwd=tmp_path,
    )  # fmt: skip
    assert ran.returncode == 3, ran.stdout + ran.stderr
    return tmp_path


def _status(folder: Path) -> str:
    listed = jeeves_cli("runs", "runs.db", cwd=folder)
    return listed.stdout.splitlines()[1].split()[1]


def test_a_resume_goes_on_with_the_recorded_routes_and_a_failure_before_any_step_leaves_it_waiting(
    tmp_path: Path,
) -> None:
    folder = _suspended(tmp_path, "--model", "support=anthropic/claude-3-5-haiku-latest")
    denied = jeeves_cli("deny", "runs.db", "t-881", "--by", "bob", cwd=folder)
    assert denied.returncode == 0, denied.stderr
    assert "go on with: " in denied.stdout and denied.stdout.rstrip().endswith(
        "resume runs.db t-881 --offline"
    )

    live = jeeves_cli("resume", "runs.db", "t-881", cwd=folder)  # the run's own route, live: no key here
    assert live.returncode == 2, live.stdout + live.stderr
    assert (
        "'anthropic/claude-3-5-haiku-latest' needs ANTHROPIC_API_KEY" in live.stderr
    )  # not the spec's gpt-4o-mini
    assert live.stderr.rstrip().endswith("resume runs.db t-881 --offline")
    assert "Traceback" not in live.stderr
    assert _status(folder) == "awaiting_gate"  # the call failed before anything ran: as it was

    offline = jeeves_cli("resume", "runs.db", "t-881", "--offline", "--json", cwd=folder)
    assert offline.returncode == 0, offline.stderr
    assert '"model":"scripted:anthropic/claude-3-5-haiku-latest"' in offline.stdout.replace(" ", "")
    assert _status(folder) == "completed"
    replayed = jeeves_cli("replay", "runs.db", "t-881", cwd=folder)
    assert replayed.returncode == 0, replayed.stderr
    assert "by=bob" in replayed.stdout


def test_a_resume_names_what_it_cannot_find(tmp_path: Path) -> None:
    folder = _suspended(tmp_path)
    (folder / "architectures").rename(folder / "desk")  # the spec and its tools moved
    gone = jeeves_cli("resume", "runs.db", "t-881", "--offline", cwd=folder)
    assert gone.returncode == 2
    assert (
        "refund_desk.toml', which is not there any more; name the spec to go on with: --spec" in gone.stderr
    )
    moved = jeeves_cli(
        "resume", "runs.db", "t-881", "--offline", "--spec", "desk/refund_desk.toml", cwd=folder
    )
    assert moved.returncode == 3, moved.stderr  # the gate is still undecided: it suspends again
    assert "pending: t-881#3" in moved.stdout
    assert "approve runs.db t-881 --by NAME" in moved.stdout

    module = jeeves_cli(
        "resume", "runs.db", "t-881", "--offline", "--spec", "refund_tools:lookup_order", cwd=folder
    )
    assert module.returncode == 2
    assert (
        "--offline plays a spec's [demo] script, and 'refund_tools:lookup_order' is not a spec file."
        in module.stderr
    )
    missing = jeeves_cli("resume", "runs.db", "t-999", "--offline", cwd=folder)
    assert missing.returncode == 2
    assert "holds no run 't-999'" in missing.stderr
    assert _status(folder) == "awaiting_gate"
