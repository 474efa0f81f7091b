"""Runs the explorer tests record: a priced critic loop whose second draft changes one line.

    reviewed (ActorCritic, threshold 0.8)
    ├── actor_0 → critic_0 (0.4: "subtracts")
    └── actor_1 → critic_1 (0.9, approved: the best round)

Every model call is priced (sub-cent), so no cost in the page may read $0.0000.
`record(path)` records one run with `architecture_ref` pointing here, so a server (or
`jeeves replay`) in another process rebuilds the architecture from the journal.
"""

from __future__ import annotations

import os

import jeeves
from jeeves import ActorCritic, Agent, LLMCritic, Router, ScriptedModel
from jeeves.messages import Usage
from jeeves.testing import Reply

TASK = "Write add(a, b)."
FIRST = "def add(a, b):\n    # add two numbers\n    return a - b"
SECOND = "def add(a, b):\n    # add two numbers\n    return a + b"


def reviewed() -> ActorCritic:
    return ActorCritic(Agent("You write Python."), LLMCritic(), max_rounds=2, threshold=0.8)


def priced(cost: float) -> Usage:
    return Usage(input_tokens=20, output_tokens=10, model_calls=1, cost_usd=cost)


def reviewed_router() -> Router:
    return Router(
        {
            "default": ScriptedModel(
                {
                    "actor": [
                        Reply(text=FIRST, usage=priced(0.000012)),
                        Reply(text=SECOND, usage=priced(0.000013)),
                    ],
                    "critic": [
                        Reply(
                            text='{"score": 0.4, "issues": ["subtracts instead of adding"], "summary": "wrong sign"}',
                            usage=priced(0.000019),
                        ),
                        Reply(
                            text='{"score": 0.9, "issues": [], "summary": "correct"}', usage=priced(0.000021)
                        ),
                    ],
                },
                model_name="scripted",
            )
        }
    )


async def record(path: str | os.PathLike[str], session_id: str = "rec-1") -> None:
    await jeeves.run(
        reviewed(),
        TASK,
        router=reviewed_router(),
        journal=path,
        session_id=session_id,
        architecture_ref="tests.server.explorer_runs:reviewed",
    )
