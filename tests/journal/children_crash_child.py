"""The process the children crash test kills: an ActorCritic whose critic is a model, journaled
into SQLite, killed while the actor's second call runs.

Run as `python -m tests.journal.children_crash_child JOURNAL [block]`. By then the critic's
session has ended, and its record, which nothing waits on, is not committed yet (a SQL store
commits a child's record with its next call); with `block` the actor's second call prints
`blocked` and hangs until the test kills the process. Prints the run's result as JSON.
"""

from __future__ import annotations

import json
import sys

import anyio

import jeeves
from jeeves import ActorCritic, Agent, FunctionModel
from jeeves.critics import LLMCritic
from jeeves.messages import ModelRequest
from tests.journal.archs import _last_user, _review
from tests.waiting import hang_until_killed


async def checked_run(journal: str, block: bool = False) -> jeeves.RunResult:
    def write(request: ModelRequest) -> str:
        if "subtracts" not in _last_user(request):
            return "def add(a, b): return a - b"
        if block:
            print("blocked", flush=True)  # the test waits for this line
            hang_until_killed()
        return "def add(a, b): return a + b"

    arch = ActorCritic(Agent("You write code."), [LLMCritic()], max_rounds=2)
    models = {
        "actor": FunctionModel(write, model_name="coder-model"),
        "critic": FunctionModel(_review, model_name="critic-model"),
    }
    return await jeeves.run(arch, "Write add(a, b).", models=models, journal=journal, session_id="job")


async def main(journal: str, block: bool) -> None:
    result = await checked_run(journal, block)
    print(json.dumps({"text": result.text, "stop_reason": result.stop_reason}))


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2:] == ["block"])
