"""The run explorer's reads besides the event stream: model requests and recorded runs.

- `GET /runs/{id}/requests/{session_id}`: the requests of a session's live model calls, in
  call order (`jeeves.server.requests`), for a run this server started. Each call comes as
  what it adds to the previous one (`kept`, `added`, `shared` when it changed:
  `jeeves.server.requests.delta_form`), so a long session's read stays linear in its turns.
- `GET /journal`: the runs the server's journal holds (`create_app(journal=PATH)`, `jeeves
  serve --journal`, `jeeves view`), as `jeeves runs --json` lists them (`?last=N`: only the
  latest N, as `jeeves runs --last N`; `?fields=session_id,status`: only those fields of
  each run, so a list need not carry every run's output); `{"journal": null, "runs": []}`
  on a server without one.
- `GET /journal/runs/{id}/events`: one recorded run's events, by strict replay
  (`jeeves.server.recorded`), as `{"session_id", "events": [...], "error"}`.
- `GET /journal/runs/{id}/requests/{session_id}`: a recorded session's model requests, in
  the same form (and each call's journal `step`).

Each answers 404 `{"error": ...}` for a run or session it does not hold.
"""

from __future__ import annotations

import re

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from jeeves.journal.open import RunSummary
from jeeves.journal.records import excerpt
from jeeves.server.recorded import JournalBrowser, NoSuchRun
from jeeves.server.requests import RequestLog

__all__ = ["explorer_routes"]


def _session(request: Request) -> str:
    return str(request.path_params["child"])


def _not_found(exc: NoSuchRun) -> Response:
    return JSONResponse({"error": str(exc)}, status_code=404)


async def _live_requests(request: Request) -> Response:
    sid = request.path_params["session_id"]
    child = _session(request)
    record = request.app.state.runs.get(sid)
    if record is None:
        return _not_found(NoSuchRun(f"No run {sid!r} here: it never ran on this server, or it was dropped."))
    if child != sid and not child.startswith(sid + "__"):
        return _not_found(
            NoSuchRun(f"Session {child!r} is not part of run {sid!r}; its ids start with {sid!r}.")
        )
    log: RequestLog = record.requests
    return JSONResponse({"session_id": child, "calls": log.deltas(child), "dropped": log.dropped})


def _browser(request: Request) -> JournalBrowser:
    browser: JournalBrowser | None = getattr(request.app.state, "journal", None)
    if browser is None:
        raise NoSuchRun("This server browses no journal; start it with `jeeves serve --journal FILE`.")
    return browser


_LAST = re.compile(r"[1-9][0-9]{0,8}")
"""`GET /journal?last=N`: a count of runs, 1 to 999,999,999, in ASCII digits."""


_FIELDS = frozenset(RunSummary.model_fields)
"""`GET /journal?fields=a,b`: the fields of each run to send (a run's whole summary without it)."""


async def _journal_runs(request: Request) -> Response:
    raw = request.query_params.get("last")
    if raw is not None and not _LAST.fullmatch(raw):
        message = (
            f"last must be a number of runs from 1 to 999999999, got {excerpt(raw)}; omit it for every run."
        )
        return JSONResponse({"error": message}, status_code=400)
    asked = request.query_params.get("fields")
    fields = [f for f in asked.split(",") if f] if asked is not None else None
    if fields is not None and (not fields or not _FIELDS.issuperset(fields)):
        unknown = ", ".join(excerpt(f, 40) for f in fields if f not in _FIELDS) or "none"
        message = f"fields names what no run has ({unknown}); use some of {', '.join(sorted(_FIELDS))}."
        return JSONResponse({"error": message}, status_code=400)
    browser: JournalBrowser | None = getattr(request.app.state, "journal", None)
    if browser is None:  # not an error: the page asks every server, and most browse no journal
        return JSONResponse({"journal": None, "runs": []})
    runs = await browser.runs(last=None if raw is None else int(raw))
    if fields is not None:  # a list that needs a few fields does not carry every run's output
        runs = [{f: run[f] for f in fields} for run in runs]
    return JSONResponse({"journal": browser.name, "runs": runs})


async def _journal_events(request: Request) -> Response:
    try:
        return JSONResponse(await _browser(request).events(request.path_params["session_id"]))
    except NoSuchRun as exc:
        return _not_found(exc)


async def _journal_requests(request: Request) -> Response:
    try:
        calls = await _browser(request).requests(_session(request))
    except NoSuchRun as exc:
        return _not_found(exc)
    return JSONResponse({"session_id": _session(request), "calls": calls, "dropped": 0})


def explorer_routes() -> list[Route]:
    """The explorer's reads: live requests, and the journal's runs, events and requests."""
    return [
        Route("/runs/{session_id}/requests/{child}", _live_requests, methods=["GET"]),
        Route("/journal", _journal_runs, methods=["GET"]),
        Route("/journal/runs/{session_id}/events", _journal_events, methods=["GET"]),
        Route("/journal/runs/{session_id}/requests/{child}", _journal_requests, methods=["GET"]),
    ]
