"""The AG-UI endpoint's edges: the task a RunAgentInput asks for, and the SSE it gets back.

`AguiFormat` plugs the mapper into `follow_run` (a `StreamFormat`): RUN_STARTED first, the
mapped events of each jeeves event, then whatever `AguiMapper.finish` closes the run with;
every event written by the `ag-ui-protocol` package's own `EventEncoder`.
"""

from __future__ import annotations

from ag_ui.core import BaseEvent, RunAgentInput
from ag_ui.encoder import EventEncoder

from jeeves.errors import UserError
from jeeves.events import Event
from jeeves.server.agui import AguiMapper
from jeeves.server.runs import RunRecord

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

    def __init__(self, data: RunAgentInput, root_session_id: str, *, accept: str | None = None) -> None:
        self._mapper = AguiMapper(data, root_session_id)
        self._encoder = EventEncoder(accept=accept)  # type: ignore[arg-type]
        self.media_type: str = self._encoder.get_content_type()

    def _encode(self, events: list[BaseEvent]) -> list[str]:
        return [self._encoder.encode(e) for e in events]

    def opening(self) -> list[str]:
        return self._encode([self._mapper.start()])

    def event(self, event: Event) -> list[str]:
        return self._encode(self._mapper.map(event))

    def closing(self, record: RunRecord) -> list[str]:
        return self._encode(self._mapper.finish(record))
