"""Recorded runs for the viewer: a journal file's runs, one run's events by strict replay, its requests.

`GET /journal/runs/{id}/events` needs the run's events, which a journal does not store as
such: it stores steps and sessions. A strict offline replay (what `jeeves replay` does)
rebuilds the architecture from the source recorded with the run and re-emits exactly the
recorded events (marked `replayed`), with nothing run live and no model reached. Their
`ts` is the replay's clock, so the page lays recorded runs out in event order. A replay
that fails part way (no source to rebuild from, a divergence, the recorded failure)
returns the events it produced and the error; so does a run still going, or waiting at
gates, whose journal ends part way (such results are not cached: asked again, the page sees
what was recorded since).

The journal is the one a server records into (`create_app(journal=...)`): a run that server
recorded names its catalog entry (`{"kind": "served", "name": ...}`), and `rebuild` turns
that back into the architecture. A path is opened for each request and closed after, so a
journal another process appends to shows its new runs; a journal object is used as it is.

Rebuilding imports the code the journal names: serve only journals you trust.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from jeeves._base.redact import mask_credentials
from jeeves._run.context import Architecture
from jeeves._run.replay import plan_replay
from jeeves._run.runner import stream
from jeeves.errors import UserError
from jeeves.journal.delta import whole_request
from jeeves.journal.open import close_journal, find_run, list_runs, open_journal, read_runs
from jeeves.journal.records import TERMINAL, error_type_name
from jeeves.journal.store import JournalStore
from jeeves.server.requests import DeltaForm

Rebuild = Callable[[Mapping[str, Any]], Architecture | None]
"""Builds the architecture a recorded source names, or None to leave it to the source's loader."""

__all__ = ["JournalBrowser", "NoSuchRun", "view_target"]


class NoSuchRun(UserError):
    """The journal (or this server) holds no such run or session."""


class JournalBrowser:
    """The recorded runs of one journal file, for the page: listing, events (replayed), requests.

    Replayed event lists are cached (the `cache_size` most recent runs); the file is opened
    for each request and closed after, so a journal another process appends to shows its
    new runs.
    """

    def __init__(
        self,
        journal: JournalStore | str | os.PathLike[str],
        *,
        rebuild: Rebuild | None = None,
        cache_size: int = 8,
    ) -> None:
        self.journal = journal
        self.path: Path | None = Path(journal) if isinstance(journal, str | os.PathLike) else None
        self.rebuild = rebuild
        self.cache_size = cache_size
        self._events: OrderedDict[str, dict[str, Any]] = OrderedDict()

    @property
    def name(self) -> str:
        """What the page calls the journal: its file name."""
        path = self.path if self.path is not None else getattr(self.journal, "path", None)
        return Path(path).name if path is not None else type(self.journal).__name__

    def _missing(self) -> bool:
        """A path with no file yet: a server's journal before its first run."""
        return self.path is not None and not self.path.exists()

    def _open(self) -> JournalStore:
        return (
            self.journal
            if isinstance(self.journal, JournalStore)
            else open_journal(self.journal, create=False)
        )

    async def _close(self, store: JournalStore) -> None:
        if store is not self.journal:
            await store.aclose()

    async def runs(self, last: int | None = None) -> list[dict[str, Any]]:
        """The root sessions the journal holds (only the latest `last`, when given), as
        `jeeves runs --json` prints them."""
        if self._missing():
            return []
        return [run.model_dump(mode="json") for run in await list_runs(self.journal, last=last)]

    async def events(self, session_id: str) -> dict[str, Any]:
        """`{"session_id", "events": [...], "error": null | {type, message}}` from a strict replay."""
        cached = self._events.get(session_id)
        if cached is not None:
            self._events.move_to_end(session_id)
            return cached
        events: list[dict[str, Any]] = []
        error: dict[str, str] | None = None
        if self._missing():
            raise NoSuchRun(f"{self.name} holds no run {session_id!r}: nothing was recorded in it yet.")
        store = self._open()
        try:
            record = await store.get_session(session_id)
            if record is None or record.parent_id is not None:
                raise NoSuchRun(
                    f"{self.name} holds no run {session_id!r}; GET /journal lists the runs it holds."
                )
            try:
                arch = self.rebuild(record.source) if self.rebuild is not None and record.source else None
                plan = await plan_replay(store, session_id, arch)
                async with stream(
                    plan.arch, plan.task, session_id=session_id, role=plan.role, journal=store, mode="replay"
                ) as run:
                    async for event in run:
                        events.append(event.model_dump(mode="json"))
                    await run.result()
            except Exception as exc:  # no source, a divergence, or the recorded failure replayed
                error = {"type": error_type_name(exc), "message": str(exc)}
        finally:
            await self._close(store)
        out = {"session_id": session_id, "events": events, "error": error}
        if record.status not in TERMINAL:  # still going, or at gates: more may be recorded
            return out
        self._events[session_id] = out
        while len(self._events) > self.cache_size:
            self._events.popitem(last=False)
        return out

    async def requests(self, session_id: str) -> list[dict[str, Any]]:
        """The model steps recorded for `session_id`: step index, model, ok, and the request
        as what it adds to the previous call's (`jeeves.server.requests.DeltaForm`: each
        message once, however long the session). Memory stays linear in the session: each
        step's whole request (as long as the session so far) is rebuilt from the one it
        extends and kept only while a later step extends it."""
        if self._missing():
            return []
        steps: list[dict[str, Any]] = []  # each model step's call, its request as stored (a delta)
        store = self._open()
        try:
            for index in await store.step_indices(session_id):
                record = await store.get_step(session_id, index)
                if record is None or record.kind != "model":
                    continue
                result = record.result if isinstance(record.result, dict) else {}
                response = result.get("response") if isinstance(result.get("response"), dict) else {}
                model = (response or {}).get("model", "")
                request = mask_credentials(record.request)
                steps.append({"step": index, "model": model, "request": request, "ok": record.error is None})
        finally:
            await self._close(store)
        extended_until: dict[int, int] = {}  # a model step -> the position of the last step extending it
        for position, step in enumerate(steps):
            if isinstance(step["request"], dict) and isinstance(step["request"].get("base"), int):
                extended_until[step["request"]["base"]] = position
        calls: list[dict[str, Any]] = []
        whole: dict[int, Any] = {}  # the whole requests a later step still extends, and no more
        form = DeltaForm()
        for position, step in enumerate(steps):
            where = f"{self.name} (session {session_id!r} step {step['step']})"
            request = whole_request(step.pop("request"), whole, where)
            for index in [i for i in whole if extended_until[i] <= position]:
                del whole[index]  # a whole request is as long as the session so far: keep few
            if extended_until.get(step["step"], -1) > position:
                whole[step["step"]] = request
            calls.append(form.add({"call": position, **step, "request": request}))
        return calls


async def view_target(journal: str | os.PathLike[str], session_id: str | None) -> str:
    """The run `jeeves view` opens: `session_id` if the journal holds it as a run, else (None) the latest.
    Reads that run's record, or the latest runs' (never every run's).

    Raises:
        UserError: the journal holds no runs, or not that one (the message names the latest).
    """
    store = open_journal(journal, create=False)
    try:
        if session_id is not None and await find_run(store, session_id) is not None:
            return session_id
        runs = [run.session_id for run in await read_runs(store, 10)]
    finally:
        await close_journal(store)
    if not runs:
        raise UserError(f"{journal} holds no runs; record one with `jeeves run SPEC --journal {journal}`.")
    if session_id is None:
        return runs[-1]
    shown = ", ".join(repr(r) for r in runs)
    raise UserError(
        f"{journal} holds no run {session_id!r}; its latest runs are: {shown} (`jeeves runs {journal}` lists all)."
    )
