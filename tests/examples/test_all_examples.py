"""Every script in examples/ runs offline by default (no API key, no network) and with `--live`.

Per-example tests check what each prints offline; this one makes sure none is left out,
and runs each one's `--live` path for real: through litellm's HTTP code to a local
OpenAI-compatible server (`tests.models.mock_openai`) whose replies `tests.examples.responder`
decides from each request, with a dummy key and no real one in the environment.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, subprocess_env
from tests.examples import load_example, run_example
from tests.examples.responder import is_jeevesagent_critique, respond
from tests.models.mock_openai import Behaviour, MockOpenAI, Text, serve

PLAN_A, PLAN_B = (load_example("plan_gate.py").plan(pinned=p) for p in (False, True))
EXAMPLES = sorted((REPO / "examples").glob("*.py"))
ONE_SHOT = {"stream_to_browser.py": ["--once"]}
"""Examples that serve until interrupted by default, and the flag that makes them run once."""

MODEL, CRITIC = "gpt-4.1-mini", "gpt-4o"
"""Where a live example's roles are sent: neither is an example's default, so a route that
ignores its flag or variable reaches the mock under another name and fails the test."""
BY_ENV = {"JEEVES_MODEL": f"openai/{MODEL}", "JEEVES_CRITIC_MODEL": f"openai/{CRITIC}"}


@dataclass(frozen=True)
class Live:
    """How an example's `--live` run reaches the mock, and what it must show."""

    shows: tuple[str, ...]
    """Text its output must contain."""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    script: tuple[Behaviour, ...] = ()
    """Replies to the first requests, before the responder takes over."""
    critics: bool = True
    """Whether the example has an LLM critic (routed to CRITIC)."""


LIVE = {
    "codegen_actor_critic.py": Live(
        args=("--actor-model", f"openai/{MODEL}", "--critic-model", f"openai/{CRITIC}"),
        shows=(
            f"  slugify__actor_0 (agent, model openai/{MODEL})",
            f"  slugify__critic_0 (combined_critic, model openai/{CRITIC})",
            "  critique: score 0.90, approved (tests,llm, schema)",
            "stop reason: approved; best round: 0",
        ),
    ),
    "debate.py": Live(
        env=BY_ENV,
        shows=("pro: A short, plain answer.", "winner: pro; answer: A short, plain answer."),
    ),
    "eval_offline.py": Live(
        env={"JEEVES_MODEL": f"openai/{MODEL}"},
        critics=False,
        shows=("single     2/2", "best_of_3  2/2", "identical report: True"),
    ),
    "many_followers.py": Live(
        env=BY_ENV,
        args=("--followers", "5"),
        shows=("5 followers read them all; identical streams: True", "one per event: True", "exact: True"),
        critics=False,
    ),
    "durable_workers.py": Live(
        env=BY_ENV,
        shows=("slug-1: completed, approved", "replayed slug-1 offline: approved, same output: True"),
    ),
    "spread_fan_out.py": Live(
        env=BY_ENV,
        shows=("ship-1: completed", "branch ship-1__coder_0: SUCCESS", "same output: True"),
        critics=False,
    ),
    "from_jeevesagent.py": Live(
        env=BY_ENV,
        shows=(
            f"  example__actor_0 (actor, model openai/{MODEL})",
            f"  example__critic_0 (critic, model openai/{CRITIC})",
            "  critique: score 0.90, approved",
            "stop reason: approved",
            "def slugify(text: str) -> str:",
        ),
    ),
    "human_message.py": Live(
        env={"JEEVES_MODEL": f"openai/{MODEL}"},
        critics=False,
        shows=(
            "2. steering.injected (human) → ops",
            "3. the agent's next model request ends with: ['tool', 'user']",
            "   the agent answered: From look_around: web: running, 503 on /health",
            "   identical events: True, same answer: True, model requests: 0",
        ),
    ),
    "mcp_tools.py": Live(
        env={"JEEVES_MODEL": f"openai/{MODEL}"},
        critics=False,
        shows=("1. run, the notes server started over stdio:", "   completed: ", "   same text: True"),
    ),
    "nested_supervisor.py": Live(
        env=BY_ENV,
        shows=(
            f"▶ example [supervisor, openai/{MODEL}]",
            f"      ▶ example__engineering_0__coder_0__critic_0 [llm_critic, openai/{CRITIC}]",
            "  ■ example__engineering_0 forwarded",
            "■ example completed",
            "def slugify(text: str) -> str:",
        ),
    ),
    "ops_goal.py": Live(
        env=BY_ENV,
        shows=(
            '  restart_service({"name": "python"})',
            "success check 0: score 0.90, passed",
            "stop reason: verified; tool calls: 1; healthy: True",
        ),
    ),
    "plan_gate.py": Live(
        env=BY_ENV,
        script=(Text(PLAN_A), Text(PLAN_B)),  # the planner's two plans; the reviewer is the responder's
        shows=(
            "plan refund-881-a (attempt 0): refused: missing_evidence on step 1 ('refund'); tool calls so far: 0",
            "report: completed: verify and score passed",
            "stop reason: completed; tool calls: 2",
        ),
    ),
    "refund_with_approval.py": Live(
        env={"JEEVES_MODEL": f"openai/{MODEL}"},
        critics=False,
        shows=(
            "1. status: awaiting_approval",
            "   pending: t-881#1 issue_refund(",
            "2. approved by alice: t-881#1  issue_refund(",
            "3. jeeves",  # the resume's tree, then its outcome, as `jeeves resume` prints them
            "stop reason: completed ·",
        ),
    ),
    "replay_and_resume.py": Live(
        env=BY_ENV,
        script=(Text("def add(a, b):\n    return a - b\n"),),  # the first draft fails the test
        shows=(
            "1. recorded 2 model calls, then stopped the run",
            "2. resumed: 2 calls served from the journal, 2 made live",
            "   approved after 2 rounds:",
            "identical per session: True, model calls: 0",
            "4. a changed prompt diverges at session 'example__actor_0', step 0:",
            "runs: example completed, 2 rounds",
        ),
    ),
    "specs.py": Live(
        args=("--model", f"actor=openai/{MODEL}"),  # the spec's Anthropic coder; its reviewer is on CRITIC
        shows=(
            f"'actor': 'openai/{MODEL}'",
            f"'critic': 'openai/{CRITIC}'",
            "   round 0: score 0.90, approved\n   stop reason: approved",
            "(loads back equal: True)",
        ),
    ),
    "stream_to_browser.py": Live(
        env=BY_ENV,
        shows=(
            "    round 0: score 0.90 (approved)",
            "def fizzbuzz(n: int) -> list[str]:",
            "'status': 'completed'",
            "'RUN_FINISHED': 1",
        ),
    ),
    "step_budgets.py": Live(
        env={"JEEVES_MODEL": f"openai/{MODEL}"},
        critics=False,
        script=(
            Text(load_example("step_budgets.py").WIDE),
        ),  # the planner's plan; the workers are the responder's
        shows=(
            "plan wide (attempt 0)",
            "  step_1: slice of 150 tokens, 4 model calls",
            "step summary: done",
            "stop reason: completed",
        ),
    ),
    "telemetry.py": Live(
        env=BY_ENV,
        shows=(
            f"  chat openai/{MODEL}  (tokens=20+9)",
            "      execute_tool search",
            f"        chat openai/{CRITIC}",
            "From search: No notes on 'python'.",
        ),
    ),
}
"""Each example's live run; one missing here fails its test."""


def run(example: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_example(example.name, *args, env=env)


def run_args(example: Path, tmp_path: Path) -> list[str]:
    """Its one-shot flag, and a journal in `tmp_path` if it takes one."""
    args = ONE_SHOT.get(example.name, [])
    if "--journal" in run(example, "--help").stdout:
        args = [*args, "--journal", str(tmp_path / "journal.jsonl")]
    return args


def live_env(base_url: str, routes: Mapping[str, str]) -> dict[str, str]:
    """No real key, base URL or model choice from the caller's environment: the mock's, and `routes`."""
    inherited = ("OPENAI_API_BASE", "OPENAI_BASE_URL", *BY_ENV)
    env = {k: v for k, v in subprocess_env().items() if not k.endswith("_API_KEY") and k not in inherited}
    return {**env, "OPENAI_API_KEY": "sk-test", "OPENAI_API_BASE": base_url, **routes}


def _schema(body: dict[str, Any]) -> str | None:
    """The name of the output schema a request asks for, if any (a jeevesagent critique,
    read as text, counts as the Verdict it becomes)."""
    if is_jeevesagent_critique(body):
        return "Verdict"
    return (
        body.get("response_format", {}).get("json_schema", {}).get("name")
        if "response_format" in body
        else None
    )


@pytest.fixture
def mock() -> Iterator[MockOpenAI]:
    with serve(respond) as server:
        yield server


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_example_runs_offline(example: Path, tmp_path: Path) -> None:
    done = run(example, *run_args(example, tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip()
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_example_runs_live_through_litellm(example: Path, tmp_path: Path, mock: MockOpenAI) -> None:
    assert example.name in LIVE, f"say in LIVE how {example.name} runs with --live against the mock"
    live = LIVE[example.name]
    mock.script(*live.script)
    args = [*live.args, *run_args(example, tmp_path)]
    done = run(example, "--live", *args, env=live_env(mock.base_url, live.env))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr == ""
    assert not mock.unexpected, mock.unexpected
    assert mock.remaining() == 0, "scripted replies were left unused"

    # LLM critics ask for the Verdict schema; every other session (a planner asking for a Plan
    # included) is on the main model.
    critics = {body["model"] for body in mock.requests if _schema(body) == "Verdict"}
    others = {body["model"] for body in mock.requests if _schema(body) != "Verdict"}
    assert (others, critics) == ({MODEL}, {CRITIC} if live.critics else set())
    assert {h["authorization"] for h in mock.headers} == {"Bearer sk-test"}
    if "--journal" in args:
        assert (tmp_path / "journal.jsonl").stat().st_size > 0
    for text in live.shows:
        assert text in done.stdout, f"{text!r} not in:\n{done.stdout}"


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_example_live_without_a_key_says_which_one_in_one_line(example: Path) -> None:
    done = run_example(example.name, "--live", *ONE_SHOT.get(example.name, []))  # no key in the env
    assert done.returncode == 1
    assert "Traceback" not in done.stdout + done.stderr
    assert re.search(r"needs (OPENAI|ANTHROPIC)_API_KEY set in the environment", done.stdout + done.stderr)
