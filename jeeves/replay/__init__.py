"""Record, replay and resume: journal stores and the helpers around them.

- `MemoryJournal`, `JSONLJournal`, `SQLiteJournal`: where steps are recorded.
- `PostgresJournal`: many writers on many machines (needs `jeeves[postgres]`).
- `open_journal(target)`: a `postgresql://` URL opens a PostgresJournal, a `.jsonl` path a
  JSONLJournal, any other path a SQLiteJournal.
- `list_runs(journal)`: the recorded runs (root sessions) with status, rounds and cost.
- `RunSnapshot`: one run read at once (`store.read_run(root)`), what a strict replay serves from.
- `open_event_log(target)`: the `EventLog` of runs' persisted events in a journal database
  (what `jeeves serve --database` follows); `EventRecorder` writes a run's events into it.
- `jeeves.replay(arch, journal, session_id)` (defined in `jeeves.runner`, exported from
  `jeeves`): a strict, offline replay.

See docs/replay.md for the id scheme and why a replay can be trusted.
"""

import importlib
from typing import TYPE_CHECKING, Any

from jeeves.replay.base import JournalStore, JournalWarning
from jeeves.replay.eventlog import EventLog, LoggedRun, open_event_log
from jeeves.replay.memory import MemoryJournal

if TYPE_CHECKING:
    from jeeves.replay.api import RunSummary, list_runs, open_journal
    from jeeves.replay.jsonl import JSONLJournal
    from jeeves.replay.postgres import PostgresJournal
    from jeeves.replay.recorder import EventRecorder
    from jeeves.replay.snapshot import RunSnapshot
    from jeeves.replay.source import register_loader, resolve_ref
    from jeeves.replay.sqlite import SQLiteJournal

# Imported on first use: `import jeeves` loads this package (for MemoryJournal) but not
# the journal opening and architecture loading a run only needs when it has a journal.
_LAZY = {
    "EventRecorder": "jeeves.replay.recorder",
    "RunSnapshot": "jeeves.replay.snapshot",
    "RunSummary": "jeeves.replay.api",
    "list_runs": "jeeves.replay.api",
    "open_journal": "jeeves.replay.api",
    "register_loader": "jeeves.replay.source",
    "resolve_ref": "jeeves.replay.source",
    "JSONLJournal": "jeeves.replay.jsonl",
    "PostgresJournal": "jeeves.replay.postgres",
    "SQLiteJournal": "jeeves.replay.sqlite",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'jeeves.replay' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "EventLog",
    "EventRecorder",
    "JSONLJournal",
    "JournalStore",
    "JournalWarning",
    "LoggedRun",
    "MemoryJournal",
    "PostgresJournal",
    "RunSnapshot",
    "RunSummary",
    "SQLiteJournal",
    "list_runs",
    "open_event_log",
    "open_journal",
    "register_loader",
    "resolve_ref",
]
