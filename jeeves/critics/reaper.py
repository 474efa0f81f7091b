"""Ending every process a code review caused, including those that left its process group.

Killing the review's process group is not enough: a candidate that starts a child with
`start_new_session=True`, or double-forks a daemon, puts it in a group (and a session) of
its own, and it outlives the review. Three layers, each catching what the one before can
miss:

1. **The supervisor** (`main`, run as the review's first process, with only the standard
   library so any interpreter that has pytest can run it). On Linux it makes itself a
   *child subreaper* (`prctl(PR_SET_CHILD_SUBREAPER)`), so an orphan anywhere below it
   (the daemon whose parent exited) is re-parented to it rather than to init, and stays
   findable by walking parent ids in `/proc`. It runs pytest, and when pytest exits or the
   supervisor gets SIGTERM (the critic's timeout or cancellation), it kills every
   descendant, again and again until none is left, and reaps them.
2. **The process group**, killed by the critic after the supervisor has exited; this is
   all there is where `/proc` and `prctl` are missing (macOS).
3. **A marker in the environment** (`MARKER`, set to a value unique to the review). If the
   candidate killed the supervisor, its orphans went to init; the critic then kills every
   process of this user whose initial environment holds the marker. A process that also
   replaced its environment and escaped the subreaper before that is beyond reach: this
   is isolation, not a sandbox (see `jeeves.critics.code`).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

__all__ = ["MARKER", "descendants", "kill_marked", "main"]

MARKER = "JEEVES_CODE_REVIEW"
"""The environment variable every process of one review inherits; its value names the review."""

_PROC = "/proc"
_PR_SET_CHILD_SUBREAPER = 36
_SWEEP_S = 10.0
"""How long a sweep keeps killing and waiting: a fork bomb can outrun one pass, not this."""


def _processes() -> Iterator[tuple[int, int]]:
    """(pid, parent pid) of every process in /proc; nothing where there is no /proc."""
    try:
        entries = os.listdir(_PROC)
    except OSError:
        return
    for entry in entries:
        fields = _stat(entry) if entry.isdigit() else None
        if fields is not None and fields[0] != b"Z":  # a zombie is dead; its parent reaps it
            yield int(entry), int(fields[1])


def _stat(pid: int | str) -> list[bytes] | None:
    """The fields of /proc/PID/stat after the command name (state first); None if gone."""
    try:
        with open(f"{_PROC}/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None


def descendants(root: int) -> list[int]:
    """Every live process below `root` (children first), found by parent ids in /proc."""
    children: dict[int, list[int]] = {}
    for pid, parent in _processes():
        children.setdefault(parent, []).append(pid)
    found: list[int] = []
    pending = list(children.get(root, []))
    while pending:
        pid = pending.pop()
        found.append(pid)
        pending.extend(children.get(pid, []))
    return found


def kill_marked(value: str) -> list[int]:
    """SIGKILL every process whose initial environment has `MARKER=value`; their pids.

    It returns once they are dead (gone, or zombies their new parent has yet to reap),
    not merely signalled, and sweeps until a sweep finds none: a process caught between
    fork and exec can be missed by one pass through /proc.
    """
    killed: list[int] = []
    deadline = time.monotonic() + _SWEEP_S
    while time.monotonic() < deadline:
        found = _kill_marked_once(f"{MARKER}={value}".encode())
        if not found:
            break
        killed += found
        while time.monotonic() < deadline and any(_running(pid) for pid in found):
            time.sleep(0.002)
    return killed


def _running(pid: int) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] != b"Z"


def _kill_marked_once(needle: bytes) -> list[int]:
    killed: list[int] = []
    for pid, _ in _processes():
        if pid == os.getpid():
            continue
        try:
            with open(f"{_PROC}/{pid}/environ", "rb") as environ:
                if needle not in environ.read().split(b"\0"):
                    continue
            os.kill(pid, signal.SIGKILL)
        except OSError:  # gone, or not ours to read
            continue
        killed.append(pid)
    return killed


def _become_subreaper() -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (ImportError, OSError, AttributeError):
        pass  # no ctypes or no prctl: layers 2 and 3 remain


def _reap_all() -> bool:
    """Reap every child that has exited; True when no child is left at all."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return True
        if pid == 0:
            return False


def _kill_descendants(child: subprocess.Popen[bytes] | None) -> None:
    if not os.path.isdir(_PROC):  # only pytest itself can be found; the critic kills the group
        if child is not None and child.poll() is None:
            child.kill()
            child.wait()
        return
    deadline = time.monotonic() + _SWEEP_S
    while time.monotonic() < deadline:
        below = descendants(os.getpid())
        for pid in below:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if _reap_all() and not below:
            return
        time.sleep(0.005)


class _Stop(Exception):
    pass


def _stop(signum: int, frame: object) -> None:
    raise _Stop


def main(argv: list[str]) -> None:
    """Run `argv` (the pytest command), then leave no process it caused; exit as it did."""
    _become_subreaper()
    signal.signal(signal.SIGTERM, _stop)
    returncode = -signal.SIGTERM
    child: subprocess.Popen[bytes] | None = None
    try:
        child = subprocess.Popen(argv)
        returncode = child.wait()
    except _Stop:
        pass
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        _kill_descendants(child)
    if returncode < 0:  # killed by a signal: say so the same way
        signal.signal(-returncode, signal.SIG_DFL)
        os.kill(os.getpid(), -returncode)
    sys.exit(returncode)


if __name__ == "__main__":
    main(sys.argv[1:])
