"""Recorded runs for the viewer: a journal file's runs, one run's events by strict replay, its requests.

`GET /journal/runs/{id}/events` needs the run's events, which a journal does not store as
such: it stores steps and sessions. A strict offline replay (what `jeeves replay` does)
rebuilds the architecture from the source recorded with the run and re-emits exactly the
recorded events (marked `replayed`), with nothing run live and no model reached. Their
`ts` is the replay's clock, so the page lays recorded runs out in event order. A replay
that fails part way (no source to rebuild from, a divergence, the recorded failure)
returns the events it produced and the error.

Rebuilding imports the code the journal names: serve only journals you trust.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from pathlib import Path
from typing import Any

from jeeves.errors import UserError
from jeeves.journal import error_type_name
from jeeves.redact import mask_credentials
from jeeves.replay.api import list_runs, open_journal, plan_replay
from jeeves.runner import stream

__all__ = ["JournalBrowser", "NoSuchRun", "view_target"]


class NoSuchRun(UserError):
    """The journal (or this server) holds no such run or session."""


class JournalBrowser:
    """The recorded runs of one journal file, for the page: listing, events (replayed), requests.

    Replayed event lists are cached (the `cache_size` most recent runs); the file is opened
    for each request and closed after, so a journal another process appends to shows its
    new runs.
    """

    def __init__(self, path: str | os.PathLike[str], *, cache_size: int = 8) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise UserError(
                f"No journal at {str(self.path)!r}; give a file a run was recorded in "
                f"(`jeeves run SPEC --journal runs.db`, `jeeves demo` writes .jeeves/demo.jsonl)."
            )
        self.cache_size = cache_size
        self._events: OrderedDict[str, dict[str, Any]] = OrderedDict()

    async def runs(self) -> list[dict[str, Any]]:
        """The root sessions the journal holds, as `jeeves runs --json` prints them."""
        return [run.model_dump(mode="json") for run in await list_runs(self.path)]

    async def events(self, session_id: str) -> dict[str, Any]:
        """`{"session_id", "events": [...], "error": null | {type, message}}` from a strict replay."""
        cached = self._events.get(session_id)
        if cached is not None:
            self._events.move_to_end(session_id)
            return cached
        events: list[dict[str, Any]] = []
        error: dict[str, str] | None = None
        store = open_journal(self.path, create=False)
        try:
            record = await store.get_session(session_id)
            if record is None or record.parent_id is not None:
                raise NoSuchRun(
                    f"{self.path.name} holds no run {session_id!r}; GET /journal lists the runs it holds."
                )
            try:
                plan = await plan_replay(store, session_id, None)
                async with stream(
                    plan.arch, plan.task, session_id=session_id, role=plan.role, journal=store, mode="replay"
                ) as run:
                    async for event in run:
                        events.append(event.model_dump(mode="json"))
                    await run.result()
            except Exception as exc:  # no source, a divergence, or the recorded failure replayed
                error = {"type": error_type_name(exc), "message": str(exc)}
        finally:
            await store.aclose()
        out = {"session_id": session_id, "events": events, "error": error}
        self._events[session_id] = out
        while len(self._events) > self.cache_size:
            self._events.popitem(last=False)
        return out

    async def requests(self, session_id: str) -> list[dict[str, Any]]:
        """The model steps recorded for `session_id`: step index, request, model, ok."""
        store = open_journal(self.path, create=False)
        try:
            calls: list[dict[str, Any]] = []
            for index in await store.step_indices(session_id):
                record = await store.get_step(session_id, index)
                if record is None or record.kind != "model":
                    continue
                result = record.result if isinstance(record.result, dict) else {}
                response = result.get("response") if isinstance(result.get("response"), dict) else {}
                calls.append(
                    {
                        "call": len(calls),
                        "step": index,
                        "model": (response or {}).get("model", ""),
                        "request": mask_credentials(record.request),
                        "ok": record.error is None,
                    }
                )
            return calls
        finally:
            await store.aclose()


async def view_target(journal: str | os.PathLike[str], session_id: str | None) -> str:
    """The run `jeeves view` opens: `session_id` if the journal holds it as a run, else (None) the latest.

    Raises:
        UserError: the journal holds no runs, or not that one (the message lists them).
    """
    runs = [run.session_id for run in await list_runs(journal)]
    if not runs:
        raise UserError(f"{journal} holds no runs; record one with `jeeves run SPEC --journal {journal}`.")
    if session_id is None:
        return runs[-1]
    if session_id not in runs:
        shown = ", ".join(repr(r) for r in runs[-10:])
        raise UserError(
            f"{journal} holds no run {session_id!r}; its latest runs are: {shown} (`jeeves runs {journal}` lists all)."
        )
    return session_id
