"""Serving the app: `serve(app)` for your own catalog, `serve_demo` behind `jeeves serve`."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from starlette.applications import Starlette

from jeeves.demo import demo_architecture, demo_router
from jeeves.server.app import create_app
from jeeves.server.catalog import ArchitectureLike

__all__ = ["demo_architectures", "serve", "serve_demo"]


def serve(app: Starlette, *, host: str = "127.0.0.1", port: int = 8000, log_level: str = "info") -> None:
    """Run `app` with uvicorn until interrupted. Binds to localhost unless told otherwise."""
    import uvicorn  # the server's runtime dependency; imported here so `import jeeves.server` stays light

    uvicorn.run(app, host=host, port=port, log_level=log_level)


def demo_architectures() -> dict[str, ArchitectureLike]:
    """The offline demo catalog `jeeves serve` starts with (scripted models, no keys needed)."""
    return {"demo": lambda: (demo_architecture(), demo_router())}


def serve_demo(
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    token: str | None = None,
    cors: Sequence[str] = (),
    architectures: Mapping[str, ArchitectureLike] | None = None,
) -> int:
    """`jeeves serve`: `architectures` (default: the demo) behind the viewer, SSE and AG-UI endpoints."""
    token = token or os.environ.get("JEEVES_TOKEN") or None
    catalog = architectures if architectures is not None else demo_architectures()
    app = create_app(catalog, token=token, cors_origins=cors)
    where = f"http://{host}:{port}/"
    print(f"jeeves: serving {', '.join(catalog)} at {where}" + (" (token required)" if token else ""))
    serve(app, host=host, port=port)
    return 0
