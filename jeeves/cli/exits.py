"""The `jeeves` command's exit statuses: one per outcome, the same for every command that
runs or waits for a run (`run`, `resume`, `submit --wait`), tabled in docs/cli.md.

A script branches on the status alone: 3 means "decide a gate, then resume", whichever
command stopped there; 4 means the budget ran out, with the best output so far printed.
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["ExitCode", "exit_code"]


class ExitCode(IntEnum):
    COMPLETED = 0
    """The run completed (whatever its stop reason, except the budget's)."""
    FAILED = 1
    """The run failed, or a gate ended it: expired, rejected, cancelled."""
    BAD_INPUT = 2
    """Nothing ran, or nothing more: a bad spec, flag or model string, a missing key, a
    journal that cannot be read. One `error:` line on stderr."""
    AWAITING_APPROVAL = 3
    """The run is suspended at approval gates (printed): decide them, then resume."""
    BUDGET = 4
    """The run's budget ran out; the output is the best one so far."""
    INTERRUPTED = 130
    """Ctrl-C (SIGINT), as shells report it."""
    READER_GONE = 141
    """The reader of stdout went away (`| head`), as Unix tools end (128 + SIGPIPE)."""


def exit_code(status: str, stop_reason: str | None = None) -> ExitCode:
    """The exit status for a run that ended with `status` (a `RunResult.status`) and `stop_reason`."""
    if status == "awaiting_approval":
        return ExitCode.AWAITING_APPROVAL
    if status != "completed":
        return ExitCode.FAILED
    return ExitCode.BUDGET if stop_reason == "budget" else ExitCode.COMPLETED
