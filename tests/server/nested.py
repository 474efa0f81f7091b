"""The nested run the server tests stream: a Supervisor delegating to two ActorCritic workers.

    supervisor (Supervisor)
    ├── coder  (ActorCritic)   actor_0 → critic_0 (0.3) → actor_1 → critic_1 (0.95, approved)
    └── writer (ActorCritic)   actor_0 → critic_0 (0.9, approved)

`nested_router()` serves one run offline: scripts keyed on role paths, so the two workers,
which run in parallel, each read their own.
"""

from __future__ import annotations

from jeeves import ActorCritic, Agent, LLMCritic, Router, ScriptedModel, Supervisor
from jeeves.testing import Reply, call


def worker() -> ActorCritic:
    return ActorCritic(Agent("Write what is asked."), LLMCritic(), max_rounds=2)


def nested() -> Supervisor:
    return Supervisor({"coder": worker(), "writer": worker()})


def nested_model() -> ScriptedModel:
    return ScriptedModel(
        {
            "supervisor": [
                Reply(
                    text="I will ask the coder and the writer.",
                    tool_calls=[
                        call("delegate", {"worker": "coder", "instructions": "Write add(a, b)."}),
                        call("delegate", {"worker": "writer", "instructions": "Document add."}),
                    ],
                ),
                "Done: add is written and documented.",
            ],
            "coder.actor": ["def add(a, b): return a - b", "def add(a, b): return a + b"],
            "coder.critic": [
                '{"score": 0.3, "issues": ["subtracts"], "summary": "subtracts instead of adding"}',
                '{"score": 0.95, "issues": [], "summary": "correct"}',
            ],
            "writer.actor": ["add(a, b) returns the sum of a and b."],
            "writer.critic": ['{"score": 0.9, "issues": [], "summary": "clear"}'],
        },
        model_name="scripted",
    )


def nested_router() -> Router:
    return Router({"default": nested_model()})
