"""The leaf architecture: an `Agent` (a model with tools, turn after turn), its tools, and
the interventions that steer it between turns.

`Agent` runs a model in a loop, calling the tools it asks for, each wrapped by the run's
approval policy (`jeeves.agent.gating.Gated`); `@tool` turns a typed function into a
`Tool`; an `Intervener` sees each `Turn` and may return an `Intervention` (messages added
to the conversation, or a stop). A run's `Inbox` holds a person's messages
for its agents (bounded: `MessageTooLarge`, `InboxFull`).
"""

from jeeves._run.steering import Inbox, InboxFull, Intervener, Intervention, MessageTooLarge, Turn
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
    "Inbox",
    "InboxFull",
    "Intervener",
    "Intervention",
    "MessageTooLarge",
    "Tool",
    "ToolContext",
    "ToolOutcome",
    "Toolset",
    "Turn",
    "current_tool",
    "extract_json",
    "idempotency_key",
    "tool",
]
