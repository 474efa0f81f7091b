from __future__ import annotations

import importlib
import itertools
import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import httpx
import pytest

from jeeves.cli.main import _build_parser, main
from tests.conftest import REPO, jeeves_cli, jeeves_serve, subprocess_env


def test_demo_runs_offline_and_prints_events(tmp_path: Path) -> None:
    out = jeeves_cli("demo", "--json", "--journal", str(tmp_path / "demo.jsonl"))
    assert out.returncode == 0, out.stderr
    events = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    assert events[0]["type"] == "session.started"
    assert events[-1]["type"] == "session.completed"
    assert [e["seq"] for e in events] == sorted(e["seq"] for e in events)


def test_demo_draws_the_session_tree_by_default(tmp_path: Path) -> None:
    out = jeeves_cli("demo", "--journal", str(tmp_path / "demo.jsonl"))
    assert out.returncode == 0, out.stderr
    assert "lead supervisor · scripted:anthropic/claude-sonnet-4-5" in out.stdout
    assert "coder actor_critic · round 1 · score 0.95 ✓" in out.stdout and "approved" in out.stdout
    assert "Here is `is_palindrome`; it passes all three tests" in out.stdout


def test_a_reader_that_goes_away_ends_the_command_quietly(tmp_path: Path) -> None:
    for args in (["--json"], []):  # `jeeves demo --json | head -1`, and the tree
        demo = subprocess.Popen(
            [sys.executable, "-m", "jeeves", "demo", *args, "--journal", str(tmp_path / "demo.jsonl")],
            cwd=REPO,
            env=subprocess_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert demo.stdout is not None and demo.stdout.readline()
        demo.stdout.close()
        _, err = demo.communicate(timeout=120)
        # 128 + SIGPIPE, as `yes | head` ends; no traceback. The demo's output (~40 KB) fits in a
        # pipe's buffer, so on a busy machine it may have written everything and exited 0 before
        # the reader closed: that is quiet too.
        assert demo.returncode in (0, 141) and err == b"", (demo.returncode, err)


def test_serve_binds_localhost_needs_its_token_and_runs_the_demo() -> None:
    with jeeves_serve(env={**subprocess_env(), "JEEVES_TOKEN": "t0ken"}) as base:
        auth = {"Authorization": "Bearer t0ken"}
        assert httpx.get(f"{base}/architectures").status_code == 401
        assert httpx.get(f"{base}/architectures", headers=auth).json() == {"architectures": ["demo"]}
        sid = httpx.post(f"{base}/runs", json={"architecture": "demo", "task": "count"}, headers=auth).json()[
            "session_id"
        ]
        body = httpx.get(f"{base}/runs/{sid}/events", headers=auth, timeout=30).text
        assert '"type":"session.completed"' in body and "event: end" in body


def _units(*groups: str) -> list[list[str]]:
    return [group.split(" ") for group in groups]


ORDERS = {
    # command, then its words in groups that stay together (an option and its value)
    "run": _units("SPEC", "TASK", "--offline", "--journal x.db", "--model critic=a/b", "--json"),
    "replay": _units("runs.db", "team-1", "--json", "--spec mod:attr"),
    "runs": _units("runs.db", "--json"),
    "validate": _units("a.toml", "b.toml", "--"),
    "demo": _units("--json", "--journal d.jsonl", "--trace"),
}


@pytest.mark.parametrize("command", sorted(ORDERS))
def test_options_and_positionals_mix_in_any_order(command: str) -> None:
    """Every order that keeps the positionals in their own order means the same."""
    units = ORDERS[command]
    positionals = [u for u in units if not u[0].startswith("-")]
    expected = vars(_build_parser().parse_args([command, *[w for u in units for w in u]]))
    orders = [p for p in itertools.permutations(units) if [u for u in p if u in positionals] == positionals]
    assert len(orders) >= 2
    for order in orders:
        argv = [command, *[word for unit in order for word in unit]]
        assert vars(_build_parser().parse_args(argv)) == expected, argv


def test_the_orders_users_type_work_end_to_end(tmp_path: Path) -> None:
    journal = str(tmp_path / "runs.jsonl")
    run = jeeves_cli("run", "architectures/codegen.toml", "--offline", "--journal", journal, "Write it.")
    assert run.returncode == 0, run.stderr
    run_json = jeeves_cli("run", "--json", "architectures/codegen.toml", "--session-id", "cg2", "Write it.")
    assert run_json.returncode == 2 and "ANTHROPIC_API_KEY" in run_json.stderr  # TASK taken, not refused
    runs = jeeves_cli("runs", "--json", journal)
    (session,) = [json.loads(line)["session_id"] for line in runs.stdout.splitlines()]
    replay = jeeves_cli("replay", journal, "--json", session)
    assert replay.returncode == 0, replay.stderr
    assert json.loads(replay.stdout.splitlines()[0])["task"] == "Write it."


def test_version_comes_from_the_package_metadata() -> None:
    out = jeeves_cli("--version")
    assert (out.returncode, out.stdout, out.stderr) == (0, f"jeeves {metadata.version('jeeves')}\n", "")


def test_version_without_metadata_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def missing(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert (
        capsys.readouterr().out
        == "jeeves (version unknown: not installed; pip install -e . in the checkout)\n"
    )


RUNS_A_LOOP = {
    "anyio": "import anyio\n\n\nasync def main() -> None:\n    pass\n\n\nanyio.run(main)\n",
    "asyncio": "import asyncio\n\n\nasync def main() -> None:\n    pass\n\n\nasyncio.run(main())\n",
}


@pytest.mark.parametrize("runner", sorted(RUNS_A_LOOP))
def test_a_spec_module_that_runs_a_loop_on_import_is_one_error_line(tmp_path: Path, runner: str) -> None:
    journal = tmp_path / "runs.jsonl"
    recorded = jeeves_cli("run", "architectures/codegen.toml", "--offline", "--journal", str(journal))
    assert recorded.returncode == 0, recorded.stderr
    (tmp_path / "team.py").write_text(RUNS_A_LOOP[runner] + "\nagent = None\n")
    out = jeeves_cli("replay", str(journal), "--spec", "team:agent", cwd=tmp_path)
    assert out.returncode == 2
    assert out.stderr.startswith("error: Importing 'team' (for 'team:agent') starts an event loop (")
    assert out.stderr.endswith(
        'put the module\'s anyio.run()/asyncio.run() call under `if __name__ == "__main__":` '
        "so that importing it only defines things.\n"
    )
    assert out.stderr.count("\n") == 1  # no traceback, no "coroutine was never awaited" warning


def test_an_import_error_that_is_not_about_a_loop_is_not_reworded(tmp_path: Path) -> None:
    (tmp_path / "team.py").write_text('raise RuntimeError("broken at import")\n')
    journal = tmp_path / "runs.jsonl"
    jeeves_cli("run", "architectures/codegen.toml", "--offline", "--journal", str(journal))
    out = jeeves_cli("replay", str(journal), "--spec", "team:agent", cwd=tmp_path)
    assert out.returncode == 2 and out.stderr.count("\n") == 1  # a configuration problem, in one line
    assert "failed at " in out.stderr and "team.py, line 1: RuntimeError: broken at import" in out.stderr
    assert "event loop" not in out.stderr  # not taken for a module that starts one


def test_runs_without_a_journal_reads_the_demos_and_says_where_it_looked(tmp_path: Path) -> None:
    out = jeeves_cli("runs", cwd=tmp_path)
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert out.stderr.startswith(
        "error: No journal given, and none at '.jeeves/demo.jsonl', where `"
    ) and out.stderr.endswith(" -m jeeves runs JOURNAL.\n")


def test_serve_with_live_specs_preloads_litellm_in_the_background(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first live request then finds litellm loaded instead of waiting seconds for it."""
    from jeeves.cli import main as cli
    from jeeves.models import litellm as adapter

    serving = importlib.import_module("jeeves.cli.serve")  # the module, not the function it exports
    spec = tmp_path / "one.toml"
    spec.write_text(
        'instructions = "Answer."\n[models]\ndefault = "openai/gpt-4o-mini"\n[demo.script]\ndefault = ["Hi."]\n'
    )
    started: list[str] = []
    monkeypatch.setattr(adapter, "preload", lambda: started.append("preload"))
    monkeypatch.setattr(serving, "serve", lambda app, **kw: started.append("serve"))

    assert cli.main(["serve", str(spec), "--port", "0"]) == 0
    assert started == ["preload", "serve"]
    started.clear()
    assert cli.main(["serve", str(spec), "--offline", "--port", "0"]) == 0
    assert cli.main(["serve", "--port", "0"]) == 0
    assert started == ["serve", "serve"], "offline and the demo make no live call"


def test_a_server_or_worker_given_a_damaged_journal_says_so_before_it_starts(tmp_path: Path) -> None:
    """Not at its first run (a worker printed `ready`, then failed every run it took)."""
    journal = tmp_path / "garbage.db"
    journal.write_bytes(b"not a database at all")
    spec = "architectures/self_refine.toml"
    for args in (
        [
            "worker",
            spec,
            "--offline",
            "--database",
            f"sqlite:///{tmp_path / 'dbos.sqlite'}",
            "--journal",
            str(journal),
        ],
        ["mcp", "serve", spec, "--offline", "--journal", str(journal)],
        ["serve", spec, "--offline", "--journal", str(journal), "--port", "0"],
    ):
        done = jeeves_cli(*args)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert (
            done.stderr
            == f"error: {journal} is not a jeeves journal or is damaged (file is not a database).\n"
        )
        assert "ready" not in done.stdout and "serving" not in done.stdout
