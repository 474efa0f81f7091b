"""The program name in the follow-up commands the CLI prints: what the user ran, runnable as printed."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

import jeeves
from jeeves.cli.invocation import command_line, program

MAIN = str(Path(jeeves.__file__).parent / "__main__.py")


def _executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", os.defpath)
    return tmp_path


def test_the_console_script_is_jeeves_only_when_path_finds_this_one(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = _executable(home / ".venv" / "bin" / "jeeves")
    monkeypatch.setattr(sys, "argv", [str(script), "demo"])
    assert program() == [".venv/bin/jeeves"]  # the README's quick start: nothing on PATH
    other = _executable(home / "elsewhere" / "jeeves")
    monkeypatch.setenv("PATH", f"{other.parent}{os.pathsep}{script.parent}")
    assert program() == [".venv/bin/jeeves"]  # PATH's jeeves is another install
    monkeypatch.setenv("PATH", f"{script.parent}{os.pathsep}{other.parent}")
    assert program() == ["jeeves"]
    assert command_line("replay", "my runs.db", "r-1") == "jeeves replay 'my runs.db' r-1"


def test_a_script_outside_the_current_directory_is_named_by_its_absolute_path(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = _executable(home / "tools" / "jeeves")
    (home / "work").mkdir()
    monkeypatch.chdir(home / "work")
    monkeypatch.setattr(sys, "argv", [str(script)])
    assert program() == [str(script)]
    monkeypatch.chdir(home / "tools")
    assert program() == ["./jeeves"]  # a bare name would be looked up on PATH


def test_python_dash_m_names_the_interpreter(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    python = _executable(home / ".venv" / "bin" / "python")
    monkeypatch.setattr(sys, "executable", str(python))
    monkeypatch.setattr(sys, "argv", [MAIN, "demo"])
    assert program() == [".venv/bin/python", "-m", "jeeves"]
    monkeypatch.setenv("PATH", str(python.parent))
    assert program() == ["python", "-m", "jeeves"]


def test_called_from_python_it_is_jeeves(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["/usr/lib/python3/site-packages/pytest/__main__.py"])
    assert program() == ["jeeves"]
    monkeypatch.setattr(sys, "argv", [])
    assert program() == ["jeeves"]
