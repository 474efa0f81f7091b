"""The command that runs this jeeves again, for every follow-up command the CLI prints.

`jeeves demo` ends with the `jeeves replay` command that plays its run back, `jeeves run`
with the one that replays or resumes it. A user pastes those as printed, so they must
name the program the user actually ran, not assume `jeeves` is on PATH (after the
README's quick start it is not: the command is `.venv/bin/jeeves`):

- the console script: `jeeves` when that name on PATH is this very script, otherwise its
  path (relative to the current directory when below it, e.g. `.venv/bin/jeeves`);
- `python -m jeeves`: the same rule for the interpreter (`python3 -m jeeves`, or
  `.venv/bin/python -m jeeves`, or its absolute path);
- anything else (`jeeves.cli.main([...])` called from Python): `jeeves`.

Paths are compared as given, never with symlinks resolved: a virtualenv's `python` is a
symlink to the system one but imports other packages.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path

__all__ = ["command_line", "program"]

_MAIN = Path(__file__).resolve().parent.parent / "__main__.py"


def program() -> list[str]:
    """The words that start this jeeves from a shell in the current directory."""
    invoked = sys.argv[0] if sys.argv else ""
    if invoked and Path(invoked).resolve() == _MAIN:
        return [_runnable(sys.executable, "python", "python3"), "-m", "jeeves"]
    if Path(invoked).name in ("jeeves", "jeeves.exe"):
        return [_runnable(invoked, "jeeves")]
    return ["jeeves"]


def command_line(*args: str) -> str:
    """`program()` followed by `args`, quoted for a POSIX shell."""
    return shlex.join([*program(), *args])


def _runnable(path: str, *names: str) -> str:
    """The shortest way to name `path` in a shell: a bare name when PATH finds this very
    file under it, else the path relative to the current directory when below it, else
    the absolute path."""
    full = os.path.abspath(path)
    for name in names:
        found = shutil.which(name)
        if found and os.path.abspath(found) == full:
            return name
    try:
        relative = os.path.relpath(full)
    except ValueError:  # another drive (Windows)
        return full
    if relative.startswith(os.pardir):
        return full
    return relative if os.sep in relative else os.path.join(os.curdir, relative)
