"""jeevesagent code, unchanged, running on jeeves through `jeeves.compat.jeevesagent`.

The code below is jeevesagent's: its `Agent`s as actor and critic, its `ActorCritic`
(`max_rounds` counting reviews, `approval_threshold`, a refine template with its
placeholders `{prompt}`, `{output}`, `{critique}`, `{issues_bulleted}`), and a host
`Agent(..., architecture=coder)` whose `stream()` yields jeevesagent's events. Only the
import changed. What runs is jeeves' own ActorCritic: typed events, deterministic
session ids, a journal that replays, and per-role routing (the critic on another model).

Offline (the default) the coder and the reviewer are scripted: the first draft is
reviewed at 0.6 with two issues, which the refine prompt hands back as bullets; the
second draft is approved. `--live` routes the actor to `$JEEVES_MODEL` (default
`openai/gpt-4o-mini`) and the critic to `$JEEVES_CRITIC_MODEL` (default the same):

    python examples/from_jeevesagent.py
    JEEVES_CRITIC_MODEL=openai/gpt-4o python examples/from_jeevesagent.py --live
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import anyio

import jeeves
from jeeves import Router, ScriptedModel
from jeeves.compat.jeevesagent import ActorCritic, Agent  # was: from jeevesagent import ActorCritic, Agent

TASK = "Write slugify(text) in Python: lowercase, runs of other characters become one '-'."

REFINE_TEMPLATE = """\
Task: {prompt}

Your previous answer:
{output}

The reviewer's verdict: {critique}
Fix each of these:
{issues_bulleted}

Reply with the whole revised code only."""

coder = ActorCritic(
    actor=Agent("You write correct, simple Python. Reply with the code in one ```python block."),
    critic=Agent("You are a strict Python reviewer. Judge correctness first."),
    max_rounds=3,
    approval_threshold=0.9,
    refine_template=REFINE_TEMPLATE,
)

FIRST = "```python\ndef slugify(text):\n    return text.lower().replace(' ', '-')\n```"
SECOND = (
    "```python\nimport re\n\n\ndef slugify(text: str) -> str:\n"
    '    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")\n```'
)


def offline_router() -> Router:
    reviews = [
        {
            "issues": ["punctuation is kept", "runs of spaces give several dashes"],
            "score": 0.6,
            "summary": "Close.",
        },
        {"issues": [], "score": 0.95, "summary": "Correct."},
    ]
    return Router(
        {
            "actor": ScriptedModel([FIRST, SECOND], model_name="scripted-coder"),
            "critic": ScriptedModel([json.dumps(r) for r in reviews], model_name="scripted-reviewer"),
        }
    )


def live_router() -> Router:
    actor = os.environ.get("JEEVES_MODEL", "openai/gpt-4o-mini")
    return Router({"default": actor, "critic": os.environ.get("JEEVES_CRITIC_MODEL", actor)})


async def main(live: bool) -> int:
    router = live_router() if live else offline_router()
    async with jeeves.stream(coder, TASK, router=router, session_id="example") as events:
        async for event in events:
            if event.type == "session.started" and event.parent_id is not None:
                print(f"  {event.session_id} ({event.role}, model {event.model})")
            elif event.type == "critique":
                verdict = "approved" if event.passed else "not approved"
                print(f"  critique: score {event.score:.2f}, {verdict}")
                for issue in event.issues:
                    print(f"    - {issue}")
        result = await events.result()
    print(f"stop reason: {result.stop_reason}")
    print(result.text)
    if not live:  # the same loop as jeevesagent code sees it: its events and its RunResult
        host = Agent("host", architecture=coder)
        async for event in host.stream(TASK, router=offline_router(), session_id="example-ja"):
            if event.kind == "architecture_event" and event.payload["name"] == "actor_critic.critique":
                print(
                    f"  actor_critic.critique round {event.payload['round']}: score {event.payload['score']}"
                )
            elif event.kind == "completed":
                done = event.payload["result"]
                print(f"jeevesagent RunResult: turns {done['turns']}, interrupted {done['interrupted']}")
    return 0 if result.stop_reason == "approved" else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--live", action="store_true", help="use real models through litellm")
    args = parser.parse_args()
    try:
        sys.exit(anyio.run(main, args.live))
    except jeeves.JeevesError as exc:  # a missing API key, a provider that failed: one line, no traceback
        sys.exit(f"error: {exc}")
