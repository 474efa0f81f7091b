from __future__ import annotations

import importlib.util
import io
import json
import subprocess
import sys
from types import ModuleType

import pytest

from tests.conftest import REPO, subprocess_env

pytestmark = pytest.mark.anyio

EXAMPLE = REPO / "examples" / "telemetry.py"


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("telemetry_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_example_runs_offline_as_a_script() -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)],
        cwd=REPO,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "invoke_agent supervisor"
    assert "    invoke_agent research  (jeeves.worker=research)" in lines
    assert "      execute_tool search  (gen_ai.tool.call.id=call_0_0)" in lines
    assert "slugify lower-cases the title" in done.stdout


async def test_example_spans_with_content_captured() -> None:
    example = load_example()
    spans = await example.main(capture_content=True, out=io.StringIO())
    assert sorted(s.name for s in spans) == [
        "chat scripted",
        "chat scripted",
        "chat scripted",
        "chat scripted",
        "chat scripted",
        "execute_tool delegate",
        "execute_tool delegate",
        "execute_tool search",
        "invoke_agent coder",
        "invoke_agent research",
        "invoke_agent supervisor",
    ]
    search = next(s for s in spans if s.name == "execute_tool search")
    assert dict(search.attributes or {})["gen_ai.tool.call.result"].startswith("unicodedata.normalize")
    coder_chat = next(
        s
        for s in spans
        if s.name == "chat scripted" and (s.attributes or {})["jeeves.session.id"] == "example__coder_0"
    )
    output = json.loads(str((coder_chat.attributes or {})["gen_ai.output.messages"]))
    assert output[0]["parts"] == [{"type": "text", "content": "def slugify(title): ..."}]
