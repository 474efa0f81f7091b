"""Record, replay and resume: journal stores and the helpers around them.

- `MemoryJournal`, `JSONLJournal`, `SQLiteJournal`: where steps are recorded.
- `open_journal(path)`: `.jsonl` opens a JSONLJournal, any other path a SQLiteJournal.
- `list_runs(journal)`: the recorded runs (root sessions) with status, rounds and cost.
- `jeeves.replay(arch, journal, session_id)` (defined in `jeeves.runner`, exported from
  `jeeves`): a strict, offline replay.

See docs/replay.md for the id scheme and why a replay can be trusted.
"""

from jeeves.replay.api import RunSummary, list_runs, open_journal
from jeeves.replay.base import JournalStore, JournalWarning
from jeeves.replay.jsonl import JSONLJournal
from jeeves.replay.memory import MemoryJournal
from jeeves.replay.source import register_loader, resolve_ref
from jeeves.replay.sqlite import SQLiteJournal

__all__ = [
    "JSONLJournal",
    "JournalStore",
    "JournalWarning",
    "MemoryJournal",
    "RunSummary",
    "SQLiteJournal",
    "list_runs",
    "open_journal",
    "register_loader",
    "resolve_ref",
]
