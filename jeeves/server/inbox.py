"""Who may receive a human's message (`POST /runs/{id}/messages`): refused up front, not dropped.

A message reaches only an agent that is still running: a session whose `session.started`
says `architecture == "agent"` and that has not completed or failed. A message addressed
to another session is refused before it is queued: a session the run has not started
(404), or one that cannot take it, a critic, a supervisor, a session that ended (409).
A message with no session goes to whichever agent reaches a turn boundary first. The
inbox's own caps (jeeves._run.steering: 413, 429) apply after this check.
"""

from __future__ import annotations

from collections.abc import Iterable

from jeeves.errors import UserError
from jeeves.events import Event, SessionCompleted, SessionFailed, SessionStarted

__all__ = ["CannotTakeMessages", "NoSuchSession", "check_target"]

AGENT = "agent"
"""The one architecture whose sessions take injected messages (`Agent`, at its turn boundaries)."""


class NoSuchSession(UserError):
    """The message names a session the run has not started (HTTP 404)."""


class CannotTakeMessages(UserError):
    """The message names a session that cannot take it: not an agent, or ended (HTTP 409)."""


def check_target(root: str, events: Iterable[Event], session_id: str | None) -> None:
    """Refuse a message for `session_id` that no agent of run `root` would ever read."""
    if session_id is None:
        return
    started: SessionStarted | None = None
    ended = False
    for event in events:
        if event.session_id != session_id:
            continue
        if isinstance(event, SessionStarted):
            started, ended = event, False
        elif isinstance(event, SessionCompleted | SessionFailed):
            ended = True
    if started is None:
        raise NoSuchSession(
            f"Run {root!r} has no session {session_id!r} (not started, or not part of it); send the message "
            f"to a running agent session (the viewer and GET /runs/{root}/events show them), or with no "
            f"session_id for the first agent that takes a turn."
        )
    if started.architecture != AGENT:
        raise CannotTakeMessages(
            f"Session {session_id!r} is a {started.architecture} ({started.role}), which reads no messages; "
            f"only agent sessions take them, at their turn boundaries. Send it to one of the run's agents."
        )
    if ended:
        raise CannotTakeMessages(
            f"Session {session_id!r} has ended; a message can only reach an agent that is still running."
        )
