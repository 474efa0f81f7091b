"""jeevesagent's events (`kind` + `payload`), translated from a jeeves run's typed events.

`Agent.stream()` of this layer yields these, so code that matches
`e.kind == "architecture_event" and e.payload["name"] == "actor_critic.critique"` keeps
working. Each is derived from jeeves events by the mapping below (`EVENT_NAMES`, also the
table in docs/coming-from-jeevesagent.md). Rounds are jeevesagent's: its critic counts
reviews from 1, so jeeves' `critique` of round `r` is jeevesagent's round `r + 1`.
Session ids are jeeves' (`{parent}__critic_0` reviews `{parent}__actor_0`).

Model text comes as one `model_chunk` per reply (jeevesagent streams several per reply);
jeeves' own `model.delta` events are not translated.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from jeeves.events import Event as JeevesEvent

__all__ = ["EVENT_NAMES", "Event", "Translator"]

EVENT_NAMES: dict[str, str] = {
    "started": "session.started of the root session",
    "completed": "the end of the run (its RunResult in the payload)",
    "model_chunk": "model.completed (one chunk per reply, with its text)",
    "tool_call": "tool.started",
    "tool_result": "tool.completed",
    "actor_critic.actor_started": "session.started of an ActorCritic's `actor` child (round = its index)",
    "actor_critic.actor_completed": "session.completed of an ActorCritic's `actor` child",
    "actor_critic.critic_started": "session.started of an ActorCritic's `critic` child (round = index + 1)",
    "actor_critic.critique": "critique in an ActorCritic session (round + 1)",
    "actor_critic.approved": "session.completed of an ActorCritic with stop_reason approved",
    "actor_critic.max_rounds_reached": "session.completed of an ActorCritic with stop_reason max_rounds",
    "self_refine.round_started": "round.started (generator at round 0, critic after) and refinement (refiner)",
    "self_refine.critique": "critique in a SelfRefine session (the critique text is its summary)",
    "self_refine.converged": "critique in a SelfRefine session that passed (the stop phrase was found)",
    "self_refine.refined": "model.completed of the refiner call, after a refinement event",
    "self_refine.max_rounds_reached": "session.completed of a SelfRefine with stop_reason max_rounds",
    "supervisor.workers_ready": "session.started of a Supervisor (its workers in the payload)",
    "supervisor.forwarded": "session.completed of a Supervisor with stop_reason forwarded",
    "supervisor.completed": "session.completed of a Supervisor",
}
"""jeevesagent's event kinds and architecture-event names → the jeeves events they come from."""


class Event(BaseModel):
    """A jeevesagent event: `kind`, the session it belongs to, and a free-form payload."""

    kind: str
    session_id: str
    payload: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def architecture(cls, session_id: str, name: str, **payload: Any) -> Event:
        return cls(kind="architecture_event", session_id=session_id, payload={"name": name, **payload})


@dataclass
class _Session:
    architecture: str
    role: str
    index: int
    parent: str | None
    last: tuple[int, float] | None = None
    """The latest critique: (jeevesagent round, score)."""
    refining: int | None = None
    quiet: bool = False
    """A SelfRefine past its draft: its critique and rewrite calls do not stream (as in jeevesagent)."""
    forwards: dict[str, str] = field(default_factory=dict)
    forwarded: str | None = None
    workers: list[str] = field(default_factory=list)


_REVIEWING = ("max_rounds", "no_improvement")


class Translator:
    """Feeds on a jeeves run's events, returns the jeevesagent events each one stands for.

    `workers_of(role_path)` names the workers of the Supervisor at that role path.
    """

    def __init__(self, workers_of: Callable[[tuple[str, ...]], list[str]]) -> None:
        self.workers_of = workers_of
        self.sessions: dict[str, _Session] = {}
        self.root: str | None = None

    def feed(self, event: JeevesEvent) -> list[Event]:
        handler = _HANDLERS.get(event.type)
        return handler(self, event) if handler is not None else []

    def _parent(self, sid: str) -> _Session | None:
        seen = self.sessions.get(sid)
        return self.sessions.get(seen.parent) if seen is not None and seen.parent else None

    def _started(self, e: Any) -> list[Event]:
        seen = _Session(e.architecture, e.role, e.index, e.parent_id)
        self.sessions[e.session_id] = seen
        out: list[Event] = []
        if e.parent_id is None:
            self.root = e.session_id
            out.append(Event(kind="started", session_id=e.session_id, payload={"prompt": e.task}))
        parent = self._parent(e.session_id)
        if parent is not None and parent.architecture == "actor-critic" and e.parent_id is not None:
            if e.role == "actor":
                phase = "generate" if e.index == 0 else "refine"
                out.append(
                    Event.architecture(e.parent_id, "actor_critic.actor_started", round=e.index, phase=phase)
                )
            elif e.role == "critic":
                out.append(Event.architecture(e.parent_id, "actor_critic.critic_started", round=e.index + 1))
        if e.architecture == "supervisor":
            seen.workers = self.workers_of(tuple(e.role_path))
            out.append(Event.architecture(e.session_id, "supervisor.workers_ready", workers=seen.workers))
        return out

    def _completed(self, e: Any) -> list[Event]:
        seen = self.sessions.get(e.session_id)
        if seen is None:
            return []
        out: list[Event] = []
        parent = self._parent(e.session_id)
        if (
            parent is not None
            and parent.architecture == "actor-critic"
            and seen.role == "actor"
            and seen.parent
        ):
            phase = "generate" if seen.index == 0 else "refine"
            out.append(
                Event.architecture(seen.parent, "actor_critic.actor_completed", round=seen.index, phase=phase)
            )
        return out + _ending(e.session_id, seen, e.stop_reason)

    def _critique(self, e: Any) -> list[Event]:
        seen = self.sessions.get(e.session_id)
        if seen is None:
            return []
        if seen.architecture == "self-refine":
            out = [
                Event.architecture(e.session_id, "self_refine.critique", round=e.round, critique=e.summary)
            ]
            if e.passed:
                out.append(Event.architecture(e.session_id, "self_refine.converged", round=e.round))
            seen.last = (e.round, e.score)
            return out
        seen.last = (e.round + 1, e.score)
        return [
            Event.architecture(
                e.session_id,
                "actor_critic.critique",
                round=e.round + 1,
                score=e.score,
                issues=list(e.issues),
                summary=e.summary,
            )
        ]

    def _round(self, e: Any) -> list[Event]:
        seen = self.sessions.get(e.session_id)
        if seen is None or seen.architecture != "self-refine":
            return []
        role = "generator" if e.round == 0 else "critic"
        seen.quiet = e.round > 0
        return [Event.architecture(e.session_id, "self_refine.round_started", round=e.round, role=role)]

    def _refinement(self, e: Any) -> list[Event]:
        seen = self.sessions.get(e.session_id)
        if seen is None or seen.architecture != "self-refine":
            return []
        seen.refining = e.round
        return [Event.architecture(e.session_id, "self_refine.round_started", round=e.round, role="refiner")]

    def _model(self, e: Any) -> list[Event]:
        out: list[Event] = []
        seen = self.sessions.get(e.session_id)
        if e.text and not (seen is not None and seen.quiet):
            chunk = {"kind": "text", "text": e.text}
            out.append(Event(kind="model_chunk", session_id=e.session_id, payload={"chunk": chunk}))
        if seen is not None and seen.refining is not None:
            out.append(
                Event.architecture(e.session_id, "self_refine.refined", round=seen.refining, output=e.text)
            )
            seen.refining = None
        return out

    def _tool_started(self, e: Any) -> list[Event]:
        seen = self.sessions.get(e.session_id)
        if seen is not None and seen.architecture == "supervisor" and e.name == "forward":
            seen.forwards[e.tool_call_id] = _worker_argument(e.arguments)
        call = {"id": e.tool_call_id, "tool": e.name, "args": e.arguments}
        return [Event(kind="tool_call", session_id=e.session_id, payload={"call": call})]

    def _tool_completed(self, e: Any) -> list[Event]:
        seen = self.sessions.get(e.session_id)
        if seen is not None and e.tool_call_id in seen.forwards and not e.is_error:
            seen.forwarded = seen.forwards[e.tool_call_id]
        payload = {"call_id": e.tool_call_id, "tool": e.name, "output": e.result, "is_error": e.is_error}
        return [Event(kind="tool_result", session_id=e.session_id, payload=payload)]


def _ending(sid: str, seen: _Session, stop_reason: str) -> list[Event]:
    """The architecture events that close session `sid` (by its architecture and stop reason)."""
    if seen.architecture == "actor-critic" and seen.last is not None:
        round_, score = seen.last
        if stop_reason == "approved":
            return [Event.architecture(sid, "actor_critic.approved", round=round_, score=score)]
        if stop_reason in _REVIEWING:
            return [
                Event.architecture(sid, "actor_critic.max_rounds_reached", rounds=round_, final_score=score)
            ]
    if seen.architecture == "self-refine" and stop_reason == "max_rounds" and seen.last is not None:
        return [Event.architecture(sid, "self_refine.max_rounds_reached", rounds=seen.last[0])]
    if seen.architecture == "supervisor":
        out = []
        if seen.forwarded is not None:
            out.append(Event.architecture(sid, "supervisor.forwarded", worker=seen.forwarded))
        return [*out, Event.architecture(sid, "supervisor.completed", workers=seen.workers)]
    return []


def _worker_argument(arguments: str) -> str:
    try:
        value = json.loads(arguments or "{}")
    except ValueError:
        return ""
    return str(value.get("worker", "")) if isinstance(value, dict) else ""


_HANDLERS: dict[str, Callable[[Translator, Any], list[Event]]] = {
    "session.started": Translator._started,
    "session.completed": Translator._completed,
    "critique": Translator._critique,
    "round.started": Translator._round,
    "refinement": Translator._refinement,
    "model.completed": Translator._model,
    "tool.started": Translator._tool_started,
    "tool.completed": Translator._tool_completed,
}
