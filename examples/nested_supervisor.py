"""A supervisor whose workers include another supervisor, followed live as a tree.

    python examples/nested_supervisor.py           # offline: scripted models, no network
    python examples/nested_supervisor.py --live    # real models through litellm

The team:

    lead (Supervisor)
    ├── research (Agent)                      looks things up
    └── engineering (Supervisor)
        └── coder (ActorCritic)
            ├── actor (Agent)                 writes the code
            └── critic (LLMCritic)            reviews it until it is right

The lead sends research and engineering off in the same reply, so they run at once;
engineering delegates to its reviewed coder and forwards the approved code verbatim; the
lead writes the answer. Every session id is derived from the root id
(`example__engineering_0__coder_0__critic_1`), so the offline script below keys its
replies on them.

`--live` routes every role to `$JEEVES_MODEL` (default `openai/gpt-4o-mini`; set the
provider's API key), and the coder's critic to `$JEEVES_CRITIC_MODEL` when that is set
(the route key `coder.critic`: another model reviewing is the point of a critic).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TextIO

import anyio

import jeeves
from jeeves import ActorCritic, Agent, LLMCritic, Router, ScriptedModel, Supervisor
from jeeves.testing import Reply, call

TASK = "Write a Python function slugify(title) and tell me how it treats accented letters."

BUGGY = (
    "import re\n\n\ndef slugify(title: str) -> str:\n"
    '    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")\n'
)
CODE = (
    "import re\nimport unicodedata\n\n\ndef slugify(title: str) -> str:\n"
    '    ascii_title = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode()\n'
    '    return re.sub(r"[^a-z0-9]+", "-", ascii_title.lower()).strip("-")\n'
)


def team() -> Supervisor:
    research = Agent(
        "You research Python techniques and answer in two or three sentences.",
        description="Looks up how to do something in Python and explains it briefly.",
    )
    coder = ActorCritic(
        Agent("You write small, correct, typed Python functions. Reply with the code only."),
        LLMCritic(),
        max_rounds=2,
    )
    engineering = Supervisor(
        {"coder": coder},
        instructions=(
            "You lead engineering. Delegate the code to the coder, whose work is reviewed, then "
            "forward the coder's output if it is right; otherwise delegate again with what to fix."
        ),
        description="Builds and checks code; returns the finished code.",
    )
    return Supervisor({"research": research, "engineering": engineering})


def verdict(score: float, summary: str, *issues: str) -> str:
    """A critic's reply in the JSON form LLMCritic asks for."""
    return json.dumps({"score": score, "issues": list(issues), "summary": summary})


def offline_model() -> ScriptedModel:
    """Replies keyed on session ids, so parallel workers each get their own script."""
    eng = "example__engineering_0"
    return ScriptedModel(
        {
            "example": [
                Reply(
                    text="I'll ask research and engineering at the same time.",
                    tool_calls=[
                        call("delegate", {"worker": "research", "instructions": "How do I strip accents?"}),
                        call("delegate", {"worker": "engineering", "instructions": "Write slugify(title)."}),
                    ],
                ),
                f"Here is slugify:\n\n{CODE}\nAccented letters are decomposed (NFKD) and their accents "
                "dropped, so 'Crème Brûlée' becomes 'creme-brulee'.",
            ],
            "example__research_0": [
                "Decompose the text with unicodedata.normalize('NFKD'), then drop the combining "
                "marks by encoding to ASCII with errors='ignore'."
            ],
            eng: [
                Reply(tool_calls=[call("delegate", {"worker": "coder", "instructions": "Write slugify."})]),
                Reply(tool_calls=[call("forward", {"worker": "coder"})]),
            ],
            f"{eng}__coder_0__actor_0": [BUGGY],
            f"{eng}__coder_0__critic_0": [
                verdict(
                    0.3, "Wrong for accented titles.", "'Crème' becomes 'cr-me': apply NFKD, drop accents."
                )
            ],
            f"{eng}__coder_0__actor_1": [CODE],
            f"{eng}__coder_0__critic_1": [verdict(1.0, "Correct.")],
        },
        model_name="scripted",
    )


def live_router() -> Router:
    routes: dict[str, str] = {"default": os.environ.get("JEEVES_MODEL", "openai/gpt-4o-mini")}
    if os.environ.get("JEEVES_CRITIC_MODEL"):
        routes["coder.critic"] = os.environ["JEEVES_CRITIC_MODEL"]
    return Router(routes)


async def main(live: bool = False, out: TextIO = sys.stdout) -> jeeves.RunResult:
    """Run the team, printing the session tree and delegations as they happen."""
    router = live_router() if live else Router({"default": offline_model()})
    depth: dict[str, int] = {}
    async with jeeves.stream(team(), TASK, router=router, session_id="example") as events:
        async for event in events:
            pad = "  " * depth.get(event.session_id, 0)
            if event.type == "session.started":
                depth[event.session_id] = depth.get(event.parent_id or "", -1) + 1
                pad = "  " * depth[event.session_id]
                print(f"{pad}▶ {event.session_id} [{event.architecture}, {event.model or '-'}]", file=out)
            elif event.type == "delegation.started":
                print(f"{pad}  → {event.worker}: {event.instructions}", file=out)
            elif event.type == "delegation.completed":
                status = "failed" if event.is_error else "done"
                print(f"{pad}  ← {event.worker} {status} ({event.usage.model_calls} model calls)", file=out)
            elif event.type == "critique":
                print(f"{pad}  ✎ round {event.round}: score {event.score:.1f} {event.summary}", file=out)
            elif event.type == "session.completed":
                print(f"{pad}■ {event.session_id} {event.stop_reason}", file=out)
        result = await events.result()
    print(f"\n{result.text}\n", file=out)
    detail = result.detail
    workers = getattr(detail, "usage_by_worker", {})
    print("model calls by worker:", {w: u.model_calls for w, u in workers.items()}, file=out)
    print("model calls by role:", {r: u.model_calls for r, u in result.usage_by_role.items()}, file=out)
    print(f"total: {result.usage.model_calls} calls, ${result.cost_usd:.4f}", file=out)
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--live", action="store_true", help="use real models through litellm")
    args = parser.parse_args()
    try:
        anyio.run(main, args.live)
    except jeeves.JeevesError as exc:  # a missing API key, a provider that failed: one line, no traceback
        sys.exit(f"error: {exc}")
