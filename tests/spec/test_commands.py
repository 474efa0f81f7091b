"""`jeeves run`, `jeeves validate` and `jeeves serve SPEC`, as a user types them."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from jeeves.cli.run import describe_spec, parse_model_flags, spec_catalog
from jeeves.errors import UserError
from jeeves.spec import build, load_spec
from tests.conftest import REPO, jeeves_cli, jeeves_serve, offline_env

CODEGEN = "architectures/codegen.toml"


def test_validate_prints_the_outline() -> None:
    out = jeeves_cli("validate", "architectures/research_team.toml")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[:5] == [
        "architectures/research_team.toml: valid",
        "  lead  supervisor",
        "    researcher  agent  tools: search_notes",
        "    writer  actor_critic  critics: citations, editor",
        "      actor  agent",
    ]
    assert out.stdout.splitlines()[5:10] == [
        "  routing:",
        "    lead                → anthropic/claude-sonnet-4-5  (models.lead)",
        "    lead.researcher     → openai/gpt-4o-mini  (models.researcher)",
        '    lead.writer.actor   → anthropic/claude-sonnet-4-5  (models."writer.actor")',
        '    lead.writer.critic  → openai/gpt-4o  (models."writer.critic")',
    ]


def test_validate_checks_every_spec_given_and_fails_if_one_fails(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('type = "agent"\n')
    ready = sorted(str(p.relative_to(REPO)) for p in (REPO / "architectures").glob("*.toml"))
    assert jeeves_cli("validate", *ready).stdout.count(": valid\n") == len(ready) == 6
    out = jeeves_cli("validate", ready[0], str(bad), ready[1])
    assert out.returncode == 2
    assert [line for line in out.stdout.splitlines() if line.endswith(": valid")] == [
        f"{ready[0]}: valid",
        f"{ready[1]}: valid",
    ]
    assert out.stderr.startswith(f"error: {bad} has a problem:\n  - instructions: ")


def test_the_task_can_come_from_stdin() -> None:
    task = "Write parse_duration(text): seconds in '1h30m'.\nRaise ValueError otherwise."
    out = jeeves_cli("run", CODEGEN, "-", "--offline", "--json", stdin=task)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.splitlines()[0])["task"] == task
    empty = jeeves_cli("run", CODEGEN, "-", "--offline", stdin=" \n")
    assert empty.returncode == 2
    assert re.fullmatch(
        r"error: TASK is '-' but stdin is empty; pipe the task in, e.g. \S+ -m jeeves run SPEC - < task\.md\.\n",
        empty.stderr,
    )


def test_a_task_that_is_not_utf8_is_one_line_before_anything_runs(tmp_path: Path) -> None:
    journal = tmp_path / "runs.db"
    for args, stdin in ((["-"], b"Write add\xff\n"), ([os.fsdecode(b"Write add\xff")], b"")):
        done = subprocess.run(
            [sys.executable, "-m", "jeeves", "run", CODEGEN, *args, "--offline", "--journal", str(journal)],
            input=stdin,
            cwd=REPO,
            env=offline_env(),
            capture_output=True,
        )
        assert done.returncode == 2
        assert (
            done.stderr
            == b"error: TASK is not UTF-8 text (byte 0xff at character 9); save or pass the task as UTF-8.\n"
        )
        assert done.stdout == b"" and not journal.exists()


def test_validate_a_bad_spec_lists_its_problems_and_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(
        'type = "actor_critic"\nmax_round = 2\n[actor]\ninstructions = "x"\n[critic]\ntype = "llm"\n'
    )
    out = jeeves_cli("validate", str(bad))
    assert out.returncode == 2
    assert out.stderr == (
        f"error: {bad} has a problem:\n  - max_round: unknown key; did you mean 'max_rounds'?\n"
        "See docs/specs.md for every key and its default.\n"
    )


def test_run_offline_json_is_one_event_per_line() -> None:
    out = jeeves_cli("run", CODEGEN, "--offline", "--json", "--session-id", "cg")
    assert out.returncode == 0, out.stderr
    events = [json.loads(line) for line in out.stdout.splitlines()]
    assert (events[0]["type"], events[0]["session_id"], events[0]["role"]) == (
        "session.started",
        "cg",
        "codegen",
    )
    assert events[-1]["type"] == "session.completed" and events[-1]["stop_reason"] == "approved"
    assert [e["score"] for e in events if e["type"] == "critique"] == [0.2, 0.95]


def test_run_offline_records_a_journal_that_replays(tmp_path: Path) -> None:
    journal = tmp_path / "runs.db"
    out = jeeves_cli(
        "run", "architectures/self_refine.toml", "--offline", "--journal", str(journal), "--session-id", "sr"
    )
    assert out.returncode == 0, out.stderr
    assert "stop reason: approved · 4 model calls" in out.stdout
    assert "  explainer.draft: 2 calls" in out.stdout and "  explainer.feedback: 2 calls" in out.stdout
    (command,) = [
        line.split(": ", 1)[1] for line in out.stdout.splitlines() if line.startswith("replay it: ")
    ]
    assert command.endswith(f" -m jeeves replay {journal} sr")  # as it was run: python -m jeeves
    replayed = subprocess.run(  # as the user pastes it; the architecture comes back from the spec stored
        command, shell=True, cwd=REPO, env=offline_env(), capture_output=True, text=True, timeout=300
    )
    assert replayed.returncode == 0, replayed.stderr
    assert "stop reason: approved (replayed offline)" in replayed.stdout
    with_spec = jeeves_cli("replay", str(journal), "sr", "--spec", "architectures/self_refine.toml")
    assert with_spec.returncode == 0, with_spec.stderr
    assert with_spec.stdout == replayed.stdout


def test_a_missing_api_key_names_the_variable_without_a_traceback() -> None:
    out = jeeves_cli("run", CODEGEN, "Write parse_duration(text).")
    assert out.returncode == 2
    assert "ANTHROPIC_API_KEY" in out.stderr and out.stderr.startswith("error: ")
    assert out.stderr.endswith(
        "pass api_key= to LiteLLMClient; or try it offline with --offline (the spec's [demo] script answers)\n"
    )
    assert "Traceback" not in out.stderr


def test_model_flags_route_a_role_to_another_model() -> None:
    live = jeeves_cli(
        "run", "architectures/self_refine.toml", "Explain.", "--model", "explainer=openai/gpt-4o"
    )
    assert live.returncode == 2  # the spec routes the explainer to Anthropic; the flag sends it to OpenAI
    assert "OPENAI_API_KEY" in live.stderr and "Traceback" not in live.stderr
    offline = jeeves_cli(
        "run", "architectures/self_refine.toml", "--offline", "--model", "explainer=openai/gpt-4o"
    )
    assert offline.returncode == 0, offline.stderr  # offline stays offline: the script answers as gpt-4o
    assert "draft agent · scripted:openai/gpt-4o" in offline.stdout


def test_configuration_mistakes_exit_2_with_one_line(tmp_path: Path) -> None:
    bare = tmp_path / "bare.toml"
    bare.write_text('instructions = "Answer."\n')
    cases = {
        ("run", str(bare)): f"error: Give a TASK: {bare} has no [demo] task to fall back on.",
        (
            "run",
            str(bare),
            "hi",
            "--offline",
        ): f"error: {bare} has no [demo] script, so it cannot run offline",
        ("run", CODEGEN, "--offline", "--model", "critic"): "error: --model 'critic' is not ROLE=MODEL",
        ("run", "nope.toml", "x"): "error: Cannot read spec file 'nope.toml'",
        ("run", CODEGEN, "--offline", "--session-id", "a__b"): "error: Invalid session_id 'a__b'",
        (
            "run",
            CODEGEN,
            "--offline",
            "--budget-usd",
            "-1",
        ): "error: --budget-usd must be a number of dollars >= 0",
        (
            "run",
            CODEGEN,
            "--offline",
            "--budget-usd",
            "inf",
        ): "error: --budget-usd must be a number of dollars >= 0, got inf.\n",
        ("run", CODEGEN, "--offline", "--model", "critik=openai/gpt-4o"): (
            f"error: {CODEGEN}: the model override 'critik' (--model critik=...): no session of this spec "
            "routes as 'critik' (did you mean 'critic'?); use one of 'actor', 'critic', 'codegen.actor'"
        ),
        ("run", str(bare), "hi"): (
            f"error: {bare}: no model route for agent; add a [models] route for each (or a 'default' one), "
            "or pass e.g. --model agent=openai/gpt-4o-mini."
        ),
    }
    for args, start in cases.items():
        out = jeeves_cli(*args)
        assert (out.returncode, out.stderr.startswith(start)) == (2, True), out.stderr
        assert "Traceback" not in out.stderr


def test_trace_prints_spans_to_stderr_and_keeps_stdout_events() -> None:
    out = jeeves_cli("run", "architectures/self_refine.toml", "--offline", "--json", "--trace")
    assert out.returncode == 0, out.stderr
    assert all(json.loads(line)["type"] for line in out.stdout.splitlines())
    spans = json.loads("[" + out.stderr.strip().replace("}\n{", "},\n{") + "]")
    assert {"invoke_agent explainer", "invoke_agent draft", "chat scripted:anthropic/claude-sonnet-4-5"} <= {
        s["name"] for s in spans
    }


def test_a_zero_budget_stops_before_the_first_call() -> None:
    out = jeeves_cli("run", CODEGEN, "--offline", "--budget-usd", "0")
    assert out.returncode == 4, out.stderr  # ExitCode.BUDGET: the budget ran out
    assert "stop reason: budget · 0 model calls" in out.stdout


def test_model_flags_parse() -> None:
    assert parse_model_flags(["critic=openai/gpt-4o", " coder.actor = x/y "]) == {
        "critic": "openai/gpt-4o",
        "coder.actor": "x/y",
    }
    with pytest.raises(UserError, match="is not ROLE=MODEL"):
        parse_model_flags(["=x"])


def test_describe_and_catalog() -> None:
    spec = load_spec(REPO / CODEGEN)
    outline = describe_spec(spec, *build(spec))
    assert outline.startswith("  codegen  actor_critic  critics: tests, review\n    actor  agent\n")
    catalog = spec_catalog([str(REPO / CODEGEN)], offline=True)
    arch, router, approvals = catalog["codegen"]()
    assert arch.name == "actor_critic" and router.routes["actor"].model.startswith("scripted:")
    assert approvals is None  # codegen has no [approvals]; refund_desk's comes with its entry
    assert spec_catalog([str(REPO / "architectures/refund_desk.toml")], offline=True)["refund_desk"]()[2] == (
        load_spec(REPO / "architectures/refund_desk.toml").approvals
    )
    assert (
        catalog["codegen"]()[1].routes["default"].client is not router.routes["default"].client
    )  # fresh script
    with pytest.raises(UserError, match="Two specs are named 'codegen'"):
        spec_catalog([str(REPO / CODEGEN), str(REPO / CODEGEN)])


def test_serve_serves_specs_each_with_its_own_routes() -> None:
    with jeeves_serve("architectures/self_refine.toml", CODEGEN, "--offline", env=offline_env()) as base:
        assert httpx.get(f"{base}/architectures").json() == {"architectures": ["self_refine", "codegen"]}
        started = httpx.post(
            f"{base}/runs", json={"architecture": "codegen", "task": "parse durations"}
        ).json()
        body = httpx.get(f"{base}/runs/{started['session_id']}/events", timeout=60).text
        assert '"model":"scripted:anthropic/claude-sonnet-4-5"' in body
        assert '"stop_reason":"approved"' in body and "event: end" in body


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_stops_a_run_at_once_and_says_how_to_resume_it(tmp_path: Path) -> None:
    (tmp_path / "slowtools.py").write_text(
        "import os, time\n\n\ndef wait(seconds: float) -> str:\n"
        '    """Wait a while."""\n'
        '    time.sleep(float(os.environ.get("WAIT_SECONDS", seconds)))  # time, not sync: a slow tool\n'
        '    return "waited"\n'
    )
    spec = tmp_path / "slow.toml"
    spec.write_text(
        'instructions = "Wait."\nrole = "waiter"\ntools = ["slowtools:wait"]\n[demo]\ntask = "wait"\n'
        '[demo.script]\nwaiter = [{ tool_calls = [{ name = "wait", arguments = { seconds = 600 } }] }, "done"]\n'
    )
    journal = tmp_path / "runs.jsonl"
    args = ["run", str(spec), "--offline", "--json", "--journal", str(journal), "--session-id", "w1"]
    run = subprocess.Popen(
        [sys.executable, "-m", "jeeves", *args],
        cwd=REPO,
        env=offline_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # A shell without job control starts background commands with SIGINT ignored, and
        # children inherit that: give the run the disposition a terminal gives it.
        preexec_fn=_default_sigint,
    )
    assert run.stdout is not None
    try:
        for line in run.stdout:  # wait until the sync tool is running in its thread
            if json.loads(line)["type"] == "tool.started":
                break
        run.send_signal(signal.SIGINT)
        # Not the tool's 600 s (the thread is abandoned); generous for a loaded machine.
        _, err = run.communicate(timeout=240)
    finally:  # never leave the process (and its pipes) to a later test
        if run.poll() is None:
            run.kill()
            run.communicate()
    resume = shlex.join(["run", str(spec), "--journal", str(journal), "--session-id", "w1", "--offline"])
    assert run.returncode == 130
    said, command, stopped = err.splitlines()
    assert said == f"The steps it completed are in {journal}; resume it without repeating them:"
    assert command.startswith("  ") and command.endswith(f" -m jeeves {resume}") and stopped == "interrupted"
    resumed = subprocess.run(  # as the user pastes it
        command + " --json",
        shell=True,
        cwd=REPO,
        env={**offline_env(), "WAIT_SECONDS": "0"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert resumed.returncode == 0, resumed.stderr
    events = [json.loads(line) for line in resumed.stdout.splitlines()]
    steps = [(e["type"], e["replayed"]) for e in events if e["type"] in ("model.completed", "tool.completed")]
    assert steps == [
        ("model.completed", True),  # served from the journal
        ("tool.completed", False),  # it never returned before the interrupt, so it runs again
        ("model.completed", False),  # the script's next reply, not its first again
    ]
    assert events[-1]["type"] == "session.completed" and events[-1]["output"] == "done"


def test_run_with_a_damaged_journal_is_one_error_line_and_exit_2(tmp_path: Path) -> None:
    journal = tmp_path / "runs.jsonl"
    journal.write_text('{"type": "step", "v": 1}\n{"type": "session"}\n')
    out = jeeves_cli("run", "architectures/self_refine.toml", "--offline", "--journal", str(journal))
    assert out.returncode == 2, out.stderr
    assert out.stderr.splitlines() == [
        f"error: {journal}:1: a malformed step record (session_id: Field required, and 3 more). The journal "
        f"is damaged here; restore it from a backup or record into a new file."
    ]
