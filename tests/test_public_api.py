"""Review conventions as tests: the front door stays small, sorted and importable."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
import typing
from collections.abc import Iterator

import pytest

import jeeves
from tests.conftest import REPO

FRONTS = {
    "jeeves": "api.md",
    "jeeves.stop": "api.md",
    "jeeves.approvals": "approvals.md",
    "jeeves.journal": "replay.md",
    "jeeves.telemetry": "telemetry.md",
    "jeeves.architectures": "concepts/architectures.md",
}
"""The public fronts: `jeeves` and its sub-fronts, each with the docs page that documents it."""


def test_all_is_sorted_unique_and_importable() -> None:
    assert list(jeeves.__all__) == sorted(set(jeeves.__all__))
    for name in jeeves.__all__:
        assert hasattr(jeeves, name), name


def test_all_lists_every_public_top_level_name() -> None:
    public = {
        name
        for name in dir(jeeves)
        if not name.startswith("_")
        and not isinstance(getattr(jeeves, name), type(jeeves))
        and name not in {"annotations", "importlib", "TYPE_CHECKING", "Any"}
    }
    assert public == set(jeeves.__all__)


def test_lazy_names_resolve_to_their_modules() -> None:
    from jeeves.architectures import ActorCritic
    from jeeves.critics import Verdict

    assert jeeves.ActorCritic is ActorCritic and jeeves.Verdict is Verdict
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = jeeves.Nope  # type: ignore[attr-defined]


def test_front_door_stays_small() -> None:
    assert len(jeeves.__all__) <= 70


def test_every_module_imports_and_declares_all() -> None:
    for info in pkgutil.walk_packages(jeeves.__path__, "jeeves."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        assert isinstance(getattr(module, "__all__", None), list), f"{info.name} has no __all__"


def test_exported_names_show_jeeves_as_their_module() -> None:
    from pydantic import BaseModel

    for name in jeeves.__all__:
        value = getattr(jeeves, name)
        if isinstance(value, type) and (issubclass(value, BaseModel) or dataclasses.is_dataclass(value)):
            continue  # their annotations resolve in their own module (pydantic, typing.get_type_hints)
        if isinstance(value, type) or inspect.isfunction(value):
            assert value.__module__ == "jeeves", name
    assert repr(jeeves.UserError) == "<class 'jeeves.UserError'>"


def test_pydantic_models_still_build_and_title_their_schema() -> None:
    result = jeeves.RunResult(session_id="s", output="hi", text="hi")
    assert jeeves.RunResult.model_validate(result.model_dump()) == result
    assert jeeves.Usage.model_json_schema()["title"] == "Usage"
    assert jeeves.RunOptions.__module__ == "jeeves._run.options"  # a dataclass: its hints resolve there


def test_everything_run_accepts_is_in_the_front_door() -> None:
    import jeeves.approvals
    import jeeves.stop

    for name in ("Approvals", "Decision", "PendingGate", "RunOptions", "Budget", "Router", "Route"):
        assert name in jeeves.__all__, name
    for name in ("MaxRounds", "ScoreAtLeast", "NoImprovement", "BudgetUSD", "WallClock", "StopWhen"):
        assert getattr(jeeves, name) is getattr(jeeves.stop, name)
    assert jeeves.Approvals is jeeves.approvals.Approvals and jeeves.Decision is jeeves.approvals.Decision


def test_the_sub_fronts_are_documented_where_the_docs_say() -> None:
    for module, page in FRONTS.items():
        text = (REPO / "docs" / page).read_text(encoding="utf-8")
        assert f"`{module}" in text or f"::: {module}" in text, f"docs/{page} does not name {module}"
    api = (REPO / "docs" / "api.md").read_text(encoding="utf-8")
    assert "::: jeeves.stop\n" in api  # the API page renders every stop condition...
    assert "`jeeves.stop` (every stop condition" in api  # ...and says it is their front


def test_every_stop_condition_is_in_jeeves_stop_documented_and_the_common_ones_in_the_front_door() -> None:
    import jeeves.stop

    conditions = {
        name
        for name, value in vars(jeeves.stop).items()
        if isinstance(value, type) and value.__module__ == "jeeves.stop" and not name.startswith("_")
    }
    assert conditions == set(jeeves.stop.__all__)
    assert len(conditions) == 15
    for name in jeeves.stop.__all__:
        value = getattr(jeeves.stop, name)
        assert value.__doc__ and value.__doc__.strip(), f"jeeves.stop.{name} has no docstring"
    for name in ("MaxRounds", "ScoreAtLeast", "NoImprovement", "BudgetUSD", "WallClock", "StopWhen"):
        assert name in jeeves.__all__ and getattr(jeeves, name) is getattr(jeeves.stop, name)


def _jeeves_types(hint: object) -> Iterator[type]:
    """The jeeves classes a type hint names (through unions, generics and Callable's arguments)."""
    if isinstance(hint, list):  # Callable[[A, B], R]'s argument list
        for item in hint:
            yield from _jeeves_types(item)
        return
    if typing.get_origin(hint) is typing.Literal:
        return
    if isinstance(hint, type) and hint.__module__.split(".")[0] == "jeeves":
        yield hint
    for arg in typing.get_args(hint):
        yield from _jeeves_types(arg)


def _front_of(kind: type) -> str | None:
    for module in FRONTS:
        front = importlib.import_module(module)
        if kind.__name__ in front.__all__ and getattr(front, kind.__name__) is kind:
            return module
    return None


def test_every_type_run_stream_and_resume_accept_is_importable_from_a_public_front() -> None:
    from jeeves._run.options import RunKeywords

    options = typing.get_type_hints(jeeves.RunOptions)
    assert set(typing.get_type_hints(RunKeywords)) == set(options)  # the keywords are its fields
    hints = list(options.values())
    for entry in (jeeves.run, jeeves.stream, jeeves.resume, jeeves.replay):
        hints += [h for name, h in typing.get_type_hints(entry).items() if name != "keywords"]
    named = {kind for hint in hints for kind in _jeeves_types(hint)}
    names = {kind.__name__ for kind in named}
    assert {"Router", "Route", "ModelClient", "Budget", "Journal", "Tracer", "Approvals", "Decision"} <= names
    assert {"PendingGate", "Architecture", "RunOptions", "RunResult", "RunStream"} <= names
    unreachable = sorted(f"{kind.__module__}.{kind.__name__}" for kind in named if _front_of(kind) is None)
    assert unreachable == [], f"not importable from {', '.join(FRONTS)}"
