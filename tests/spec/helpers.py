"""Module-level objects the spec tests name by import path (`tests.spec.helpers:...`)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from jeeves import tool


@tool
def word_count(text: str) -> int:
    """Count the words in a text."""
    return len(text.split())


def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()


class Summary(BaseModel):
    title: str
    points: list[str]


def no_todo(task: str, output: str) -> bool:
    """Fails any answer that still says TODO."""
    return "TODO" not in output


NOT_A_FUNCTION = 42


def small_plans(plan: Any, spec: Any) -> None:
    """A verify check (for PlanExecute specs): passes every plan."""
    return None


def past_ten_tool_calls(state: object) -> bool:
    """A stop function: true once ten tool calls were made."""
    return getattr(state, "tool_calls", 0) >= 10


def box_is_fixed(task: str, output: str) -> bool:
    """A success check for goal specs."""
    return "fixed" in output
