"""The Starlette app: start runs, follow them as jeeves SSE or AG-UI, watch them in a page.

Routes (all JSON errors are `{"error": message}`):

- `GET /` the live viewer page (public: it holds no data; it asks for the token).
- `GET /architectures` the names runs can be started with.
- `GET /runs`, `GET /runs/{id}` what the server holds: status, output, usage.
- `POST /runs` `{architecture, task, session_id?}` → 201 `{session_id, events}`.
- `GET /runs/{id}/events` the run's jeeves events as SSE (`Last-Event-ID` resumes). With
  `database=`, also the runs durable workers execute (jeeves.server.followed).
- `DELETE /runs/{id}` cancel a run.
- `POST /agui`, `POST /agui/{architecture}` an AG-UI RunAgentInput → AG-UI events (SSE); a
  gate ends the AG-UI run with an interrupt, and an input with `resume` decides it and
  continues the same run (jeeves.server.agui_resume).
- `GET /runs/{id}/gates` the run's gates waiting for a decision (a JSON list of PendingGate).
- `POST /runs/{id}/gates/{gate_id}` `{decision, by, note?, arguments_hash}` → 200 with the
  Decision; 404 unknown gate, 409 already decided, expired, or other arguments' hash.
- `POST /runs/{id}/messages` `{text, session_id?}` → 202: a human's message for the run's
  agents, applied at the next turn boundary (`RunStream.inject`); 409 once the run ended or
  when the session named cannot take it (jeeves.server.inbox), 404 for a session the run has
  not started, 413 for a message over 64 KiB, 429 when the run's inbox is full (jeeves._run.steering).
- `GET /runs/{id}/requests/{session_id}` a session's model requests (the viewer's node detail);
  `GET /journal` and `GET /journal/runs/{id}/events|requests/{session_id}` browse the
  journal's recorded runs (jeeves.server.explorer).

With `approvals=` every run's gated tool calls wait for a decision sent here (up to the
gate's TTL). With `journal=` every run is recorded there, the viewer browses the runs it
holds (the server's and any other process's), and a server restarted on the same journal
holds again the runs it left suspended at gates: decide them and they resume
(jeeves.server.decisions).

Safe by default: `serve` binds 127.0.0.1 and refuses any other address without a token;
before routing, `RequestGuard` (jeeves.server.guard) refuses foreign `Host`s, writes from
other origins, writes that are not JSON and bodies over `max_body_bytes`; at most
`max_runs` runs go at once (429 with `Retry-After`); with `token=` every route but the page
needs `Authorization: Bearer <token>` (or `?access_token=`, for EventSource, which cannot
send headers), compared in constant time; no CORS headers unless `cors_origins` is given;
and nothing that leaves the server carries configuration: routes, params and provider keys
stay in the process (summaries hold the task, status, output and usage only).
"""

from __future__ import annotations

import hmac
import os
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

from ag_ui.core import RunAgentInput
from pydantic import BaseModel, ConfigDict, ValidationError
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from jeeves._run.context import Architecture
from jeeves._run.steering import InboxFull, MessageTooLarge
from jeeves.approvals.decide import Approvals, BadGateId, GateConflict, GateNotFound
from jeeves.budget import Budget
from jeeves.errors import UserError
from jeeves.journal.eventlog import LoggedRun
from jeeves.journal.open import close_journal, open_journal
from jeeves.journal.records import Journal
from jeeves.journal.store import JournalStore
from jeeves.server.agui_resume import resume_entries
from jeeves.server.agui_stream import AguiFormat, task_from_input
from jeeves.server.body import BadJson, invalid_body, read_json
from jeeves.server.catalog import ArchitectureLike, Catalog, RouterLike, UnknownArchitecture
from jeeves.server.decisions import Decisions
from jeeves.server.explorer import explorer_routes
from jeeves.server.followed import DatabaseRuns, DatabaseUnreachable, database_unreachable
from jeeves.server.gates import DecisionBody
from jeeves.server.guard import RequestGuard, host_names
from jeeves.server.inbox import CannotTakeMessages, NoSuchSession
from jeeves.server.recorded import JournalBrowser
from jeeves.server.runs import SERVED, RunNotRunning, RunRecord, RunRegistry, TooManyRuns
from jeeves.server.sse import BadLastEventId, EventStreamResponse, JeevesFormat, follow_run, last_event_id
from jeeves.server.viewer import viewer_routes

__all__ = ["create_app"]


class StartRun(BaseModel):
    """The body of `POST /runs`."""

    model_config = ConfigDict(extra="forbid")

    architecture: str
    task: str
    session_id: str | None = None


class SendMessage(BaseModel):
    """The body of `POST /runs/{id}/messages`."""

    model_config = ConfigDict(extra="forbid")

    text: str
    """The message, as the agent will read it."""
    session_id: str | None = None
    """The agent session it is for; unset, the first agent that reaches a turn boundary."""


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


class BearerAuth:
    """ASGI middleware: every HTTP request outside `public` must carry the token."""

    def __init__(self, app: ASGIApp, *, token: str, public: Sequence[str]) -> None:
        self.app = app
        self._token = token.encode()
        self._public = tuple(public)

    def _given(self, scope: Scope) -> bytes:
        for name, value in scope.get("headers", []):
            if name == b"authorization" and value[:7].lower() == b"bearer ":
                return bytes(value[7:].strip())
        request = Request(scope)
        return request.query_params.get("access_token", "").encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        public = path == "/" or any(path.startswith(p) for p in self._public)
        if scope["type"] != "http" or public or hmac.compare_digest(self._given(scope), self._token):
            await self.app(scope, receive, send)
            return
        response = JSONResponse(
            {"error": "Missing or wrong bearer token; send `Authorization: Bearer <token>`."},
            status_code=401,
            headers={"WWW-Authenticate": "Bearer"},
        )
        await response(scope, receive, send)


class _Api:
    def __init__(
        self, catalog: Catalog, decisions: Decisions, keepalive_s: float, database: DatabaseRuns | None
    ):
        self.catalog = catalog
        self.runs = decisions.runs
        self.decisions = decisions
        self.keepalive_s = keepalive_s
        self.database = database

    def start(self, name: str, task: str, session_id: str | None) -> RunRecord:
        """Start a named run (shared by `POST /runs` and the AG-UI endpoint)."""
        if session_id is not None and self.runs.get(session_id) is not None:
            raise _Conflict(f"A run with session_id {session_id!r} already exists; use another session_id.")
        return self.decisions.start(name, task, session_id)

    async def architectures(self, request: Request) -> Response:
        return JSONResponse({"architectures": list(self.catalog.names)})

    async def list_runs(self, request: Request) -> Response:
        runs: list[dict[str, Any]] = [r.summary() for r in self.runs.runs()]
        if self.database is not None:  # the workers' runs, but for any this server started itself
            own = {run["session_id"] for run in runs}
            runs += [run for run in await self.database.summaries() if run["session_id"] not in own]
        return JSONResponse({"runs": runs})

    async def create_run(self, request: Request) -> Response:
        body = StartRun.model_validate(await read_json(request))
        record = self.start(body.architecture, body.task, body.session_id)
        sid = record.session_id
        return JSONResponse({"session_id": sid, "events": f"/runs/{sid}/events"}, status_code=201)

    def _record(self, request: Request) -> RunRecord:
        sid = request.path_params["session_id"]
        record = self.runs.get(sid)
        if record is None:
            raise _NotFound(f"No run {sid!r} here: it never ran on this server, or it ended and was dropped.")
        return record

    async def _logged(self, request: Request) -> LoggedRun | None:
        """A run of the database's event log, when this server did not start it."""
        sid = request.path_params["session_id"]
        if self.database is None or self.runs.get(sid) is not None:
            return None
        return await self.database.get(sid)

    async def get_run(self, request: Request) -> Response:
        logged = await self._logged(request)
        if logged is not None:
            return JSONResponse(logged.summary())
        return JSONResponse(self._record(request).summary())

    async def gates(self, request: Request) -> Response:
        record = self._record(request)
        return JSONResponse([g.model_dump(mode="json") for g in record.pending()])

    async def decide_gate(self, request: Request) -> Response:
        record = self._record(request)
        body = DecisionBody.model_validate(await read_json(request))
        decided = await self.decisions.decide(record, request.path_params["gate_id"], body.to_decision())
        return JSONResponse(decided.model_dump(mode="json"))

    async def cancel_run(self, request: Request) -> Response:
        record = self._record(request)
        cancelled = record.cancel()
        return JSONResponse({"session_id": record.session_id, "cancelled": cancelled}, status_code=202)

    async def send_message(self, request: Request) -> Response:
        record = self._record(request)
        body = SendMessage.model_validate(await read_json(request))
        record.inject(body.text, body.session_id)
        return JSONResponse(
            {"session_id": record.session_id, "target": body.session_id, "queued": True}, status_code=202
        )

    async def events(self, request: Request) -> Response:
        after = last_event_id(request)
        logged = await self._logged(request)
        if logged is not None and self.database is not None:
            body = self.database.follow(logged.session_id, after, keepalive_s=self.keepalive_s)
            return EventStreamResponse(body)
        record = self._record(request)
        return EventStreamResponse(
            follow_run(self.runs, record, after, JeevesFormat(), keepalive_s=self.keepalive_s)
        )

    async def agui(self, request: Request) -> Response:
        data = RunAgentInput.model_validate(await read_json(request))
        accept = request.headers.get("accept")
        if data.resume:
            record = await resume_entries(self.decisions, data.resume)
            fmt = AguiFormat(data, record, accept=accept)
            body = follow_run(self.runs, record, record.agui_cursor, fmt, keepalive_s=self.keepalive_s)
            return EventStreamResponse(body, headers={"Content-Type": fmt.media_type})
        props = data.forwarded_props if isinstance(data.forwarded_props, Mapping) else {}
        name = (
            request.path_params.get("architecture")
            or props.get("architecture")
            or self.catalog.default_name()
        )
        if not isinstance(name, str):
            raise UserError(
                f"Say which architecture to run: POST /agui/{{name}} or forwardedProps.architecture; "
                f"this server has: {', '.join(self.catalog.names)}."
            )
        session_id = props.get("session_id") or data.run_id
        record = self.start(name, task_from_input(data), str(session_id))
        fmt = AguiFormat(data, record, accept=accept)
        body = follow_run(self.runs, record, 0, fmt, keepalive_s=self.keepalive_s)
        return EventStreamResponse(body, headers={"Content-Type": fmt.media_type})


class _NotFound(UserError):
    pass


class _Conflict(UserError):
    pass


RETRY_AFTER_S = 5
"""What a 429 asks the client to wait: runs take seconds to minutes, so seconds, not ms."""


async def _user_error(request: Request, exc: Exception) -> Response:
    if isinstance(exc, ValidationError):
        return _error(422, invalid_body(exc))
    if isinstance(exc, TooManyRuns):
        return JSONResponse({"error": str(exc)}, status_code=429, headers={"Retry-After": str(RETRY_AFTER_S)})
    if isinstance(exc, InboxFull):  # an agent takes its messages at its next turn: seconds, not minutes
        return JSONResponse({"error": str(exc)}, status_code=429, headers={"Retry-After": "1"})
    statuses: dict[type[Exception], int] = {
        _NotFound: 404,
        UnknownArchitecture: 404,
        GateNotFound: 404,
        BadGateId: 404,
        _Conflict: 409,
        GateConflict: 409,
        RunNotRunning: 409,
        NoSuchSession: 404,
        CannotTakeMessages: 409,
        MessageTooLarge: 413,
        BadJson: 400,
        BadLastEventId: 400,
    }
    status = statuses.get(type(exc), 422)
    return _error(status, str(exc))


def _served_by(catalog: Catalog) -> Callable[[Mapping[str, Any]], Architecture | None]:
    """Rebuilds a run this server recorded (source `{"kind": "served", "name"}`) from its catalog entry."""

    def rebuild(source: Mapping[str, Any]) -> Architecture | None:
        name = source.get("name")
        if source.get("kind") != SERVED or not isinstance(name, str) or name not in catalog.names:
            return None  # the source's own loader says why it cannot be rebuilt
        return catalog.build(name)[0]

    return rebuild


def create_app(
    architectures: Mapping[str, ArchitectureLike],
    *,
    router: RouterLike = None,
    token: str | None = None,
    cors_origins: Sequence[str] = (),
    allowed_hosts: Sequence[str] = (),
    max_body_bytes: int = 1_000_000,
    max_runs: int = 8,
    retention_s: float = 600.0,
    cancel_on_disconnect: bool = False,
    keepalive_s: float = 15.0,
    budget: Budget | None = None,
    approvals: Approvals | None = None,
    journal: Journal | str | os.PathLike[str] | None = None,
    database: str | None = None,
) -> Starlette:
    """The jeeves server as an ASGI app; serve it with uvicorn (or `jeeves serve`).

    Args:
        architectures: What runs can be started, by name: architectures, or factories
            called once per run (fresh scripted models, say).
        router: The router every run uses, or a factory called once per run.
        token: When set, every route but the viewer page needs it as a bearer token.
        cors_origins: Origins allowed to call the API from a browser; none by default.
            Pages on other origins cannot write (start or cancel runs) at all.
        allowed_hosts: Host names the server answers to besides the loopback names
            (`localhost`, `127.0.0.1`, `[::1]`): the name or address clients use to reach
            it when it binds beyond loopback. `"*"` answers to any (keep a token then).
        max_body_bytes: The largest request body accepted (413 above it).
        max_runs: How many runs may be going at once (429 with `Retry-After` above it).
        retention_s: How long a finished run's events stay available for reconnects.
        cancel_on_disconnect: Cancel a run when its last follower disconnects before it
            ended; by default runs continue and can be re-attached.
        keepalive_s: Idle seconds between SSE keep-alive comments.
        budget: Limits applied to each run.
        approvals: The approval policy of every run: its gated tool calls wait until a
            decision comes in (`POST /runs/{id}/gates/{gate_id}`, an AG-UI resume), up to
            the gate's TTL. None: no gates.
        journal: Where every run is recorded (a path: `.jsonl`, else SQLite; or a journal
            store). At start the server holds again the runs of its catalog the journal
            has suspended at gates, so they survive a restart of the server. The viewer
            lists the runs it holds and opens them (replayed offline; a run this server
            recorded is rebuilt from its catalog entry). A missing file is created.
        database: Where durable workers record (`postgresql://...`, or their SQLite
            journal file): the run list adds the runs in its event log, executed by any
            worker, and `GET /runs/{id}/events` follows such a run live from the log
            (`Last-Event-ID` resumes), ending when the run ends (jeeves.server.followed).
            Checked when the app starts: a wrong URL stops it.

    The app's `state.runs` is its `RunRegistry`; the registry's task group lives as long
    as the app's lifespan, and leaving it cancels every run still going. `state.token`
    tells `serve` whether the app may be bound beyond loopback.
    """
    if token is not None and not token:
        raise UserError("token must be a non-empty string, or None for no authentication.")
    if max_body_bytes < 1:
        raise UserError(f"max_body_bytes must be at least 1 byte, got {max_body_bytes!r}.")
    if max_runs < 1:
        raise UserError(f"max_runs must be at least 1 run, got {max_runs!r}.")
    hosts = host_names(allowed_hosts)
    if approvals is not None and not isinstance(approvals, Approvals):
        raise UserError(
            f"approvals= must be a jeeves.approvals.Approvals policy, got {approvals!r}; "
            f"e.g. Approvals(auto=('read_only',))."
        )
    catalog = Catalog(architectures, router)
    registry = RunRegistry(
        retention_s=retention_s, cancel_on_disconnect=cancel_on_disconnect, max_running=max_runs
    )
    decisions = Decisions(registry, catalog, journal=None, approvals=approvals, budget=budget)
    followed = DatabaseRuns(database) if database is not None else None
    api = _Api(catalog, decisions, keepalive_s, followed)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        store = open_journal(journal) if journal is not None else None
        if store is not None and not isinstance(store, JournalStore):
            raise UserError(f"journal= must be a journal store jeeves can list (or a path), got {journal!r}.")
        decisions.journal = store
        if store is not None:  # one journal: the runs record into it and the page browses it
            browsed = journal if isinstance(journal, str | os.PathLike) else store
            app.state.journal = JournalBrowser(browsed, rebuild=_served_by(catalog))
        try:
            if followed is not None:
                await followed.open()
            async with registry:
                await decisions.restore()
                yield
        finally:
            if store is not None and store is not journal:
                await close_journal(store)
            if followed is not None:
                await followed.aclose()

    routes = [
        *viewer_routes(),
        Route("/architectures", api.architectures, methods=["GET"]),
        Route("/runs", api.list_runs, methods=["GET"]),
        Route("/runs", api.create_run, methods=["POST"]),
        Route("/runs/{session_id}", api.get_run, methods=["GET"]),
        Route("/runs/{session_id}", api.cancel_run, methods=["DELETE"]),
        Route("/runs/{session_id}/events", api.events, methods=["GET"]),
        Route("/runs/{session_id}/gates", api.gates, methods=["GET"]),
        Route("/runs/{session_id}/gates/{gate_id}", api.decide_gate, methods=["POST"]),
        Route("/runs/{session_id}/messages", api.send_message, methods=["POST"]),
        Route("/agui", api.agui, methods=["POST"]),
        Route("/agui/{architecture}", api.agui, methods=["POST"]),
        *explorer_routes(),
    ]
    middleware = [
        Middleware(
            RequestGuard, allowed_hosts=hosts, allowed_origins=cors_origins, max_body_bytes=max_body_bytes
        )
    ]
    if cors_origins:
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=list(cors_origins),
                allow_methods=["GET", "POST", "DELETE"],
                allow_headers=["Authorization", "Content-Type", "Last-Event-ID", "Accept"],
            )
        )
    if token is not None:
        middleware.append(Middleware(BearerAuth, token=token, public=["/static/"]))
    app = Starlette(
        routes=routes,
        middleware=middleware,
        lifespan=lifespan,
        exception_handlers={
            UserError: _user_error,
            ValidationError: _user_error,
            DatabaseUnreachable: database_unreachable,
        },
    )
    app.state.runs = registry
    app.state.decisions = decisions
    app.state.token = token
    app.state.journal = None
    app.state.database = followed
    return app
