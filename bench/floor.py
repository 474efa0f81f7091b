"""The floor: the same model calls, made by a hand-written asyncio loop with no framework.

What a framework adds per model call is its time per run minus this, divided by the
number of calls. The loop does only what the work needs: build the messages, await the
model, parse the critic's JSON, format the next prompt. No events, no journal, no ids.
Run: `python bench/floor.py [--mode loops|concurrent]` (prints JSON).
"""

from __future__ import annotations

import platform
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common

Messages = list[dict[str, Any]]


async def model(role: str, messages: Messages) -> Any:
    """A zero-latency model: one trip through the event loop, then the answer."""
    await common.provider_wait()
    prompt = messages[-1]["content"]
    if role == "actor":
        return common.actor_reply(prompt)
    if role == "critic":
        return common.critic_reply(prompt)
    if role == "worker":
        return common.worker_reply()
    return common.supervisor_reply(messages[-1]["role"] == "tool")


async def actor_critic() -> int:
    """(a): draft, review, revise until approved (or three rounds)."""
    prompt = common.TASK
    best, best_score = "", -1.0
    for _ in range(3):
        draft = await model(
            "actor", [{"role": "system", "content": "You write code."}, {"role": "user", "content": prompt}]
        )
        review = [
            {"role": "system", "content": "You review code."},
            {"role": "user", "content": common.critique_prompt(common.TASK, draft)},
        ]
        verdict = common.verdict_for(await model("critic", review))
        if verdict["score"] >= best_score:
            best, best_score = draft, verdict["score"]
        if verdict["score"] >= common.APPROVE_AT:
            break
        prompt = common.refine_prompt(common.TASK, draft, verdict)
    assert best == common.DRAFTS[2]
    return 0


async def supervisor() -> int:
    """(b): the supervisor delegates once, the worker answers, the supervisor sums up."""
    messages: Messages = [
        {"role": "system", "content": "You coordinate."},
        {"role": "user", "content": common.TASK},
    ]
    call = await model("supervisor", messages)
    messages.append({"role": "assistant", "tool_calls": [call]})
    result = await model(
        "worker",
        [{"role": "system", "content": "You write code."}, {"role": "user", "content": call["instructions"]}],
    )
    messages.append({"role": "tool", "content": result})
    final = await model("supervisor", messages)
    assert final == common.SUMMARY
    return 0


if __name__ == "__main__":
    common.main(
        {"a": (actor_critic, common.CALLS_A), "b": (supervisor, common.CALLS_B)},
        {"python": platform.python_version()},
    )
