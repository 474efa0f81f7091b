"""Generate code with an ActorCritic: a coder, a reviewer model, and your own tests.

The critic is two critics combined: `CodeCritic` runs the coder's Python against a pytest
file in a subprocess, and `LLMCritic` asks a reviewer model for a verdict. A failing
test blocks approval whatever the reviewer says.

Offline (the default), the coder and the reviewer are scripted: the coder's first draft
fails a test, the reviewer's critique and the failing test go back to it, and its second
draft passes. The tests really run. With `--live`, both are real models:

    python examples/codegen_actor_critic.py
    python examples/codegen_actor_critic.py --live \
        --actor-model anthropic/claude-sonnet-4-5 --critic-model openai/gpt-4o
"""

from __future__ import annotations

import argparse
import sys

import anyio

import jeeves
from jeeves import ActorCritic, Agent, CodeCritic, LLMCritic, Router, ScriptedModel
from jeeves.architectures import ActorCriticOutput

TASK = (
    "Write a Python function slugify(text: str) -> str that lowercases the text, replaces every "
    "run of characters other than a-z and 0-9 with a single '-', and strips '-' from both ends."
)

TESTS = """\
from solution import slugify


def test_lowercases_and_joins_words():
    assert slugify("Hello World") == "hello-world"


def test_collapses_runs_of_separators():
    assert slugify("a  --  b") == "a-b"


def test_strips_separators_at_the_ends():
    assert slugify("  Jeeves, at your service! ") == "jeeves-at-your-service"
"""

FIRST_DRAFT = """\
Here is a first version:

```python
def slugify(text: str) -> str:
    out = "".join(c if c.isalnum() else "-" for c in text.lower())
    return out.strip("-")
```
"""

SECOND_DRAFT = """\
Fixed: runs of separators now collapse into one dash.

```python
import re


def slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
```
"""


def offline_router() -> Router:
    coder = ScriptedModel({"actor": [FIRST_DRAFT, SECOND_DRAFT]}, model_name="scripted-coder")
    reviewer = ScriptedModel(
        {
            "critic": [
                '{"score": 0.6, "issues": ["runs of separators are not collapsed"], "summary": "Almost."}',
                '{"score": 0.95, "issues": [], "summary": "Correct and clear."}',
            ]
        },
        model_name="scripted-reviewer",
    )
    return Router({"actor": coder, "critic": reviewer})


def show(event: jeeves.Event) -> None:
    if event.type == "session.started" and event.parent_id is not None:
        print(f"  {event.session_id} ({event.architecture}, model {event.model})")
    elif event.type == "round.started":
        print(f"round {event.round}")
    elif event.type == "critique":
        verdict = "approved" if event.passed else "not approved"
        print(f"  critique: score {event.score:.2f}, {verdict} ({event.source}, {event.obtained})")
        for issue in event.issues:
            print("    - " + issue.replace("\n", "\n      "))
    elif event.type == "critic.failed":
        print(f"  the critic failed: {event.error_type}: {event.message}")


async def main(live: bool, actor_model: str, critic_model: str) -> int:
    router = Router({"actor": actor_model, "critic": critic_model}) if live else offline_router()
    coder = ActorCritic(
        Agent("You write correct, simple Python. Reply with the code in one ```python block.", role="coder"),
        [CodeCritic(TESTS, timeout_s=30), LLMCritic()],
        max_rounds=3,
    )
    async with jeeves.stream(coder, TASK, router=router, session_id="slugify") as events:
        async for event in events:
            show(event)
        result = await events.result()
    detail = result.detail
    assert isinstance(detail, ActorCriticOutput)
    print(f"\nstop reason: {result.stop_reason}; best round: {detail.best_round}")
    print(f"scores by round: {[r.score for r in detail.rounds]}")
    for role, usage in sorted(result.usage_by_role.items()):
        print(f"usage[{role}]: {usage.model_calls} calls, {usage.total_tokens} tokens, ${usage.cost_usd:.4f}")
    print("\n" + result.text)
    return 0 if result.stop_reason == "approved" else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--live", action="store_true", help="use real models instead of scripted ones")
    parser.add_argument("--actor-model", default="anthropic/claude-sonnet-4-5")
    parser.add_argument("--critic-model", default="openai/gpt-4o")
    args = parser.parse_args()
    try:
        sys.exit(anyio.run(main, args.live, args.actor_model, args.critic_model))
    except jeeves.JeevesError as exc:  # a missing API key, a provider that failed: one line, no traceback
        sys.exit(f"error: {exc}")
