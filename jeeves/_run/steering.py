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

A human's messages (`RunStream.inject`, `POST /runs/{id}/messages`) use the same turn
boundary but come from outside the run: they wait in the run's `Inbox` and the first agent
turn boundary they are meant for takes them, after the intervener, as a journaled
`function` step named `inject`. That step, not the inbox, is what a replay reads, so a
replay adds the same messages at the same turn without asking anyone.

The inbox is bounded, so a client cannot flood a run (or one turn of its model): a
message is at most `MAX_MESSAGE_BYTES` of UTF-8 (`MessageTooLarge`, HTTP 413), and at most
`MAX_PENDING` messages of `MAX_PENDING_BYTES` in all wait at once (`InboxFull`, HTTP 429:
retry once an agent has taken them, at its next turn boundary).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeAlias

from jeeves.errors import UserError
from jeeves.events import SteeringInjected, WatchdogVerdictEvent

__all__ = [
    "INJECT_STEP",
    "MAX_MESSAGE_BYTES",
    "MAX_PENDING",
    "MAX_PENDING_BYTES",
    "Inbox",
    "InboxFull",
    "Intervener",
    "Intervention",
    "MessageTooLarge",
    "ToolStep",
    "Turn",
    "span_event",
    "watchdog_evaluation",
]

MAX_MESSAGE_BYTES = 64 * 1024
"""The largest injected message, in bytes of UTF-8."""
MAX_PENDING = 16
"""How many injected messages may wait at once for an agent's turn boundary."""
MAX_PENDING_BYTES = 256 * 1024
"""How many bytes of injected messages may wait at once (so at most this reaches one turn)."""

INJECT_STEP = "inject"
"""The name of the journaled step that applies a human's messages at a turn boundary."""


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


class MessageTooLarge(UserError):
    """An injected message over `MAX_MESSAGE_BYTES` (HTTP 413)."""


class InboxFull(UserError):
    """The run's inbox holds `MAX_PENDING` messages or `MAX_PENDING_BYTES` already (HTTP 429)."""


@dataclass
class Inbox:
    """Messages a human sent into a live run, waiting for an agent's next turn boundary.

    A message names the agent session it is for, or None for whichever agent reaches a
    turn boundary first. Taking is synchronous, so two agents never take the same message.
    `put` refuses a message over the caps (`MessageTooLarge`, `InboxFull`).
    """

    max_pending: int = MAX_PENDING
    max_pending_bytes: int = MAX_PENDING_BYTES
    max_message_bytes: int = MAX_MESSAGE_BYTES
    _pending: list[tuple[str | None, str, int]] = field(default_factory=list)
    _bytes: int = 0

    def put(self, text: str, session_id: str | None = None) -> None:
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > self.max_message_bytes:
            raise MessageTooLarge(
                f"The message is {size} bytes, over the {self.max_message_bytes}-byte limit of one injected "
                f"message; send a shorter one (or several, as the agent takes them)."
            )
        if len(self._pending) >= self.max_pending or self._bytes + size > self.max_pending_bytes:
            raise InboxFull(
                f"The run's inbox is full ({len(self._pending)} messages, {self._bytes} bytes waiting; at most "
                f"{self.max_pending} messages and {self.max_pending_bytes} bytes wait at once); retry after "
                f"its agent takes them at its next turn boundary."
            )
        self._pending.append((session_id, text, size))
        self._bytes += size

    def take(self, session_id: str) -> tuple[str, ...]:
        """The messages for `session_id` (and those for anyone), in the order they were sent."""
        if not self._pending:
            return ()
        mine = [(text, size) for target, text, size in self._pending if target in (None, session_id)]
        if mine:
            self._pending = [p for p in self._pending if p[0] not in (None, session_id)]
            self._bytes -= sum(size for _, size in mine)
        return tuple(text for text, _ in mine)

    def drain(self) -> list[tuple[str, str | None]]:
        """Every waiting message as (text, session id), emptying the inbox."""
        out = [(text, target) for target, text, _ in self._pending]
        self._pending, self._bytes = [], 0
        return out

    def __len__(self) -> int:
        return len(self._pending)


SpanValue: TypeAlias = str | bool | int | float | tuple[str, ...]


def span_event(event: WatchdogVerdictEvent | SteeringInjected) -> tuple[str, dict[str, SpanValue]]:
    """The OpenTelemetry span event (name, attributes) for a verdict or an injected message.

    They go on the watched agent's `invoke_agent` span. `jeeves.watchdog.window` and
    `jeeves.steering.message` carry tool data and text: a tracer drops them unless content
    capture is on.
    """
    if isinstance(event, WatchdogVerdictEvent):
        return "jeeves.watchdog.verdict", {
            "jeeves.watchdog.verdict": event.verdict,
            "jeeves.watchdog.reason": event.reason,
            "jeeves.watchdog.source": event.source,
            "jeeves.watchdog.obtained": event.obtained,
            "jeeves.watchdog.firing": event.firing,
            "jeeves.watchdog.step": event.step,
            "jeeves.watchdog.window": tuple(event.window),
            "jeeves.watchdog.session.id": event.session_id,
        }
    return "jeeves.steering.injected", {
        "jeeves.steering.source": event.source,
        "jeeves.steering.cause": event.cause,
        "jeeves.steering.message": event.message,
    }


def watchdog_evaluation(event: WatchdogVerdictEvent, evaluated: str) -> tuple[str, dict[str, SpanValue]]:
    """A watchdog verdict as a `gen_ai.evaluation.result` (GenAI semantic conventions): the
    verdict is the label, its reason the explanation, on the watched session's span."""
    return "gen_ai.evaluation.result", {
        "gen_ai.evaluation.name": "watchdog",
        "gen_ai.evaluation.score.label": event.verdict.lower(),
        "gen_ai.evaluation.explanation": event.reason,
        "jeeves.evaluated.session.id": evaluated,
        "jeeves.evaluation.obtained": event.obtained,
    }
