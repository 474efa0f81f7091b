"""jeevesagent's interrupted result: a run that stops short returns, it does not raise.

In jeevesagent an agent out of turns ends its session `interrupted` with reason
`max_turns_exceeded`, and an ActorCritic whose actor or critic was interrupted returns
`interrupted=True` with the reason namespaced by who and when
(`actor:round_0:max_turns_exceeded`, `critic:round_1:...`). jeeves raises
`MaxTurnsExceeded` instead; the compat architectures catch it and return these fields.
"""

from __future__ import annotations

from jeeves._run.context import Output
from jeeves.architectures import ActorCriticOutput

__all__ = ["MAX_TURNS", "CompatActorCriticOutput", "CompatOutput", "child_of", "interruption"]

MAX_TURNS = "max_turns_exceeded"
"""jeevesagent's reason for an agent that ran out of turns."""


class CompatOutput(Output):
    """An Output with jeevesagent's interruption fields (SelfRefine, Supervisor)."""

    interrupted: bool = False
    interruption_reason: str | None = None


class CompatActorCriticOutput(ActorCriticOutput):
    """jeeves' ActorCriticOutput with jeevesagent's interruption fields."""

    interrupted: bool = False
    interruption_reason: str | None = None


def interruption(output: object) -> tuple[bool, str | None]:
    """The interruption fields of any Output (a jeeves one is never interrupted)."""
    return bool(getattr(output, "interrupted", False)), getattr(output, "interruption_reason", None)


def child_of(parent: str, failed: str | None) -> tuple[str, int] | None:
    """(role, index) of the child of `parent` that `failed` (a session id at or below it) is in."""
    if failed is None or not failed.startswith(parent + "__"):
        return None
    head = failed[len(parent) + 2 :].split("__", 1)[0]
    role, _, index = head.rpartition("_")
    return (role, int(index)) if role and index.isdigit() else None
