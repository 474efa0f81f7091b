from __future__ import annotations

import io

import pytest

from jeeves.architectures import ActorCriticOutput, SupervisorOutput
from tests.conftest import REPO
from tests.examples import load_example, run_example

pytestmark = pytest.mark.anyio

EXAMPLE = REPO / "examples" / "nested_supervisor.py"


def test_example_runs_offline_as_a_script() -> None:
    done = run_example("nested_supervisor.py")
    assert done.returncode == 0, done.stderr
    assert "▶ example__engineering_0__coder_0__critic_1 [llm_critic, scripted]" in done.stdout
    assert "✎ round 0: score 0.3 Wrong for accented titles." in done.stdout
    assert "■ example__engineering_0 forwarded" in done.stdout
    assert "total: 9 calls" in done.stdout


async def test_example_result_and_its_code() -> None:
    example = load_example("nested_supervisor.py")
    out = io.StringIO()
    result = await example.main(out=out)
    assert result.stop_reason == "completed" and "creme-brulee" in result.text
    detail = result.detail
    assert isinstance(detail, SupervisorOutput)
    assert [d.session_id for d in detail.delegations] == ["example__research_0", "example__engineering_0"]
    engineering = detail.delegations[1].output
    assert isinstance(engineering, SupervisorOutput) and engineering.stop_reason == "forwarded"
    coder = engineering.delegations[0].output
    assert isinstance(coder, ActorCriticOutput) and coder.stop_reason == "approved"
    assert [r.score for r in coder.rounds] == [0.3, 1.0]
    assert engineering.text == coder.text  # forwarded verbatim
    namespace: dict[str, object] = {}
    exec(engineering.text, namespace)  # the forwarded code is the coder's, verbatim, and it works
    slugify = namespace["slugify"]
    assert callable(slugify) and slugify("Crème Brûlée, à la carte!") == "creme-brulee-a-la-carte"
