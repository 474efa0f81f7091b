"""A Goal run: an ops agent fixes a service, a watchdog steers it, a health check decides "done".

The box is simulated in memory: a web service whose config points at the wrong port. The
agent has tools to read and write the config, restart the service and probe its health.
`Goal` adds `claim_complete` and `abort`, and believes a claim only when the success critic
(a health probe, combined with an LLM reviewer of the agent's report) passes.

Offline (the default) the agent is scripted to make a classic mistake: it restarts and
probes the service again and again without touching the config. The watchdog's loop signal
sees the same call repeated, fires STUCK, and the steering message lands in the agent's next
model request; the agent changes course, fixes the port and claims; the health check passes
and the run ends `verified`. `--live` routes the agent to `$JEEVES_MODEL` (default
`openai/gpt-4o-mini`), and the watchdog and the reviewer to `$JEEVES_CRITIC_MODEL`:

    python examples/ops_goal.py
    JEEVES_CRITIC_MODEL=openai/gpt-4o-mini python examples/ops_goal.py --live
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import anyio

import jeeves
from jeeves import Agent, Goal, LLMCritic, Router, ScriptedModel, Watchdog
from jeeves.architectures import GoalOutput
from jeeves.stop import MaxToolCalls
from jeeves.testing import Reply, call


class Box:
    """An in-memory deploy box: `web` is healthy once it runs with `port = 8080`."""

    def __init__(self, *, config: str, running: bool) -> None:
        self.config = config
        self.running = running
        self.serving = config if running else ""

    def healthy(self) -> bool:
        return self.running and "port = 8080" in self.serving

    def tools(self) -> list[jeeves.Tool]:
        box = self

        @jeeves.tool
        def restart_service(name: str) -> str:
            """Restart a service on the box (the only one is `web`)."""
            box.running, box.serving = True, box.config
            return f"{name} restarted"

        @jeeves.tool
        def check_health() -> str:
            """GET /health on the box."""
            return "200 OK" if box.healthy() else "503 Service Unavailable"

        @jeeves.tool
        def read_config() -> str:
            """Read the web service's config file."""
            return box.config

        @jeeves.tool
        def write_config(content: str) -> str:
            """Replace the web service's config file (takes effect on restart)."""
            box.config = content
            return "written"

        return [restart_service, check_health, read_config, write_config]


def scripted_agent() -> list[Reply]:
    restart, probe = call("restart_service", {"name": "web"}), call("check_health")
    return [
        Reply(tool_calls=[probe]),
        Reply(tool_calls=[restart]),
        Reply(tool_calls=[restart]),
        Reply(tool_calls=[restart]),  # the same call a third time in a row: the loop signal fires
        Reply(tool_calls=[call("read_config")]),
        Reply(tool_calls=[call("write_config", {"content": "port = 8080\n"})]),
        Reply(tool_calls=[restart]),
        Reply(tool_calls=[probe]),
        Reply(
            tool_calls=[
                call(
                    "claim_complete",
                    {"report": "web listened on 9090; set port 8080, restarted, /health is 200"},
                )
            ]
        ),
    ]


def offline_router() -> Router:
    review = json.dumps({"score": 0.9, "issues": [], "summary": "The report matches the fix."})
    return Router(
        {
            "agent": ScriptedModel(scripted_agent(), model_name="scripted-ops"),
            "watchdog": ScriptedModel(
                [json.dumps({"verdict": "PROGRESSING", "reason": "It is reading the config now."})],
                model_name="scripted-watchdog",
            ),
            "success": ScriptedModel([review], model_name="scripted-reviewer"),
        }
    )


def live_router() -> Router:
    agent = os.environ.get("JEEVES_MODEL", "openai/gpt-4o-mini")
    critic = os.environ.get("JEEVES_CRITIC_MODEL", agent)
    return Router({"default": agent, "watchdog": critic, "success": critic})


def build(box: Box) -> Goal:
    def health_check(task: str, report: str) -> jeeves.Verdict:
        ok = box.healthy()
        return jeeves.Verdict(
            score=1.0 if ok else 0.0,
            hard_fail=not ok,
            issues=[] if ok else ["GET /health does not answer 200"],
            summary="the box answers 200 on /health" if ok else "",
        )

    return Goal(
        Agent("You operate a small deploy box through your tools.", tools=box.tools(), max_turns=30),
        goal="The web service answers 200 on /health.",
        success=[health_check, LLMCritic()],
        watchdog=Watchdog(every=5, repeat_limit=3),
        stop=MaxToolCalls(20),
    )


async def main(live: bool) -> int:
    box = Box(config="port = 9090\n", running=False)
    if live:  # a real model meets a simpler fault: the service is down, the config is right
        box = Box(config="port = 8080\n", running=False)
    router = live_router() if live else offline_router()
    async with jeeves.stream(
        build(box), "Get the web service healthy.", router=router, session_id="ops"
    ) as events:
        async for event in events:
            if event.type == "tool.started":
                print(f"  {event.name}({event.arguments})")
            elif event.type == "watchdog.verdict":
                print(f"watchdog #{event.firing}: {event.verdict} ({event.source}): {event.reason}")
            elif event.type == "steering.injected":
                print(f"steering ({event.cause}) → {event.target_session_id}")
            elif event.type == "critique":
                print(
                    f"success check {event.round}: score {event.score:.2f}, {'passed' if event.passed else 'failed'}"
                )
        result = await events.result()
    detail = result.detail
    assert isinstance(detail, GoalOutput)
    print(f"stop reason: {result.stop_reason}; tool calls: {detail.steps}; healthy: {box.healthy()}")
    return 0 if result.stop_reason == "verified" else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--live", action="store_true", help="use real models through litellm")
    args = parser.parse_args()
    try:
        sys.exit(anyio.run(main, args.live))
    except jeeves.JeevesError as exc:  # a missing API key, a provider that failed: one line, no traceback
        sys.exit(f"error: {exc}")
