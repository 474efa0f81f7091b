"""`RunOptions`: everything `jeeves.run`, `jeeves.stream` and `jeeves.resume` take besides
the architecture and the task, checked once when it is built.

```python
options = jeeves.RunOptions(model="openai/gpt-4o-mini", journal="runs.db", budget=Budget(max_usd=1))
result = await jeeves.run(arch, "task", options=options)
result = await jeeves.run(arch, "task", model="openai/gpt-4o-mini", journal="runs.db")  # the same
```

The three entry points take either keywords (the fields below) or `options=`; keywords
given beside `options=` replace those fields. Inside, only the options object travels.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from jeeves._base.validate import check_int, check_number, short_repr
from jeeves.approvals.policy import Approvals, Approver
from jeeves.budget import Budget
from jeeves.errors import UserError, UserTypeError
from jeeves.journal.records import Journal, JournalMode
from jeeves.models.base import ModelClient, Route
from jeeves.models.router import Router
from jeeves.telemetry.tracer import Tracer

__all__ = ["ArchitectureRef", "JournalLike", "ModelLike", "RunKeywords", "RunOptions", "options_of"]

ModelLike = str | Route | ModelClient
JournalLike = Journal | str | os.PathLike[str]
ArchitectureRef = str | Mapping[str, Any]


@dataclass(frozen=True, kw_only=True)
class RunOptions:
    """How to run an architecture: its models, limits, journal, approvals and telemetry.

    Build it once and pass it to `jeeves.run`, `jeeves.stream` or `jeeves.resume` as
    `options=`, or give the same fields as keywords. Every field is checked here, so a
    mistake fails where it is written, naming the value.
    """

    router: Router | None = None
    """Routes roles to models; `model=` sets its default route, `models=` overrides routes."""
    model: ModelLike | None = None
    """The default model (`"openai/gpt-4o-mini"`, a Route or a ModelClient)."""
    models: Mapping[str, ModelLike] | None = None
    """Routes by role key (`{"critic": "openai/gpt-4o"}`); each key must match a session the
    tree runs (`jeeves.describe(arch)` lists them)."""
    budget: Budget | None = None
    """Limits shared by the whole tree."""
    journal: JournalLike | None = None
    """Records every step; a session id the journal already holds resumes. A journal object,
    or a path: `.jsonl` for a JSONL file, anything else SQLite."""
    mode: JournalMode = "record"
    """"record" (default; resumes too) or "replay" (strict: nothing runs live, no model route
    is used, and the replay must use every recorded step)."""
    session_id: str | None = None
    """The root session id; child ids derive from it. Generated when unset."""
    role: str | None = None
    """The root's role name (defaults to the architecture's `role` or name)."""
    architecture_ref: ArchitectureRef | None = None
    """How to rebuild the architecture for `jeeves replay`: an import path "module:attr" (an
    Architecture, or a zero-argument factory in that module), or a source mapping a registered
    loader understands. A resumed run given none keeps the recorded one."""
    tracer: Tracer | None = None
    """Span hooks; defaults to the one `jeeves.telemetry.configure` installed."""
    approvals: Approvals | None = None
    """The approval policy; None gates nothing (a resumed run given none keeps the recorded one)."""
    approver: Approver | None = None
    """A live approver, `async (PendingGate) -> Decision`; None: the run suspends at an
    undecided gate (`RunResult.status == "awaiting_approval"`)."""
    session_ttl_s: float | None = None
    """A hard limit on the run's life from its first start, across resumes."""
    progress_s: float | None = None
    """Emit `progress` events at most every `progress_s` seconds (and when a gate starts
    waiting); None: none are emitted."""
    max_buffer: int = 256
    """`jeeves.stream` only: how many unread events the run may get ahead of its reader."""

    def __post_init__(self) -> None:
        _check_routing(self.router, self.models)
        if self.budget is not None and not isinstance(self.budget, Budget):
            raise UserTypeError(
                f"budget= must be a jeeves.Budget, got {short_repr(self.budget)}; e.g. Budget(max_usd=1)."
            )
        if self.mode not in ("record", "replay", "resume"):
            raise UserError(
                f"mode={short_repr(self.mode)} is not a journal mode; use 'record' (resumes too) or 'replay'."
            )
        _check_approvals(self.approvals, self.approver)
        if self.session_ttl_s is not None:
            check_number(self.session_ttl_s, name="session_ttl_s", minimum=0)
        if self.progress_s is not None:
            check_number(self.progress_s, name="progress_s", minimum=0)
        check_int(self.max_buffer, name="max_buffer", minimum=0)

    def replace(self, **changes: Any) -> RunOptions:
        """A copy with `changes` applied (checked as the constructor checks them)."""
        return _build(lambda: dataclasses.replace(self, **changes), changes)


class RunKeywords(TypedDict, total=False):
    """The keywords `run`, `stream` and `resume` take: the fields of `RunOptions`."""

    router: Router | None
    model: ModelLike | None
    models: Mapping[str, ModelLike] | None
    budget: Budget | None
    journal: JournalLike | None
    mode: JournalMode
    session_id: str | None
    role: str | None
    architecture_ref: ArchitectureRef | None
    tracer: Tracer | None
    approvals: Approvals | None
    approver: Approver | None
    session_ttl_s: float | None
    progress_s: float | None
    max_buffer: int


def options_of(options: RunOptions | None, keywords: Mapping[str, Any]) -> RunOptions:
    """The options a call runs with: `options` (or the defaults), `keywords` replacing fields."""
    if options is not None and not isinstance(options, RunOptions):
        raise UserTypeError(
            f"options= must be a jeeves.RunOptions, got {short_repr(options)}; "
            f"e.g. RunOptions(model='openai/gpt-4o-mini')."
        )
    base = options if options is not None else _DEFAULT
    return base.replace(**keywords) if keywords else base


_FIELDS = tuple(f.name for f in dataclasses.fields(RunOptions))


def _build(make: Any, given: Mapping[str, Any]) -> RunOptions:
    unknown = [k for k in given if k not in _FIELDS]
    if unknown:
        close = _close_matches(unknown[0], _FIELDS, n=1)
        hint = f"did you mean {close[0]}=?" if close else f"the options are: {', '.join(_FIELDS)}."
        raise UserTypeError(f"{unknown[0]}= is not a run option; {hint}")
    built: RunOptions = make()
    return built


def _check_routing(router: object, models: object) -> None:
    if router is not None and not isinstance(router, Router):
        raise UserTypeError(
            f"router= must be a jeeves.Router, got {short_repr(router)}; or pass models={{...}}."
        )
    if models is not None and not isinstance(models, Mapping):
        raise UserTypeError(
            f"models= must map roles to models, got {short_repr(models)}; e.g. models={{'critic': 'openai/gpt-4o'}}."
        )


def _check_approvals(approvals: object, approver: object) -> None:
    if approvals is not None and not isinstance(approvals, Approvals):
        raise UserTypeError(
            f"approvals= must be a jeeves.approvals.Approvals, got {short_repr(approvals)}; "
            f"e.g. Approvals(auto=('read_only', 'local_write'))."
        )
    if approver is not None and not callable(approver):
        raise UserTypeError(
            f"approver= must be an async function taking a PendingGate and returning a Decision, "
            f"got {short_repr(approver)}."
        )


_DEFAULT = RunOptions()


def _close_matches(word: str, choices: Sequence[str], n: int) -> list[str]:
    import difflib  # only when a mistake is reported: `import jeeves` stays light

    return difflib.get_close_matches(word, choices, n=n)
