"""The research team's notes and the tool its researcher searches them with.

research_team.toml names the tool by import path (`research_tools:search_notes`); a spec's
directory is importable while the spec is built, so this module needs no installing.
The notes are a small fixed corpus, so the writer's citations can be checked against
their ids (the `citations` critic).
"""

from __future__ import annotations

from jeeves import tool

NOTES: dict[str, str] = {
    "n1": "Trio, first released in 2017, introduced nurseries: a task can only be started inside a "
    "nursery block, and the block does not exit until every task started in it has finished.",
    "n2": "Nathaniel J. Smith's 2018 essay 'Notes on structured concurrency, or: Go statement "
    "considered harmful' argues that spawning tasks without a scope breaks abstraction the way goto did.",
    "n3": "Python 3.11 added asyncio.TaskGroup: it waits for all of its tasks, and when one fails it "
    "cancels the others.",
    "n4": "Python 3.11 also added exception groups (PEP 654), so several concurrent failures can be "
    "raised together and handled with except*.",
    "n5": "AnyIO offers task groups with the same semantics on top of either asyncio or Trio.",
    "n6": "PEP 789 (2024) shows that yielding inside a task group or a cancel scope in an async "
    "generator breaks cancellation, and proposes preventing it.",
}
"""Note id → text."""


@tool
def search_notes(query: str) -> str:
    """Search the team's notes. Returns each matching note as `[id] text`, best match first."""
    words = {w.strip(".,?!'\"").lower() for w in query.split()}
    words = {w for w in words if len(w) > 3}
    scored = [(sum(w in text.lower() for w in words), note_id, text) for note_id, text in NOTES.items()]
    hits = sorted((s for s in scored if s[0]), key=lambda s: (-s[0], s[1]))
    if not hits:
        return f"No notes match {query!r}; try other words."
    return "\n".join(f"[{note_id}] {text}" for _, note_id, text in hits)
