"""A structured finding: one issue a critic raised, with what a tool can act on.

A verdict's `issues` are plain strings (what a model reads in a refine prompt); a critic that
knows more gives `findings` as well: the rule it checked, where, how bad, and the fix. Plain
strings keep working everywhere; a finding's `message` is its issue's text.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["Finding", "Severity"]

Severity = Literal["error", "warning", "info"]


class Finding(BaseModel):
    """One issue with its rule, location, severity and fix, when the critic knows them."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    message: str
    """The issue's text, as in `Verdict.issues`."""
    rule_id: str | None = None
    """The rule or check that raised it (`policy.refund_limit`, a test's name, a lint code)."""
    path: str | None = None
    """Where: a file and line (`src/app.py:12`), a JSON path, a plan step."""
    severity: Severity | None = None
    fix: str | None = None
    """What to change, when the critic can say."""
