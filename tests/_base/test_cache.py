"""jeeves._base.cache: built once per key, kept, bounded."""

from __future__ import annotations

import pytest

from jeeves._base.cache import kept


def test_a_value_is_built_once_and_kept() -> None:
    built: list[str] = []

    def build(key: str) -> str:
        built.append(key)
        return key.upper()

    cache: dict[str, str] = {}
    assert kept(cache, "a", build, 4) == "A"
    assert kept(cache, "a", build, 4) == "A"
    assert built == ["a"]


def test_past_the_limit_the_oldest_is_dropped() -> None:
    cache: dict[int, int] = {}
    for key in range(5):
        kept(cache, key, lambda k: k * 10, 3)
    assert list(cache) == [2, 3, 4]


def test_an_unhashable_key_is_a_type_error_and_nothing_is_built() -> None:
    def build(key: object) -> object:
        raise AssertionError("built")

    with pytest.raises(TypeError):
        kept({}, [], build, 3)  # type: ignore[arg-type]
