"""The journal: what a run records (steps and sessions), and every store that holds it.

- `MemoryJournal`, `JSONLJournal`, `SQLiteJournal`: where steps are recorded.
- `PostgresJournal`: many writers on many machines (needs `jeeves[postgres]`).
- `open_journal(target)`: a `postgresql://` URL opens a PostgresJournal, a `.jsonl` path a
  JSONLJournal, any other path a SQLiteJournal.
- `list_runs(journal, last=None)`: the recorded runs (root sessions) with status, rounds and
  cost, oldest first (only the latest `last`); no child session is read.
- `RunSnapshot`: one run read at once (`store.read_run(root)`), what a strict replay serves from.
- `open_event_log(target)`: the `EventLog` of runs' persisted events in a journal database
  (what `jeeves serve --database` follows); `EventRecorder` writes a run's events into it.
- `jeeves.replay(arch, journal, session_id)` (defined in `jeeves._run.runner`, exported from
  `jeeves`): a strict, offline replay.

See docs/replay.md for the id scheme and why a replay can be trusted.
"""

from typing import TYPE_CHECKING

from jeeves._base.lazy import lazy_names
from jeeves.journal.eventlog import EventLog, LoggedRun, open_event_log
from jeeves.journal.memory import MemoryJournal
from jeeves.journal.records import (
    HEARTBEAT_S,
    LEASE_S,
    TERMINAL,
    Journal,
    JournalMode,
    ReplayedError,
    SessionRecord,
    SessionStatus,
    StepRecord,
    decode_error,
    encode_error,
    error_type_name,
    excerpt,
    fingerprint,
    first_error,
    request_diff,
    served_events,
    served_result,
    step_origin,
)
from jeeves.journal.store import JournalStore, JournalWarning

if TYPE_CHECKING:
    from jeeves.journal.jsonl import JSONLJournal
    from jeeves.journal.open import RunSummary, list_runs, open_journal
    from jeeves.journal.postgres import PostgresJournal
    from jeeves.journal.recorder import EventRecorder
    from jeeves.journal.snapshot import RunSnapshot
    from jeeves.journal.sqlite import SQLiteJournal

# Imported on first use: `import jeeves` loads this package (for MemoryJournal) but not
# the journal opening and architecture loading a run only needs when it has a journal.
_LAZY = {
    "EventRecorder": "jeeves.journal.recorder",
    "RunSnapshot": "jeeves.journal.snapshot",
    "RunSummary": "jeeves.journal.open",
    "list_runs": "jeeves.journal.open",
    "open_journal": "jeeves.journal.open",
    "JSONLJournal": "jeeves.journal.jsonl",
    "PostgresJournal": "jeeves.journal.postgres",
    "SQLiteJournal": "jeeves.journal.sqlite",
}


__getattr__ = lazy_names("jeeves.journal", _LAZY)


__all__ = [
    "Journal",
    "JournalMode",
    "HEARTBEAT_S",
    "LEASE_S",
    "ReplayedError",
    "SessionRecord",
    "SessionStatus",
    "StepRecord",
    "TERMINAL",
    "decode_error",
    "encode_error",
    "error_type_name",
    "excerpt",
    "fingerprint",
    "first_error",
    "request_diff",
    "served_events",
    "served_result",
    "step_origin",
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
]
