"""A server whose one architecture floods its followers: `python -m tests.server.flood`.

The run streams 64 kB deltas until its followers' socket buffers are full, then waits to
be cancelled; an SSE client that stops reading leaves the server blocked in a send. Prints
the `jeeves: serving ...` line `jeeves serve` prints (port 0: any free port).
"""

from __future__ import annotations

import sys

import anyio

from jeeves import Context, Output
from jeeves.events import ModelDelta
from jeeves.server import create_app
from jeeves.server.serve import address, bind, serve

CHUNK = "x" * 65_536


class Flood:
    name = "flood"

    async def run(self, ctx: Context, task: str) -> Output:
        for step in range(256):  # 16 MB: more than loopback socket buffers hold
            await ctx.emit(ModelDelta(session_id=ctx.session_id, text=CHUNK, step=step))
        await anyio.sleep_forever()
        raise AssertionError("unreachable")


def main() -> None:
    sock = bind("127.0.0.1", 0)
    print(f"jeeves: serving flood at {address(sock)}", flush=True)
    serve(create_app({"flood": Flood()}), sock=sock, shutdown_s=int(sys.argv[1]), log_level="warning")


if __name__ == "__main__":
    main()
