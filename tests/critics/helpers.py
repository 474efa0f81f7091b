"""Run one critic review as its own session, the way the critic loops do."""

from __future__ import annotations

from typing import Any

import jeeves
from jeeves.critics import Critic, CriticSession, Review, Verdict
from jeeves.journal.records import JournalMode
from jeeves.models.testing import ScriptedModel


async def review(
    critic: Critic,
    output: str,
    *,
    task: str = "Write add(a, b).",
    model: Any = None,
    journal: Any = None,
    mode: JournalMode = "record",
    session_id: str = "rev",
) -> Verdict:
    session = CriticSession(critic, Review(task=task, output=output, round=0, prompt=f"{task}\n\n{output}"))
    result = await jeeves.run(
        session,
        "review",
        model=model or ScriptedModel([]),
        journal=journal,
        mode=mode,
        session_id=session_id,
    )
    assert isinstance(result.output, Verdict)
    return result.output
