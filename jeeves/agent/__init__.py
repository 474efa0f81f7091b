"""The leaf architecture: an `Agent` (a model with tools, turn after turn) and its tools.

`Agent` runs a model in a loop, calling the tools it asks for; `@tool` turns a typed
function into a `Tool`.
"""

from jeeves.agent.agent import Agent, extract_json
from jeeves.agent.tools import (
    APPROVAL_MODES,
    ApprovalMode,
    Tool,
    ToolContext,
    ToolOutcome,
    Toolset,
    current_tool,
    idempotency_key,
    tool,
)

__all__ = [
    "APPROVAL_MODES",
    "Agent",
    "ApprovalMode",
    "Tool",
    "ToolContext",
    "ToolOutcome",
    "Toolset",
    "current_tool",
    "extract_json",
    "idempotency_key",
    "tool",
]
