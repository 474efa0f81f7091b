"""The deploy box ops_goal.toml's agent operates, its tools, and the health check that decides "done".

ops_goal.toml names them by import path (`ops_tools:restart_service`, `ops_tools:health_check`);
a spec's directory is importable while the spec is built, so this module needs no installing.

The box is simulated in memory, one per process: a `web` service whose config points at the
wrong port and that is not running. It is healthy once it runs with `port = 8080`. `reset()`
puts the fault back (a process that runs the spec twice calls it between runs). Point the
tools at a real box (ssh, an API) to use the spec for real.
"""

from __future__ import annotations

from jeeves import Verdict, tool

FAULTY_CONFIG = "port = 9090\n"


class Box:
    """The simulated box: a config file, and what the running service serves."""

    def __init__(self) -> None:
        self.config = FAULTY_CONFIG
        self.running = False
        self.serving = ""

    def healthy(self) -> bool:
        return self.running and "port = 8080" in self.serving


BOX = Box()
"""This process's box."""


def reset() -> None:
    """Put the fault back: the wrong port, the service down."""
    BOX.__init__()  # type: ignore[misc]


@tool
def restart_service(name: str) -> str:
    """Restart a service on the box (the only one is `web`); it reads its config when it starts."""
    if name != "web":
        return f"no service named {name!r}; the box runs `web`"
    BOX.running, BOX.serving = True, BOX.config
    return "web restarted"


@tool
def check_health() -> str:
    """GET /health on the box."""
    return "200 OK" if BOX.healthy() else "503 Service Unavailable"


@tool
def read_config() -> str:
    """Read the web service's config file."""
    return BOX.config


@tool
def write_config(content: str) -> str:
    """Replace the web service's config file (takes effect on restart)."""
    BOX.config = content
    return "written"


def health_check(task: str, report: str) -> Verdict:
    """The success critic: the box itself, not the agent's report, says whether /health answers 200."""
    ok = BOX.healthy()
    return Verdict(
        score=1.0 if ok else 0.0,
        hard_fail=not ok,
        issues=[] if ok else ["GET /health does not answer 200"],
        summary="the box answers 200 on /health" if ok else "",
    )
