"""Finding the `jeeves` commands a page tells a reader to type, and running them as typed.

A page's commands are, in page order: in a Markdown page, the `$ ` lines of its code
blocks and every line of its ```bash blocks; in a file of `architectures/`, the indented
`jeeves ...` lines of its header (the comment block or docstring it starts with). Only
commands whose program is `jeeves` count; usage synopses (no `$`) are not commands.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

from tests.conftest import offline_env

__all__ = ["commands", "run_command"]

_BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
_SHELL = {"bash", "sh", "shell"}


def _argv(line: str) -> list[str]:
    return shlex.split(line, comments=True)


def _markdown(text: str) -> list[list[str]]:
    found = []
    for language, body in _BLOCK.findall(text):
        for line in body.splitlines():
            if line.startswith("$ "):
                found.append(_argv(line[2:]))
            elif language in _SHELL and line.strip() and not line.lstrip().startswith("#"):
                found.append(_argv(line))
    return found


def _header(text: str) -> list[list[str]]:
    lines = text.splitlines()
    if lines and lines[0].startswith(("'''", '"""')):  # a docstring: up to its closing quotes
        end = next((i for i, line in enumerate(lines[1:], 1) if line.rstrip().endswith(lines[0][:3])), 0)
        header = lines[: end + 1]
    else:  # the comment block the file starts with
        end = next((i for i, line in enumerate(lines) if not line.startswith("#")), len(lines))
        header = [line[1:] for line in lines[:end]]
    return [_argv(line) for line in header if re.match(r"\s+jeeves ", line)]


def commands(page: Path) -> list[list[str]]:
    """The `jeeves` commands of `page`, each as its argv (comments dropped)."""
    text = page.read_text(encoding="utf-8")
    found = _markdown(text) if page.suffix == ".md" else _header(text)
    return [argv for argv in found if argv and argv[0] == "jeeves"]


def run_command(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """`argv` run as typed, `jeeves` being `python -m jeeves` of this checkout, offline (no keys)."""
    return subprocess.run(
        [sys.executable, "-m", "jeeves", *argv[1:]],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=offline_env() | {"COLUMNS": "200"},
        stdin=subprocess.DEVNULL,
        timeout=300,
    )
