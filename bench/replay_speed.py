"""(f) replay vs live, measured by bench/replay.py's `measure` (the replay tests' team run).

Two settings: an instant scripted model (live time is jeeves' own cost, so the ratio shows
what serving a step costs next to running one) and 50 ms per model call (a fast
provider; the target "replay ≥ 50× faster than live" is read from this one, against the
SQLite journal, the default file store). Prints JSON; run by `jeeves_scenarios.py --mode replay`.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

LATENCY_S = 0.05


def _arg(name: str, default: int) -> int:
    return int(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


def main(versions: Mapping[str, str]) -> None:
    import replay  # bench/replay.py

    from jeeves.journal.memory import MemoryJournal
    from jeeves.journal.sqlite import SQLiteJournal
    from jeeves.journal.store import JournalStore

    runs = _arg("--runs", 50)
    latency_runs = max(3, runs // 5)
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as scratch:
        stores: dict[str, Callable[[], JournalStore]] = {
            "memory": MemoryJournal,
            "sqlite": lambda: SQLiteJournal(Path(scratch) / f"runs-{len(out)}.db"),
        }
        for name, make in stores.items():
            live_s, replay_s = asyncio.run(replay.measure(make, runs, 0.0))
            out[f"{name}_instant"] = {
                "live_ms": live_s * 1e3,
                "replay_ms": replay_s * 1e3,
                "speedup": live_s / replay_s,
            }
        live_s, replay_s = asyncio.run(replay.measure(stores["sqlite"], latency_runs, LATENCY_S))
        out["sqlite_latency"] = {
            "live_ms": live_s * 1e3,
            "replay_ms": replay_s * 1e3,
            "speedup": live_s / replay_s,
        }
    inst, mem, lat = out["sqlite_instant"], out["memory_instant"], out["sqlite_latency"]
    out["speedup"] = lat["speedup"]
    out["summary"] = (
        f"bench/replay.py's team run (Supervisor, parallel ActorCritic and tool workers; 9 model calls, 7 "
        f"sessions). With {LATENCY_S * 1e3:.0f} ms per model call: live {lat['live_ms']:.1f} ms, replay from "
        f"SQLite {lat['replay_ms']:.2f} ms, **{lat['speedup']:.0f}× faster**. With an instant model (jeeves' own "
        f"cost both ways): memory journal live {mem['live_ms']:.2f} ms vs replay {mem['replay_ms']:.2f} ms "
        f"({mem['speedup']:.1f}×); SQLite live {inst['live_ms']:.2f} ms vs replay {inst['replay_ms']:.2f} ms "
        f"({inst['speedup']:.1f}×)."
    )
    print(json.dumps({"versions": dict(versions), "f": out}))
