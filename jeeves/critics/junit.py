"""Reading a pytest run (its JUnit XML report and its output) into what the code critic needs."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["STARTED", "PytestReport", "read_report"]

STARTED = "jeeves: pytest imported, running the tests"
"""Written to stderr by the child once pytest is imported, before any candidate code runs:
without it, a failure is the interpreter's or pytest's, not the candidate's."""

_MAX_ISSUE = 800
_MAX_TAIL = 1500
_E_LINE = re.compile(r"^E\s+(.*)$", re.MULTILINE)


@dataclass
class PytestReport:
    """One pytest run, as the code critic judges it."""

    total: int = 0
    """Tests that ran (skipped ones excluded)."""
    failures: list[str] = field(default_factory=list)
    """`test_name failed: message`, one per failing or erroring test."""
    broken: list[str] = field(default_factory=list)
    """Problems that stop every test: import and collection errors, a run without a report."""
    infrastructure_error: str | None = None
    """pytest itself could not run (not installed, a usage error): not the candidate's fault."""


def _clip(text: str, limit: int = _MAX_ISSUE) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 2] + " …"


def _explain(element: ET.Element, workdir: Path) -> str:
    """The most useful line(s) of a failure: its message, else the traceback's `E` lines."""
    message = (element.get("message") or "").strip()
    body = (element.text or "").strip()
    e_lines = [line.strip() for line in _E_LINE.findall(body)]
    generic = not message or message == "collection failure" or message.startswith("failed on setup")
    if generic and e_lines:
        message = "\n".join(e_lines[-6:])
    elif not message and body:
        message = body.splitlines()[-1]
    return _clip(_unpath(message, workdir))


def _unpath(text: str, workdir: Path) -> str:
    """Drop the temporary directory from paths, so issues are the same on every run."""
    return text.replace(f"{workdir}/", "").replace(str(workdir), ".")


def _output_tail(workdir: Path) -> str:
    parts = []
    for name in ("stdout.txt", "stderr.txt"):
        path = workdir / name
        if path.exists():
            parts.append(path.read_text(encoding="utf-8", errors="replace"))
    return _unpath("\n".join(p.strip() for p in parts if p.strip()), workdir)


def read_report(workdir: Path, returncode: int | None) -> PytestReport:
    """Parse `workdir/report.xml` (written by `--junitxml`) and the run's output."""
    report = PytestReport()
    path = workdir / "report.xml"
    tail = _output_tail(workdir)
    if STARTED not in tail:
        report.infrastructure_error = f"exit code {returncode}: {tail or '(no output)'}"
        return report
    tail = tail.replace(STARTED, "").strip()[-_MAX_TAIL:]
    if not path.exists() and returncode in (3, 4):  # pytest's internal and usage errors
        report.infrastructure_error = f"exit code {returncode}: {tail}"
        return report
    if not path.exists():
        report.broken.append(
            _clip(f"the test run ended without a report (exit code {returncode}): {tail}".strip(" :"))
        )
        return report
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        report.broken.append(f"the test report could not be read ({exc}); the code may have tampered with it")
        return report
    for case in root.iter("testcase"):
        if case.find("skipped") is not None:
            continue
        name = case.get("name") or "?"
        error, failure = case.find("error"), case.find("failure")
        if error is not None and not case.get("classname"):
            report.broken.append(f"collecting the tests failed: {_explain(error, workdir)}")
            continue
        report.total += 1
        if failure is not None:
            report.failures.append(f"{name} failed: {_explain(failure, workdir)}")
        elif error is not None:
            report.failures.append(f"{name} errored: {_explain(error, workdir)}")
    return report
