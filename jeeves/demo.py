"""`jeeves demo`: an offline run with scripted models, printed live as it happens."""

from __future__ import annotations

import sys

from jeeves.agent import Agent
from jeeves.events import event_to_json
from jeeves.models.testing import Reply, ScriptedModel, call
from jeeves.runner import stream
from jeeves.tools import tool

__all__ = ["run_demo"]


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


async def run_demo(as_json: bool = False) -> int:
    agent = Agent("You count words with the word_count tool.", role="counter", tools=[word_count])
    out = sys.stdout
    async with stream(
        agent, "How many words in 'the quick brown fox'?", model=demo_model(), session_id="demo"
    ) as events:
        async for event in events:
            if as_json:
                out.write(event_to_json(event) + "\n")
            elif event.type == "model.delta":
                out.write(event.text)
            else:
                out.write(f"\n[{event.seq:>3}] {event.type:<18} {event.session_id}")
            out.flush()
        result = await events.result()
    if not as_json:
        out.write(f"\n\nresult: {result.output}\nstop reason: {result.stop_reason}; usage: {result.usage}\n")
    return 0
