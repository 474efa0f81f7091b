"""The AG-UI endpoint's edges: the task a RunAgentInput asks for, and the SSE it gets back.

`AguiFormat` plugs the mapper into `follow_run` (a `StreamFormat`): RUN_STARTED first, the
mapped events of each jeeves event, then whatever `AguiMapper.finish` closes the run with;
every event written by the `ag-ui-protocol` package's own `EventEncoder`.

Gates: when the run waits on a gate this stream has shown (`approval.requested` seen, the
gate in the run's `GateDesk`), the stream ends with the interrupt (`AguiMapper.interrupt`)
and notes where it stopped (`RunRecord.agui_cursor`); the jeeves run keeps waiting. An
input with `resume` is a new AG-UI run over the same jeeves run: it folds what the client
has (events up to the cursor; in a run resumed from the journal, the replayed steps)
without sending them again, reopens the suspended subagents, and follows on.
"""

from __future__ import annotations

from ag_ui.core import BaseEvent, RunAgentInput
from ag_ui.encoder import EventEncoder

from jeeves.errors import UserError
from jeeves.events import ApprovalRequested, Event
from jeeves.server.agui import AguiMapper
from jeeves.server.runs import RunRecord
from jeeves.server.sse import each_event

__all__ = ["AguiFormat", "task_from_input"]


def task_from_input(data: RunAgentInput) -> str:
    """The task of an AG-UI run: the text of the last user message."""
    for message in reversed(data.messages):
        if getattr(message, "role", None) != "user":
            continue
        content = getattr(message, "content", "")
        if isinstance(content, str):
            return content
        return "".join(
            str(getattr(part, "text", "")) for part in content if getattr(part, "type", "") == "text"
        )
    raise UserError(
        "The AG-UI input has no user message; put the task in a message with role 'user'. "
        f"Got roles {[getattr(m, 'role', '?') for m in data.messages]!r}."
    )


class AguiFormat:
    """The AG-UI stream of a followed run (a `StreamFormat`), written by the package's encoder."""

    def __init__(self, data: RunAgentInput, record: RunRecord, *, accept: str | None = None) -> None:
        self._mapper = AguiMapper(data, record.session_id)
        self._record = record
        self._resuming = bool(data.resume)
        self._gates: dict[str, ApprovalRequested] = {}
        """Gates this stream (or the run it resumes) has shown, by gate id."""
        self._seen = record.agui_cursor if self._resuming else 0
        self._encoder = EventEncoder(accept=accept)  # type: ignore[arg-type]
        self.media_type: str = self._encoder.get_content_type()

    def _encode(self, events: list[BaseEvent]) -> list[str]:
        return [self._encoder.encode(e) for e in events]

    def opening(self) -> list[str]:
        out: list[BaseEvent] = [self._mapper.start()]
        if self._resuming:
            before = [e for e in self._record.events_after(0) if e.seq <= self._seen]
            self._note_gates(before)
            self._mapper.follow(before)
            out += self._mapper.reopen()
        return self._encode(out)

    def chunk_after(self, record: RunRecord, seq: int) -> tuple[bytes, int]:
        return each_event(record, seq, self.event)

    def event(self, event: Event) -> list[str]:
        self._seen = event.seq
        self._note_gates([event])
        if self._resuming and event.replayed:  # a step served from the journal: the client has it
            self._mapper.skip(event)
            return []
        return self._encode(self._mapper.map(event))

    def interrupt(self, record: RunRecord) -> list[str] | None:
        waiting = [self._gates[g.gate_id] for g in record.gates.pending() if g.gate_id in self._gates]
        if not waiting:
            return None
        record.agui_cursor = self._seen
        return self._encode(self._mapper.interrupt(waiting))

    def closing(self, record: RunRecord) -> list[str]:
        return self._encode(self._mapper.finish(record))

    def _note_gates(self, events: list[Event]) -> None:
        for event in events:
            if isinstance(event, ApprovalRequested):
                self._gates[event.gate_id] = event
