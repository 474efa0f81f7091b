"""jeevesagent's fake model: `ScriptedModel([ScriptedTurn(text=...), ...])`, as a jeeves model.

Each Agent of jeevesagent's tests carries its own ScriptedModel, answering its calls in
order; this one is a jeeves `ScriptedModel` with a single script, so the same lines run
on jeeves. A turn's usage defaults to zero tokens (jeevesagent's), one model call.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from jeeves.messages import ToolCall as JeevesToolCall
from jeeves.messages import Usage
from jeeves.models.testing import Reply
from jeeves.models.testing import ScriptedModel as _ScriptedModel

__all__ = ["ScriptedModel", "ScriptedTurn", "ToolCall"]


@dataclass
class ToolCall:
    """jeevesagent's tool call: `ToolCall(id="c1", tool="delegate", args={...})`."""

    id: str = ""
    tool: str = ""
    args: Mapping[str, Any] = field(default_factory=dict)

    def as_jeeves(self) -> JeevesToolCall:
        return JeevesToolCall(id=self.id, name=self.tool, arguments=json.dumps(dict(self.args)))


@dataclass
class ScriptedTurn:
    """One scripted model reply: text, tool calls, and (optionally) its usage."""

    text: str = ""
    tool_calls: Sequence[ToolCall] = ()
    usage: Usage | None = None


def _reply(turn: ScriptedTurn) -> Reply:
    usage = turn.usage or Usage(model_calls=1)
    return Reply(text=turn.text, tool_calls=[c.as_jeeves() for c in turn.tool_calls], usage=usage)


class ScriptedModel(_ScriptedModel):
    """Answers each call with the next scripted turn (a jeeves ScriptedModel with one script)."""

    def __init__(self, turns: Sequence[ScriptedTurn], *, model_name: str = "scripted") -> None:
        super().__init__([_reply(t) for t in turns], model_name=model_name)
