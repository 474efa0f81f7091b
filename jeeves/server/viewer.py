"""The viewer (a run explorer): one static page (HTML, CSS, JS; no build step) served by the app.

The page starts runs with `POST /runs` and follows them with an `EventSource` on
`/runs/{id}/events`, folding jeeves events into the session tree (supervisor → workers →
actor and critic rounds) in the browser. It is public (it holds no data); with a server
token, open it as `/#token=...` (the fragment never reaches the server or its logs) or
type the token into the page. All model text is inserted as text, never as HTML.

`viewer.js` follows a run (live over SSE, or a recorded one fetched from `/journal`) and
folds its events into the session tree, keeping every event so the page can show the tree
as it was at any seq; `explorer.js` draws the timeline, the watchdog rail, approval gates,
the cost chart and a session's detail (requests, replies, tool calls, critic rounds with
diffs). See docs/viewer.md.
"""

from __future__ import annotations

from importlib.resources import files

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

__all__ = ["viewer_routes"]

_ASSETS = {
    "index.html": "text/html; charset=utf-8",
    "viewer.js": "text/javascript; charset=utf-8",
    "explorer.js": "text/javascript; charset=utf-8",
    "viewer.css": "text/css; charset=utf-8",
}


def _asset(name: str) -> Response:
    body = (files("jeeves.server") / "static" / name).read_bytes()
    return Response(body, media_type=_ASSETS[name], headers={"Cache-Control": "no-cache"})


async def _page(request: Request) -> Response:
    return _asset("index.html")


async def _static(request: Request) -> Response:
    name = request.path_params["name"]
    if name not in _ASSETS:
        return PlainTextResponse("Not found", status_code=404)
    return _asset(name)


def viewer_routes() -> list[Route]:
    """`GET /` (the page) and `GET /static/{name}` (its script and style)."""
    return [Route("/", _page, methods=["GET"]), Route("/static/{name}", _static, methods=["GET"])]
