"""`jeeves demo`: an offline run with scripted models, shown live as a session tree."""

from __future__ import annotations

import sys

from jeeves.agent import Agent
from jeeves.models.testing import Reply, ScriptedModel, call
from jeeves.runner import stream
from jeeves.terminal import follow
from jeeves.tools import tool

__all__ = ["demo_agent", "run_demo"]


@tool
def word_count(text: str) -> int:
    """Count the words in a text."""
    return len(text.split())


def demo_model() -> ScriptedModel:
    return ScriptedModel(
        {
            "counter": [
                Reply(tool_calls=[call("word_count", {"text": "the quick brown fox"})]),
                "The text 'the quick brown fox' has 4 words.",
            ]
        },
        model_name="scripted-demo",
    )


def demo_agent() -> Agent:
    """The demo's agent, pinned to a fresh scripted model (a scripted model serves one run)."""
    return Agent(
        "You count words with the word_count tool.", role="counter", tools=[word_count], model=demo_model()
    )


async def run_demo(as_json: bool = False) -> int:
    out = sys.stdout
    async with stream(demo_agent(), "How many words in 'the quick brown fox'?", session_id="demo") as events:
        await follow(events, as_json=as_json, file=out)
        result = await events.result()
    if not as_json:
        out.write(f"\nresult: {result.output}\nstop reason: {result.stop_reason}; usage: {result.usage}\n")
    return 0
