"""Rebuilding a recorded run's architecture from the source stored with it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from jeeves import Agent
from jeeves._run.source import _LOADERS, load_architecture, register_loader, resolve_ref, source_of
from jeeves.errors import UserError
from tests.journal import archs

AGENT = archs.build_agent()


def test_a_reference_names_an_architecture_a_factory_or_a_class() -> None:
    assert resolve_ref("tests.journal.test_source:AGENT") is AGENT
    assert isinstance(resolve_ref("tests.journal.archs:build_agent"), Agent)
    assert isinstance(resolve_ref("tests.journal.archs:Fanout"), archs.Fanout)


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("tests.journal.archs", "is not an import path; write 'package.module:attribute'"),
        ("__main__:build", "points into __main__, which another process cannot import"),
        ("tests.journal.nowhere:build", "Cannot import 'tests.journal.nowhere'"),
        ("tests.journal.archs:missing", "has no attribute 'missing'"),
        ("tests.journal.archs:not_an_architecture", "is 42: not an architecture, nor a factory"),
        ("os:getcwd", "nor a factory function or class defined in 'os'"),
        ("tests.journal.archs:model", r"gave FunctionModel\(.*\), which is not an architecture"),
    ],
)
def test_bad_references_say_what_to_fix(ref: str, message: str) -> None:
    with pytest.raises(UserError, match=message):
        resolve_ref(ref)


@pytest.mark.parametrize(
    ("code", "said"),
    [
        ("def broken(:\n", "line 1: SyntaxError: invalid syntax."),
        ("\n\nx = undefined_name\n", "line 3: NameError: name 'undefined_name' is not defined."),
        ('raise RuntimeError("the registry\\nis down")\n', "line 1: RuntimeError: the registry is down."),
    ],
)
def test_a_module_that_fails_as_it_is_imported_is_one_line_naming_the_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: str, said: str
) -> None:
    (tmp_path / "failing_mod.py").write_text(code)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(UserError) as info:
        resolve_ref("failing_mod:build")
    message = str(info.value)
    assert message.startswith(
        f"Importing 'failing_mod' (for 'failing_mod:build') failed at {tmp_path / 'failing_mod.py'}, "
    )
    assert said in message and "\n" not in message
    assert message.endswith("Fix the module (python -c 'import failing_mod' shows the whole traceback).")


def test_sources_are_checked_when_a_run_is_recorded() -> None:
    assert source_of(None) is None
    assert source_of("tests.journal.archs:build_agent") == {
        "kind": "import",
        "ref": "tests.journal.archs:build_agent",
    }
    with pytest.raises(UserError, match="has no attribute 'typo'"):
        source_of("tests.journal.archs:typo")
    with pytest.raises(UserError, match=r"not a source jeeves can rebuild.*\['import'"):
        source_of({"kind": "yaml", "text": "..."})


@pytest.fixture
def spec_loader() -> Iterator[list[Mapping[str, Any]]]:
    seen: list[Mapping[str, Any]] = []

    def load(source: Mapping[str, Any]) -> Agent:
        seen.append(source)
        return Agent(str(source["instructions"]))

    previous = _LOADERS.get("spec")  # jeeves.spec registers the real one when it is imported
    register_loader("spec", load)
    try:
        yield seen
    finally:
        if previous is None:
            _LOADERS.pop("spec")
        else:
            register_loader("spec", previous)


def test_other_kinds_of_source_come_from_registered_loaders(spec_loader: list[Mapping[str, Any]]) -> None:
    source = source_of({"kind": "spec", "instructions": "Be brief."})
    assert source == {"kind": "spec", "instructions": "Be brief."}
    agent = load_architecture(source, session_id="r1")
    assert isinstance(agent, Agent) and agent.instructions == "Be brief."
    assert spec_loader == [source]


def test_a_run_without_a_source_asks_for_the_architecture(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(_LOADERS, "served", raising=False)  # as in a process that never imported the server
    with pytest.raises(UserError, match=r"does not say how to rebuild the architecture of run 'r1'; pass it"):
        load_architecture(None, session_id="r1")
    with pytest.raises(
        UserError, match=r"recorded from a 'notebook' source, which this process cannot rebuild"
    ):
        load_architecture({"kind": "notebook"}, session_id="r1")
    with pytest.raises(UserError) as served:  # a `jeeves serve` run replayed where no server is
        load_architecture({"kind": "served", "name": "codegen"}, session_id="r1")
    assert str(served.value) == (
        "Run 'r1' was started by `jeeves serve` (its entry 'codegen'), whose catalog this process does not "
        "hold; pass the architecture (jeeves.replay(arch, ...), or `jeeves replay JOURNAL ID --spec "
        "SPEC.toml|module:attr`), or browse it in `jeeves serve SPEC.toml --journal JOURNAL`."
    )
