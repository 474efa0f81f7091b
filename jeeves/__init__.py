"""jeeves: an asyncio agent framework built around critics.

Run an architecture with `await jeeves.run(arch, task)` or follow it live with
`async with jeeves.stream(arch, task) as events`. See https://jeeves.invalid/docs (docs/).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from jeeves._base.ids import child_id
from jeeves._run.context import Architecture, Context, Output
from jeeves._run.runner import RunResult, RunStream, replay, resume, run, stream
from jeeves.agent.agent import Agent
from jeeves.agent.tools import Tool, tool
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


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'jeeves' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "ActorCritic",
    "Agent",
    "AgentError",
    "Architecture",
    "BadResponse",
    "BestOfN",
    "Budget",
    "BudgetExceeded",
    "CitationCritic",
    "CodeCritic",
    "Context",
    "CriticError",
    "Event",
    "FunctionModel",
    "Goal",
    "InvalidCredentials",
    "JSONLJournal",
    "JeevesError",
    "JournalError",
    "LLMCritic",
    "MaxTurnsExceeded",
    "MemoryJournal",
    "Message",
    "MissingCredentials",
    "ModelClient",
    "ModelError",
    "ModelRequest",
    "ModelResponse",
    "ModelTimeout",
    "Output",
    "OutputValidationError",
    "PlanExecute",
    "ProviderError",
    "RateLimited",
    "ReplayDivergence",
    "Route",
    "Router",
    "RunResult",
    "RunStream",
    "SQLiteJournal",
    "ScriptedModel",
    "SelfRefine",
    "Supervisor",
    "Tool",
    "ToolCall",
    "Usage",
    "UserError",
    "Verdict",
    "Watchdog",
    "child_id",
    "event_from_json",
    "event_to_json",
    "register_loader",
    "replay",
    "resume",
    "run",
    "stream",
    "tool",
]
