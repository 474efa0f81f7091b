"""Review conventions as tests: the front door stays small, sorted and importable."""

from __future__ import annotations

import importlib
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
