"""Run one scenario on jeevesagent itself and through jeeves.compat.jeevesagent, and compare.

A scenario is a function of a module `ja` (either `jeevesagent` or
`jeeves.compat.jeevesagent`) that builds an Agent and returns it with its prompt: the same
user code on both sides, only the module differs (the differential tests' "import").
Where a scenario needs a fake the two frameworks do not share (a model that records what
it is sent, a pre-baked base architecture), `Side` provides each framework's own.

Each side runs the scenario twice (fresh objects): once with `stream()` and once with
`run()`; the two must agree with each other. The observation compared across sides:
output, interruption, session id, turns, the events (architecture events with their
payloads; other kinds by kind and session; model text by the sessions that produced it),
and whatever the scenario recorded (prompts seen by the models).

A scenario declares the fields it expects to differ, each with the id of a row of the
differences table in docs/coming-from-jeevesagent.md; every other field must be equal.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import jeevesagent

import jeeves.compat.jeevesagent as compat
from jeeves.messages import ModelRequest, ModelResponse

DOC = Path(__file__).resolve().parents[2] / "docs" / "coming-from-jeevesagent.md"
SESSION = "job"
_ULID = re.compile(r"(__delegate_[a-z0-9_]+?)_del_[0-9A-Z]{26}")


@dataclass
class Side:
    """One framework: its module and its own fakes."""

    name: str
    ja: ModuleType
    seen: list[dict[str, Any]] = field(default_factory=list)
    """What recording models were sent, in order: system prompt, last user message, tools."""

    def recording(self, replies: list[Any]) -> Any:
        """A model answering `replies` (texts or ScriptedTurns) in order, recording every request into `seen`."""
        turns = [self.ja.ScriptedTurn(text=r) if isinstance(r, str) else r for r in replies]
        return (_JeevesagentRecorder if self.ja is jeevesagent else _CompatRecorder)(turns, self.seen)

    def prebaked(self, text: str) -> Any:
        """A base architecture whose round 0 sets `text` without calling a model."""
        return _JeevesagentPrebaked(text) if self.ja is jeevesagent else _CompatPrebaked(text)

    def blocking_budget(self) -> Any:
        """A jeevesagent-style budget whose every `allows_step()` is blocked ("test_block")."""
        return _AlwaysBlock(self.ja is jeevesagent)


class _JeevesagentRecorder(jeevesagent.ScriptedModel):
    def __init__(self, turns: list[Any], seen: list[dict[str, Any]]) -> None:
        super().__init__(turns)
        self.seen = seen

    def _record(self, messages: Any, tools: Any) -> None:
        by_role = [(str(getattr(m.role, "value", m.role)), m.content) for m in messages]
        self.seen.append(
            {
                "system": next((c for r, c in by_role if r == "system"), None),
                "user": next((c for r, c in reversed(by_role) if r == "user"), None),
                "tools": [(t.name, t.description, t.input_schema) for t in tools or []],
            }
        )

    async def complete(self, messages: Any, *, tools: Any = None, **kw: Any) -> Any:
        self._record(messages, tools)
        return await super().complete(messages, tools=tools, **kw)

    async def stream(self, messages: Any, *, tools: Any = None, **kw: Any) -> Any:
        self._record(messages, tools)
        async for chunk in super().stream(messages, tools=tools, **kw):
            yield chunk


class _CompatRecorder(compat.ScriptedModel):
    def __init__(self, turns: list[Any], seen: list[dict[str, Any]]) -> None:
        super().__init__(turns)
        self.seen = seen

    async def complete(self, request: ModelRequest, *, on_delta: Any = None) -> ModelResponse:
        messages = request.messages
        self.seen.append(
            {
                "system": next((m.content for m in messages if m.role == "system"), None),
                "user": next((m.content for m in reversed(messages) if m.role == "user"), None),
                "tools": [(t.name, t.description, t.parameters) for t in request.tools],
            }
        )
        return await super().complete(request, on_delta=on_delta)


class _JeevesagentPrebaked:
    name = "_prebaked"

    def __init__(self, text: str) -> None:
        self.text = text

    def declared_workers(self) -> dict[str, Any]:
        return {}

    async def run(self, session: Any, deps: Any, prompt: str) -> Any:
        session.output = self.text
        session.turns = 1
        if False:  # an async generator that yields nothing
            yield None


class _CompatPrebaked:
    name = "prebaked"

    def __init__(self, text: str) -> None:
        self.text = text

    async def run(self, ctx: Any, task: str) -> Any:
        from jeeves._run.context import Output

        return Output.of(self.text)


@dataclass
class _Status:
    blocked: bool = True
    warn: bool = False
    reason: str = "test_block"


class _AlwaysBlock:
    def __init__(self, real: bool) -> None:
        self.real = real

    async def allows_step(self) -> Any:
        if self.real:
            from jeevesagent.core.types import BudgetStatus

            return BudgetStatus.blocked_("test_block")
        return _Status()

    async def consume(self, **kwargs: object) -> None:
        return None


Scenario = Callable[[Side], Awaitable[tuple[Any, str]] | tuple[Any, str]]


@dataclass(frozen=True)
class Case:
    """A scenario and the fields it is expected to differ in (field → difference id)."""

    name: str
    build: Callable[[Side], tuple[Any, str]]
    differs: dict[str, str] = field(default_factory=dict)
    pins: str = ""
    """Which of jeevesagent's tests pin this behaviour."""


def _norm_sid(sid: str) -> str:
    return _ULID.sub(r"\1_<ulid>", sid)


def _event_row(event: Any) -> tuple[Any, ...]:
    kind = str(getattr(event.kind, "value", event.kind))
    sid = _norm_sid(event.session_id)
    if kind == "architecture_event":
        return (kind, sid, dict(event.payload))
    return (kind, sid)


def _is_text(event: Any) -> bool:
    """A model_chunk with text (jeevesagent also streams tool-call and finish chunks)."""
    if str(getattr(event.kind, "value", event.kind)) != "model_chunk":
        return False
    chunk = event.payload.get("chunk") or {}
    return chunk.get("kind") == "text" and bool(chunk.get("text"))


async def observe(side: Side, build: Callable[[Side], tuple[Any, str]]) -> dict[str, Any]:
    """Run the scenario with stream() and with run() on one side; what it produced."""
    agent, prompt = build(side)
    events = [e async for e in agent.stream(prompt, session_id=SESSION)]
    seen_streamed = list(side.seen)
    side.seen.clear()
    rerun, prompt = build(side)
    result = await rerun.run(prompt, session_id=SESSION)
    assert side.seen == seen_streamed, f"{side.name}: run() and stream() sent different requests"
    final = events[-1]
    assert str(getattr(final.kind, "value", final.kind)) == "completed"
    streamed = final.payload["result"]
    fields = ("session_id", "output", "turns", "interrupted", "interruption_reason")
    from_stream = {f: streamed[f] for f in fields}
    from_run = {f: getattr(result, f) for f in fields}
    assert from_stream == from_run, f"{side.name}: run() and stream() disagree"
    rows = [_event_row(e) for e in events if str(getattr(e.kind, "value", e.kind)) != "model_chunk"]
    text_sessions: list[str] = []
    for e in events:
        if _is_text(e) and _norm_sid(e.session_id) not in text_sessions:
            text_sessions.append(_norm_sid(e.session_id))
    return {**from_run, "events": rows, "model_sessions": text_sessions, "requests": seen_streamed}


async def compare(case: Case) -> tuple[dict[str, Any], dict[str, Any]]:
    """Both sides' observations; asserts they differ exactly in the case's declared fields."""
    theirs = await observe(Side("jeevesagent", jeevesagent), case.build)
    ours = await observe(Side("jeeves", compat), case.build)
    differing = {key for key in theirs if theirs[key] != ours[key]}
    detail = {key: (theirs[key], ours[key]) for key in differing ^ set(case.differs)}
    assert differing == set(case.differs), f"{case.name}: unexpected (or missing) differences: {detail!r}"
    return theirs, ours


def documented_differences() -> dict[str, str]:
    """The differences table of docs/coming-from-jeevesagent.md: id → the row's text."""
    rows = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        found = re.match(r"\|\s*`(D-[a-z0-9-]+)`\s*\|(.*)\|\s*$", line)
        if found:
            rows[found.group(1)] = found.group(2).strip()
    return rows
