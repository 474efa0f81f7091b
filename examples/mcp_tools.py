"""An agent whose tools come from an MCP server: annotations become approval modes, every call
is journaled, and the run replays offline with the server gone.

    python examples/mcp_tools.py                  # offline: a scripted model, the real server
    python examples/mcp_tools.py --journal runs.db
    python examples/mcp_tools.py --live           # the agent on $JEEVES_MODEL through litellm

The server is examples/mcp/notes_server.py, a small MCP server written with the `mcp` SDK
(the `mcp` extra), started over stdio. Its `list_notes` is readOnlyHint and `add_note`
additive, so both run inline; `delete_note` is destructiveHint, so the default approval
policy gates it, and the approver here denies it: the note stays. Then the run is replayed
from the journal with a server that could not even start: nothing asks it anything.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import anyio

import jeeves
from jeeves import Agent, Router
from jeeves.approvals import Approvals, Decision, PendingGate
from jeeves.mcp import MCPServer
from jeeves.testing import Reply, ScriptedModel, call

SERVER = Path(__file__).resolve().parent / "mcp" / "notes_server.py"
TASK = "Note that the release is on Friday, then tidy the notes."


def notes_server(notes: Path, *, cwd: str | None = None) -> MCPServer:
    return MCPServer.stdio(sys.executable, str(SERVER), str(notes), name="notes", cwd=cwd)


def offline_model() -> ScriptedModel:
    return ScriptedModel(
        [
            Reply(tool_calls=[call("add_note", {"text": "release on Friday"}), call("list_notes")]),
            Reply(tool_calls=[call("delete_note", {"number": 1})]),
            "Noted the release; deleting the old note was denied, so it stays.",
        ]
    )


async def deny_deletes(gate: PendingGate) -> Decision:
    print(f"   gate {gate.gate_id}: {gate.tool}({gate.arguments}) is {gate.mode}: denied")
    return Decision.deny(gate, by="example", note="keep every note")


async def main(live: bool, journal: str) -> None:
    folder = Path(tempfile.mkdtemp(prefix="jeeves-notes-"))
    notes = folder / "notes.json"
    notes.write_text('["ship the docs"]')
    model = None if live else offline_model()
    router = Router({"default": os.environ.get("JEEVES_MODEL", "openai/gpt-4o-mini")}) if live else None

    def agent(server: MCPServer) -> Agent:
        return Agent("You keep the team's notes with your tools.", tools=[server], model=model)

    print("1. run, the notes server started over stdio:")
    result = await jeeves.run(
        agent(notes_server(notes)),
        TASK,
        router=router,
        journal=journal,
        session_id="notes-1",
        approvals=Approvals(),
        approver=deny_deletes,
    )
    print(f"   {result.status}: {result.text}")
    print(f"   notes now: {notes.read_text()}")

    print("2. replay from the journal, the server absent:")
    replayed = await jeeves.run(
        agent(notes_server(notes, cwd=str(folder / "gone"))),  # it could not start there
        TASK,
        journal=journal,
        session_id="notes-1",
        mode="replay",
        approvals=Approvals(),
    )
    print(f"   same text: {replayed.text == result.text}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--live", action="store_true", help="use a real model through litellm")
    parser.add_argument("--journal", default=None, help="record here (default: a temporary file)")
    args = parser.parse_args()
    path = args.journal or str(Path(tempfile.mkdtemp(prefix="jeeves-journal-")) / "runs.jsonl")
    try:
        anyio.run(main, args.live, path)
    except jeeves.JeevesError as exc:  # a missing API key, a provider that failed: one line, no traceback
        sys.exit(f"error: {exc}")
