"""The process the crash test kills: an Agent whose model is a local OpenAI-compatible server.

Run as `python -m tests.journal.crash_child BASE_URL JOURNAL SESSION_ID [BLOCK_AT]`. Each
model reply asks for `tick(n)`; with BLOCK_AT set, tick BLOCK_AT writes `JOURNAL.blocked`
and hangs (in its worker thread), so the test can SIGKILL the process at a known point (after BLOCK_AT model
calls have completed and been journaled). Prints the run's result as JSON when it ends.
The test runs `tick_run` in its own process too, for the runs it does not kill.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio

import jeeves
from jeeves.models.litellm import LiteLLMClient
from tests.waiting import hang_until_killed


async def tick_run(
    base_url: str, journal: str, session_id: str, block_at: int | None = None
) -> jeeves.RunResult:
    @jeeves.tool
    def tick(n: int) -> str:
        """Count one tick."""
        if n == block_at:
            Path(journal + ".blocked").write_text(str(n))
            print("blocked", flush=True)  # the test waits for this line
            hang_until_killed()  # until SIGKILL (stdin held open by the test)
        return f"tick {n} done"

    router = jeeves.Router(
        {"default": "openai/mock-model"}, client=LiteLLMClient(api_base=base_url, api_key="test")
    )
    agent = jeeves.Agent("Tick until told to stop.", role="ticker", tools=[tick], max_turns=20)
    return await jeeves.run(agent, "Tick four times.", router=router, journal=journal, session_id=session_id)


async def main(base_url: str, journal: str, session_id: str, block_at: int | None) -> None:
    result = await tick_run(base_url, journal, session_id, block_at)
    print(json.dumps({"text": result.text, "model_calls": result.usage.model_calls}))


if __name__ == "__main__":
    url, path, sid, *rest = sys.argv[1:]
    anyio.run(main, url, path, sid, int(rest[0]) if rest else None)
