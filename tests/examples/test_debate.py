"""examples/debate.py, the guide's custom architecture: it runs offline, from Python and from its spec."""

from __future__ import annotations

import subprocess
import sys

import pytest

import jeeves
from jeeves import ScriptedModel, UserError
from jeeves.journal import MemoryJournal
from tests.conftest import REPO, offline_env
from tests.examples import load_example, run_example

pytestmark = pytest.mark.anyio
debate = load_example("debate.py")


def test_the_debate_runs_offline_and_the_judge_picks_the_winner() -> None:
    out = run_example("debate.py")
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.splitlines() == [
        "pro: One repo means one version of everything: no diamond dependencies.",
        "con: One repo means one huge build: every team waits on everyone's CI.",
        "judge: 0.70 (pro is stronger)",
        "winner: pro; answer: One repo means one version of everything: no diamond dependencies.",
        "sessions: debate__con_0, debate__judge_0, debate__pro_0",
    ]


async def test_the_judge_reviews_in_its_own_session_under_its_own_key() -> None:
    journal = MemoryJournal()
    result = await jeeves.run(
        debate.build(), "q?", router=debate.offline_router(), journal=journal, session_id="d"
    )
    assert isinstance(result.detail, debate.DebateOutput) and result.detail.winner == "pro"
    assert result.usage_by_path.keys() == {"debate.pro", "debate.con", "debate.judge"}
    replayed = await jeeves.replay(debate.build(), journal, "d")
    assert replayed.output == result.output


def test_describe_lists_the_debate_roles_and_models_keys_are_checked() -> None:
    assert jeeves.describe(debate.build()) == ["debate.pro", "debate.con", "debate.judge"]


async def test_a_misspelt_debate_route_is_refused() -> None:
    with pytest.raises(UserError, match=r"'jduge'.*did you mean 'judge'"):
        await jeeves.run(debate.build(), "q?", model=ScriptedModel([]), models={"jduge": "openai/gpt-4o"})


def test_jeeves_run_runs_the_debate_spec() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "jeeves", "run", "examples/debate.toml", "Monorepo?", "--offline"],
        cwd=REPO,
        env=offline_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "One repo means one version of everything" in done.stdout
    assert "stop reason: judged" in done.stdout
