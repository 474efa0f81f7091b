"""Interventions: the one seam for steering a running agent between two of its model turns.

After each turn (a reply and the tool calls it asked for, or a final reply) an `Agent` asks
its context for an `Intervention`. Whoever ran the agent may have attached an `Intervener`
(`ctx.run(agent, task, role=..., intervene=hook)`): a Goal's watchdog, a test, a wrapper of
your own. The hook sees the `Turn` and answers with messages to add to the agent's
conversation (as user messages, before its next model call) and, optionally, a stop reason
that ends the agent's run at once with its latest text.

A final reply is a turn too (`Turn.final`): an intervention with messages keeps the agent
going instead of letting it finish (a success check that failed hands its findings back).

Replay: a hook is called in a replay exactly as live, and whatever it runs (a watchdog's
model call, a success critic) goes through journaled steps and child sessions, so it is
served from the journal and decides the same. A hook must therefore decide only from the
turns it was shown and from what it ran through the context, never from a clock or other
outside state it did not journal.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeAlias

__all__ = ["Intervener", "Intervention", "ToolStep", "Turn"]


@dataclass(frozen=True)
class ToolStep:
    """One tool call of a turn and what it gave back."""

    name: str
    arguments: str
    """The arguments as the model wrote them (JSON text)."""
    result: str
    is_error: bool = False


@dataclass(frozen=True)
class Turn:
    """What an agent did in one turn, as an intervener sees it."""

    session_id: str
    """The agent's session."""
    turn: int
    """0 for the agent's first model call, then 1, 2, …"""
    text: str
    """The reply's text (may be empty when the model only called tools)."""
    steps: tuple[ToolStep, ...] = ()
    """The tool calls of this turn, in the order the model asked for them."""
    final: bool = False
    """True when the reply called no tool: without an intervention, the agent finishes with it."""


@dataclass(frozen=True)
class Intervention:
    """What an intervener asks of the agent before its next turn."""

    messages: tuple[str, ...] = ()
    """Added to the agent's conversation as user messages, in order."""
    stop: str | None = None
    """End the agent's run now; its Output has this stop reason and its latest text."""


Intervener: TypeAlias = Callable[[Turn], Awaitable[Intervention | None]]
"""An async function of a turn; None means nothing to add."""
