"""Serving the app: `serve(app)` for your own catalog, `serve_demo` behind `jeeves serve`."""

from __future__ import annotations

import os
from collections.abc import Sequence

from starlette.applications import Starlette

from jeeves.demo import demo_agent
from jeeves.server.app import create_app
from jeeves.server.catalog import ArchitectureLike

__all__ = ["demo_architectures", "serve", "serve_demo"]


def serve(app: Starlette, *, host: str = "127.0.0.1", port: int = 8000, log_level: str = "info") -> None:
    """Run `app` with uvicorn until interrupted. Binds to localhost unless told otherwise."""
    import uvicorn  # the server's runtime dependency; imported here so `import jeeves.server` stays light

    uvicorn.run(app, host=host, port=port, log_level=log_level)


def demo_architectures() -> dict[str, ArchitectureLike]:
    """The offline demo catalog `jeeves serve` starts with (scripted models, no keys needed)."""
    return {"demo": demo_agent}


def serve_demo(
    *, host: str = "127.0.0.1", port: int = 8000, token: str | None = None, cors: Sequence[str] = ()
) -> int:
    """`jeeves serve`: the demo catalog behind the viewer, SSE and AG-UI endpoints."""
    token = token or os.environ.get("JEEVES_TOKEN") or None
    app = create_app(demo_architectures(), token=token, cors_origins=cors)
    where = f"http://{host}:{port}/"
    print(
        f"jeeves: serving {', '.join(demo_architectures())} at {where}"
        + (" (token required)" if token else "")
    )
    serve(app, host=host, port=port)
    return 0
