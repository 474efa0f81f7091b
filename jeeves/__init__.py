"""jeeves: an asyncio agent framework built around critics.

Run an architecture with `await jeeves.run(arch, task)` or follow it live with
`async with jeeves.stream(arch, task) as events`. See https://jeeves.invalid/docs (docs/).
"""

from __future__ import annotations

import inspect as _inspect
from dataclasses import is_dataclass as _is_dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel as _BaseModel

from jeeves._base.ids import child_id
from jeeves._base.lazy import lazy_names as _lazy_names
from jeeves._run.context import Architecture, Context, Output
from jeeves._run.options import RunOptions
from jeeves._run.routes import describe
from jeeves._run.runner import RunResult, RunStream, replay, resume, run, stream
from jeeves.agent.agent import Agent
from jeeves.agent.tools import Tool, tool
from jeeves.approvals.policy import Approvals, Decision, PendingGate
from jeeves.budget import Budget
from jeeves.errors import (
    AgentError,
    BadResponse,
    BudgetExceeded,
    CriticError,
    InvalidCredentials,
    JeevesError,
    JournalError,
    MaxTurnsExceeded,
    MissingCredentials,
    ModelError,
    ModelTimeout,
    OutputValidationError,
    ProviderError,
    RateLimited,
    ReplayDivergence,
    UserError,
)
from jeeves.events import Event, event_from_json, event_to_json
from jeeves.journal import MemoryJournal  # before runner: `jeeves.replay` is the function below
from jeeves.messages import Message, ModelRequest, ModelResponse, ToolCall, Usage
from jeeves.models.base import ModelClient, Route
from jeeves.models.router import Router
from jeeves.stop import BudgetUSD, MaxRounds, NoImprovement, ScoreAtLeast, StopWhen, WallClock

if TYPE_CHECKING:
    from jeeves._run.source import register_loader
    from jeeves.architectures import ActorCritic, BestOfN, Goal, PlanExecute, SelfRefine, Supervisor
    from jeeves.critics import CitationCritic, CodeCritic, LLMCritic, Verdict, Watchdog
    from jeeves.journal import JSONLJournal, SQLiteJournal
    from jeeves.models.testing import FunctionModel, ScriptedModel

# Imported on first use, so `import jeeves` pays for the kernel only (tests/test_import_cost.py).
_LAZY = {
    "register_loader": "jeeves._run.source",
    "FunctionModel": "jeeves.models.testing",
    "ScriptedModel": "jeeves.models.testing",
    "ActorCritic": "jeeves.architectures",
    "BestOfN": "jeeves.architectures",
    "Goal": "jeeves.architectures",
    "PlanExecute": "jeeves.architectures",
    "SelfRefine": "jeeves.architectures",
    "Supervisor": "jeeves.architectures",
    "CitationCritic": "jeeves.critics",
    "CodeCritic": "jeeves.critics",
    "LLMCritic": "jeeves.critics",
    "Verdict": "jeeves.critics",
    "Watchdog": "jeeves.critics",
    "JSONLJournal": "jeeves.journal",
    "SQLiteJournal": "jeeves.journal",
}


_load = _lazy_names("jeeves", _LAZY)


def __getattr__(name: str) -> Any:
    value = _load(name)
    globals()[name] = _shown_here(value)
    return value


def _shown_here(value: Any) -> Any:
    """`value`, shown as `jeeves.X` (httpx's habit): its `__module__` set to "jeeves" unless
    it is a pydantic model or a dataclass, whose annotations resolve in their own module."""
    if isinstance(value, type) and (issubclass(value, _BaseModel) or _is_dataclass(value)):
        return value
    if isinstance(value, type) or _inspect.isfunction(value):
        value.__module__ = "jeeves"
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "ActorCritic",
    "Agent",
    "AgentError",
    "Approvals",
    "Architecture",
    "BadResponse",
    "BestOfN",
    "Budget",
    "BudgetExceeded",
    "BudgetUSD",
    "CitationCritic",
    "CodeCritic",
    "Context",
    "CriticError",
    "Decision",
    "Event",
    "FunctionModel",
    "Goal",
    "InvalidCredentials",
    "JSONLJournal",
    "JeevesError",
    "JournalError",
    "LLMCritic",
    "MaxRounds",
    "MaxTurnsExceeded",
    "MemoryJournal",
    "Message",
    "MissingCredentials",
    "ModelClient",
    "ModelError",
    "ModelRequest",
    "ModelResponse",
    "ModelTimeout",
    "NoImprovement",
    "Output",
    "OutputValidationError",
    "PendingGate",
    "PlanExecute",
    "ProviderError",
    "RateLimited",
    "ReplayDivergence",
    "Route",
    "Router",
    "RunOptions",
    "RunResult",
    "RunStream",
    "SQLiteJournal",
    "ScoreAtLeast",
    "ScriptedModel",
    "SelfRefine",
    "StopWhen",
    "Supervisor",
    "Tool",
    "ToolCall",
    "Usage",
    "UserError",
    "Verdict",
    "WallClock",
    "Watchdog",
    "child_id",
    "describe",
    "event_from_json",
    "event_to_json",
    "register_loader",
    "replay",
    "resume",
    "run",
    "stream",
    "tool",
]

for _name in __all__:
    if _name in globals():
        _shown_here(globals()[_name])
del _name
