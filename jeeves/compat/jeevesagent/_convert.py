"""What this layer's constructors take: a jeevesagent-style Agent, or any jeeves architecture."""

from __future__ import annotations

from typing import Any

from jeeves._run.context import Architecture
from jeeves.errors import UserError

__all__ = ["as_architecture"]


def as_architecture(value: Any, *, what: str) -> Architecture:
    """The jeeves architecture `value` runs as: a compat Agent's (`as_jeeves()`), or `value` itself."""
    if hasattr(value, "as_jeeves"):
        converted: Architecture = value.as_jeeves()
        return converted
    if isinstance(value, Architecture):
        return value
    raise UserError(
        f"{what} {value!r} is not an agent; pass jeeves.compat.jeevesagent.Agent(...) or a jeeves architecture."
    )
