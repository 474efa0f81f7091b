"""One bounded per-process cache: what is built once per key (a type's adapter, an output
type's schema) and kept, without growing without bound in a program that makes keys at run
time."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

__all__ = ["kept"]

K = TypeVar("K")
V = TypeVar("V")


def kept(cache: dict[K, V], key: K, build: Callable[[K], V], limit: int) -> V:
    """`cache[key]`, built by `build(key)` at its first use and kept; past `limit` entries the
    oldest is dropped. Thread-safe enough: two threads missing at once each build an equal
    value, and either is kept. Raises TypeError for an unhashable key."""
    value = cache.get(key)
    if value is None:
        value = build(key)
        if len(cache) >= limit:
            try:
                del cache[next(iter(cache))]
            except (StopIteration, KeyError, RuntimeError):
                pass  # another thread changed the cache meanwhile
        cache[key] = value
    return value
