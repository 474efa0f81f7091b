"""Usage per session and per subtree, kept as each model call is booked.

A run asks for "the usage of this session and everything below it" once per finished
session (its `session.completed` event, its journal record) and for the root's at the
end. Summing every session's tally on each ask made that quadratic in sessions; here
each call is added to its session and to each of its ancestors instead, so an ask is a
lookup and a call costs one addition per level of nesting.

A session's ancestors are read from its id: ids are `{parent}__{role}_{index}`, so every
prefix that ends where a `__` starts names a session above it, exactly the sessions whose
subtree sum (`sid == q or sid.startswith(q + "__")`) counts this one.
"""

from __future__ import annotations

from jeeves.messages import Usage, UsageTally

__all__ = ["book", "lineage"]


def lineage(session_id: str) -> tuple[str, ...]:
    """`session_id` and every id whose subtree holds it, the session itself first."""
    found = [session_id]
    at = session_id.find("__")
    while at != -1:
        found.append(session_id[:at])
        at = session_id.find("__", at + 1)
    return tuple(found)


def book(own: dict[str, UsageTally], tree: dict[str, UsageTally], session_id: str, usage: Usage) -> None:
    """Add one call's `usage` to its session's own tally and to every enclosing subtree's."""
    tally = own.get(session_id)
    if tally is None:
        tally = own[session_id] = UsageTally()
    tally.add(usage)
    for sid in lineage(session_id):
        tally = tree.get(sid)
        if tally is None:
            tally = tree[sid] = UsageTally()
        tally.add(usage)
