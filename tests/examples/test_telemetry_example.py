from __future__ import annotations

import io
import json
from types import ModuleType

import pytest

from tests.conftest import REPO
from tests.examples import load_example as load_shared
from tests.examples import run_example

pytestmark = pytest.mark.anyio

EXAMPLE = REPO / "examples" / "telemetry.py"


def load_example() -> ModuleType:
    return load_shared("telemetry.py")


def test_example_runs_offline_as_a_script() -> None:
    done = run_example("telemetry.py")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "invoke_agent supervisor"
    assert "    invoke_agent research  (jeeves.worker=research)" in lines
    assert "      invoke_agent critic  (jeeves.round=1, jeeves.critic.score=0.9)" in lines
    assert "      execute_tool search  (gen_ai.tool.call.id=call_0_0)" in lines
    assert "slugify lower-cases the title" in done.stdout


async def test_example_spans_with_content_captured() -> None:
    example = load_example()
    spans = await example.main(capture_content=True, out=io.StringIO())
    names = sorted(s.name for s in spans)
    assert names == sorted(
        ["invoke_agent supervisor", "invoke_agent research", "invoke_agent coder"]
        + ["invoke_agent actor", "invoke_agent critic"] * 2
        + ["chat scripted"] * 8
        + ["execute_tool delegate"] * 2
        + ["execute_tool search"]
    )
    critics = [dict(s.attributes or {}) for s in spans if s.name == "invoke_agent critic"]
    critics.sort(key=lambda a: str(a["jeeves.session.id"]))
    assert [(a["jeeves.round"], a["jeeves.critic.score"]) for a in critics] == [(0, 0.3), (1, 0.9)]
    search = next(s for s in spans if s.name == "execute_tool search")
    assert dict(search.attributes or {})["gen_ai.tool.call.result"].startswith("unicodedata.normalize")
    coder_chat = next(
        s
        for s in spans
        if s.name == "chat scripted"
        and (s.attributes or {})["jeeves.session.id"] == "example__coder_0__actor_1"
    )
    output = json.loads(str((coder_chat.attributes or {})["gen_ai.output.messages"]))
    assert output[0]["parts"] == [{"type": "text", "content": example.SLUGIFY}]
