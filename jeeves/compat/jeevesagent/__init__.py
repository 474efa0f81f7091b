"""jeevesagent 0.9 code, running on jeeves: change the import, keep the code.

```python
from jeeves.compat.jeevesagent import ActorCritic, Agent  # was: from jeevesagent import ...

coder = Agent(
    "host",
    architecture=ActorCritic(
        actor=Agent("You write Python.", model="anthropic/claude-sonnet-4-5"),
        critic=Agent("You review Python.", model="openai/gpt-4o"),
    ),
)
result = await coder.run("Write slugify(text).")
result.output, result.interrupted, result.interruption_reason
```

- `Agent` (`agent`): jeevesagent's Agent front: `run()` returns its RunResult,
  `stream()` its events (`events`: `kind`, `payload["name"]`, by a documented mapping).
- `ActorCritic`, `CriticOutput`, `parse_critique` (`actor_critic`), `SelfRefine`
  (`self_refine`), `Supervisor` (`supervisor`), `ReAct`: jeevesagent's constructors,
  defaults, prompts and results, built on jeeves' sessions, journal and replay.
- `ScriptedModel`, `ScriptedTurn`, `ToolCall`: jeevesagent's fake model, as a jeeves model.

`import jeeves` imports none of this. What differs from jeevesagent, and why, is the
table in docs/coming-from-jeevesagent.md.
"""

from jeeves.agent.tools import Tool, tool
from jeeves.compat.jeevesagent._testing import ScriptedModel, ScriptedTurn, ToolCall
from jeeves.compat.jeevesagent.actor_critic import (
    DEFAULT_CRITIQUE_TEMPLATE,
    DEFAULT_REFINE_TEMPLATE,
    ActorCritic,
    CriticOutput,
    parse_critique,
)
from jeeves.compat.jeevesagent.agent import Agent, ReAct, RunResult
from jeeves.compat.jeevesagent.agent import Bindable as Architecture
from jeeves.compat.jeevesagent.events import EVENT_NAMES, Event
from jeeves.compat.jeevesagent.self_refine import SelfRefine
from jeeves.compat.jeevesagent.supervisor import Supervisor

__all__ = [
    "DEFAULT_CRITIQUE_TEMPLATE",
    "DEFAULT_REFINE_TEMPLATE",
    "EVENT_NAMES",
    "ActorCritic",
    "Agent",
    "Architecture",
    "CriticOutput",
    "Event",
    "ReAct",
    "RunResult",
    "ScriptedModel",
    "ScriptedTurn",
    "SelfRefine",
    "Supervisor",
    "Tool",
    "ToolCall",
    "parse_critique",
    "tool",
]
