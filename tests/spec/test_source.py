"""A run started from a spec records the spec, so `jeeves.replay` rebuilds it without the file."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import jeeves
from jeeves._run.source import load_architecture
from jeeves.errors import UserError
from jeeves.spec import build, load_spec, load_spec_source, spec_source
from tests.conftest import REPO

pytestmark = pytest.mark.anyio


def test_the_source_holds_the_architecture_with_tests_inline_and_no_routes() -> None:
    spec = load_spec(REPO / "architectures" / "codegen.toml")
    source = spec_source(spec)
    assert source["kind"] == "spec"
    assert source["path"] == str((REPO / "architectures" / "codegen.toml").resolve())
    table = source["spec"]
    assert "models" not in table and "demo" not in table
    code = table["critic"][0]
    assert "tests" not in code and "def test_combined_units" in code["tests_source"]


async def test_a_recorded_spec_run_replays_after_the_file_is_gone(tmp_path: Path) -> None:
    for name in ("codegen.toml", "codegen_tests.py"):
        shutil.copy(REPO / "architectures" / name, tmp_path / name)
    spec = load_spec(tmp_path / "codegen.toml")
    arch, router = build(spec, offline=True)
    journal = tmp_path / "runs.jsonl"
    assert spec.demo is not None
    async with jeeves.stream(
        arch,
        spec.demo.task,
        router=router,
        session_id="cg",
        journal=journal,
        architecture_ref=spec_source(spec),
    ) as events:
        recorded = [e async for e in events]
        original = await events.result()
    for name in ("codegen.toml", "codegen_tests.py"):
        (tmp_path / name).unlink()
    replayed = await jeeves.replay(None, journal, "cg")  # strict: every step served, same final output
    assert (
        (replayed.text, replayed.stop_reason)
        == (original.text, original.stop_reason)
        == (recorded[-1].output, "approved")
    )


def test_a_source_without_a_table_is_a_user_error() -> None:
    with pytest.raises(UserError, match="holds no spec table"):
        load_spec_source({"kind": "spec", "path": None})
    arch = load_architecture(
        spec_source(load_spec(REPO / "architectures" / "self_refine.toml")), session_id="x"
    )
    assert arch.name == "self_refine"


KEY = "sk-spec-5e6f7a8b9c-never-journaled"

KEYED_SPEC = f"""
type = "self_refine"
max_rounds = 1

[agent]
role = "explainer"
instructions = "You explain."
params = {{ temperature = 0.3, api_key = "{KEY}", extra_headers = {{ Authorization = "Bearer {KEY}" }} }}
model = {{ model = "openai/gpt-4o-mini", params = {{ api_key = "{KEY}" }} }}

[demo]
task = "Explain generators."

[demo.script]
draft = ["A generator yields values one at a time."]
feedback = ['{{"score": 0.95, "issues": [], "summary": "Clear."}}']
"""


async def test_a_spec_s_credentials_reach_neither_its_source_nor_its_journal(tmp_path: Path) -> None:
    (tmp_path / "keyed.toml").write_text(KEYED_SPEC)
    spec = load_spec(tmp_path / "keyed.toml")
    source = spec_source(spec)
    assert source["spec"]["agent"]["params"] == {"temperature": 0.3, "extra_headers": {}}
    assert source["spec"]["agent"]["model"]["params"] == {}

    arch, router = build(spec, offline=True)
    journal = tmp_path / "runs.jsonl"
    assert spec.demo is not None
    original = await jeeves.run(
        arch, spec.demo.task, router=router, session_id="k", journal=journal, architecture_ref=source
    )
    assert KEY not in journal.read_text()
    replayed = await jeeves.replay(None, journal, "k")  # rebuilt from the source, without the key
    assert replayed.text == original.text
