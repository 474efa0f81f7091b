"""The statistics an eval report shows: a Wilson interval for a pass rate, and pass@k.

Both are textbook formulas, checked against published values in tests/evals/test_stats.py.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["mean", "pass_at_k", "percentile", "wilson_interval"]

_Z95 = 1.959963984540054


def wilson_interval(successes: int, n: int, z: float = _Z95) -> tuple[float, float]:
    """The Wilson score interval (95 % by default) for `successes` out of `n`; (0, 0) when n is 0.

    Unlike the normal approximation it stays inside [0, 1] and is honest at 0/n and n/n,
    which small evals hit all the time.
    """
    if n == 0:
        return (0.0, 0.0)
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return (max(0.0, centre - half), min(1.0, centre + half))


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k estimator of Chen et al. 2021: 1 - C(n-c, k) / C(n, k), for a task
    sampled `n` times of which `c` passed."""
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} samples per task, got {n}")
    if n - c < k:
        return 1.0
    return 1.0 - math.prod((n - c - i) / (n - i) for i in range(k))


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0-100) by linear interpolation between closest ranks."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)
