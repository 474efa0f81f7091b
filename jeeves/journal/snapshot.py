"""RunSnapshot: one recorded run, read from its journal at once, for a strict replay.

A strict replay only reads, and it reads every record of one run: each session's record
(when the session starts and again when it ends), each step, and every step index at the
end (to prove none was left unused). Asking the store for each of those costs a query and
a worker-thread round trip apiece on the database stores (about 70 for a team of seven
sessions). A store that can read a whole run at once (`read_run(root)`: every shipped
store; on SQL stores one query per table, on the root id's prefix) returns a snapshot, and
the replay serves everything from it.

Records are kept as the store read them (JSON text on the database stores) and decoded on
first use, once: damage in a record surfaces when the replay reaches it, with the message
reading it on demand would give, and a record the replay never asks for is never decoded.

Only a strict replay uses a snapshot. Recording and resuming read the store itself at
every step, so a decision another process recorded between attempts is always seen.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jeeves.journal.records import SessionRecord, StepRecord
from jeeves.journal.store import in_tree

__all__ = ["RunSnapshot"]

SessionDecoder = Callable[[str, Any], SessionRecord]
"""(session_id, stored form) → the record; raises JournalError on damage."""
StepDecoder = Callable[[str, int, Any], StepRecord]
"""(session_id, index, stored form) → the record; raises JournalError on damage."""


def _as_session(session_id: str, stored: Any) -> SessionRecord:
    return stored  # type: ignore[no-any-return]


def _as_step(session_id: str, index: int, stored: Any) -> StepRecord:
    return stored  # type: ignore[no-any-return]


class RunSnapshot:
    """The session and step records of one run (a root and its subtree), as a store held
    them when read.

    Args:
        sessions: Session id → its stored record, in the order the sessions were first
            recorded.
        steps: Session id → step index → its stored record.
        decode_session, decode_step: Turn a stored record into a record (default: it is
            one already, as in the in-memory stores).
    """

    __slots__ = ("_decode_session", "_decode_step", "_sessions", "_steps")

    def __init__(
        self,
        sessions: dict[str, Any],
        steps: dict[str, dict[int, Any]],
        *,
        decode_session: SessionDecoder = _as_session,
        decode_step: StepDecoder = _as_step,
    ) -> None:
        self._sessions = sessions
        self._steps = steps
        self._decode_session = decode_session
        self._decode_step = decode_step

    @classmethod
    def from_index(
        cls,
        sessions: dict[str, Any],
        steps: dict[str, dict[int, Any]],
        root: str,
        *,
        decode_session: SessionDecoder,
        decode_step: StepDecoder,
    ) -> RunSnapshot:
        """Run `root`'s snapshot from an in-process store's index (session id → stored record,
        session id → index → stored record), as copies: the snapshot does not change when the
        store does. Records are decoded on first use."""
        return cls(
            {sid: entry for sid, entry in sessions.items() if in_tree(sid, root)},
            {sid: dict(by_index) for sid, by_index in steps.items() if in_tree(sid, root)},
            decode_session=decode_session,
            decode_step=decode_step,
        )

    @classmethod
    def from_rows(
        cls,
        session_rows: list[Any],
        step_rows: list[Any],
        *,
        decode_session: SessionDecoder,
        decode_step: StepDecoder,
    ) -> RunSnapshot:
        """A snapshot from a SQL store's rows: `(session_id, record)` in recording order and
        `(session_id, index, record)`, records as stored text, decoded on first use."""
        steps: dict[str, dict[int, Any]] = {}
        for sid, idx, text in step_rows:
            steps.setdefault(str(sid), {})[int(idx)] = str(text)
        sessions = {str(sid): str(text) for sid, text in session_rows}
        return cls(sessions, steps, decode_session=decode_session, decode_step=decode_step)

    def session(self, session_id: str) -> SessionRecord | None:
        """The record of `session_id`, or None when the run has no such session."""
        stored = self._sessions.get(session_id)
        if stored is None or isinstance(stored, SessionRecord):
            return stored
        record = self._sessions[session_id] = self._decode_session(session_id, stored)
        return record

    def step(self, session_id: str, index: int) -> StepRecord | None:
        """Step `index` of `session_id`, or None when the run has no such step."""
        steps = self._steps.get(session_id)
        stored = None if steps is None else steps.get(index)
        if stored is None or isinstance(stored, StepRecord):
            return stored
        assert steps is not None
        record = steps[index] = self._decode_step(session_id, index, stored)
        return record

    def step_indices(self, session_id: str) -> list[int]:
        """The indices of the steps recorded for `session_id`, ascending."""
        return sorted(self._steps.get(session_id, ()))

    def sessions(self) -> list[SessionRecord]:
        """Every session record of the run, in the order the sessions were first recorded."""
        return [record for sid in list(self._sessions) if (record := self.session(sid)) is not None]

    def __repr__(self) -> str:
        steps = sum(len(s) for s in self._steps.values())
        return f"RunSnapshot({len(self._sessions)} sessions, {steps} steps)"
