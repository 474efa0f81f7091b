"""A tiny MCP server (the `mcp` SDK's own `MCPServer`) that keeps notes in a JSON file.

    python examples/mcp/notes_server.py NOTES.json      # speaks MCP on stdin/stdout

Its tools say what they do with MCP annotations, which jeeves reads as approval modes:
`list_notes` is readOnlyHint (read_only), `add_note` adds and touches nothing outside the
file (local_write), `delete_note` is destructiveHint (destructive: gated by a default policy).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

NOTES = Path(sys.argv[1] if len(sys.argv) > 1 else "notes.json")
server = MCPServer("notes", log_level="WARNING")


def _load() -> list[str]:
    return list(json.loads(NOTES.read_text())) if NOTES.exists() else []


def _save(notes: list[str]) -> None:
    NOTES.write_text(json.dumps(notes, indent=1))


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def list_notes() -> str:
    """List the notes, numbered from 1."""
    return "\n".join(f"{i}. {note}" for i, note in enumerate(_load(), 1)) or "(no notes)"


@server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=False, openWorldHint=False))
def add_note(text: str) -> str:
    """Add a note."""
    notes = [*_load(), text]
    _save(notes)
    return f"added note {len(notes)}"


@server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=True, openWorldHint=False))
def delete_note(number: int) -> str:
    """Delete note `number` (from list_notes)."""
    notes = _load()
    if not 1 <= number <= len(notes):
        raise ValueError(f"there is no note {number}; list_notes shows {len(notes)}")
    removed = notes.pop(number - 1)
    _save(notes)
    return f"deleted note {number}: {removed}"


if __name__ == "__main__":
    server.run()
