"""Review conventions as tests: the front door stays small, sorted and importable."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil

import pytest

import jeeves


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
