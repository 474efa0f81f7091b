"""Architectures as TOML specs: run one, and turn one built in code into a spec.

    python examples/specs.py          # offline: the spec's [demo] script, real pytest
    python examples/specs.py --live   # the spec's own [models] (an Anthropic coder, an OpenAI reviewer)
    python examples/specs.py --live --model actor=openai/gpt-4o-mini   # one route replaced

Part 1 loads `architectures/codegen.toml` (an ActorCritic: a coder, the pytest file beside
the spec, a reviewer model), builds it into ordinary jeeves objects and runs it. Offline,
the replies come from the spec's `[demo]` script and the tests really run; `--live` uses
the routes in its `[models]` table, so it needs ANTHROPIC_API_KEY and OPENAI_API_KEY.
`--model ROLE=MODEL` replaces or adds a route, as on `jeeves run`: with the coder on an
OpenAI model, OPENAI_API_KEY alone will do (offline, it only renames the scripted model).

Part 2 builds a SelfRefine in Python, dumps it to TOML, loads that text back and checks
the rebuilt architecture dumps to the same table: what you build in code can be saved,
reviewed and diffed as a spec. The same round trip is `jeeves validate`'s job for files.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
import tomllib
from pathlib import Path

import anyio

import jeeves
from jeeves import Agent, Router, SelfRefine
from jeeves.spec import build, dump, dumps, load_spec, parse_spec

CODEGEN = Path(__file__).resolve().parent.parent / "architectures" / "codegen.toml"


async def run_codegen(live: bool, models: dict[str, str]) -> jeeves.RunResult:
    spec = load_spec(CODEGEN)
    assert spec.demo is not None
    arch, router = build(spec, offline=not live, models=models)
    print(f"1. {CODEGEN.name}: {arch.name} with routes {router}")
    async with jeeves.stream(arch, spec.demo.task, router=router, session_id="codegen") as events:
        async for event in events:
            if event.type == "critique":
                verdict = "approved" if event.passed else "not approved"
                print(f"   round {event.round}: score {event.score:.2f}, {verdict}")
                for issue in event.issues[:3]:
                    print("     - " + issue.splitlines()[0])
        result = await events.result()
    print(f"   stop reason: {result.stop_reason}\n")
    return result


def round_trip() -> str:
    explainer = SelfRefine(
        Agent("You explain programming ideas to newcomers, with one short example.", role="explainer"),
        threshold=0.85,
        max_rounds=2,
    )
    router = Router({"explainer": "anthropic/claude-sonnet-4-5", "default": "openai/gpt-4o-mini"})
    text = dumps(explainer, router=router)
    rebuilt, rebuilt_router = build(parse_spec(tomllib.loads(text)))
    same = dump(rebuilt, router=rebuilt_router) == dump(explainer, router=router)
    print(f"2. a SelfRefine built in code, as a spec (loads back equal: {same}):\n")
    print(textwrap.indent(text, "   "), end="")
    return text


async def main(live: bool, models: dict[str, str] | None = None) -> int:
    result = await run_codegen(live, models or {})
    round_trip()
    return 0 if result.stop_reason == "approved" else 1


def role_route(value: str) -> tuple[str, str]:
    """`actor=openai/gpt-4o-mini` → `("actor", "openai/gpt-4o-mini")`."""
    role, _, model = value.partition("=")
    if not role.strip() or not model.strip():
        raise argparse.ArgumentTypeError(f"{value!r} is not ROLE=MODEL, e.g. critic=openai/gpt-4o")
    return role.strip(), model.strip()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--live", action="store_true", help="use the spec's real models instead of its script"
    )
    parser.add_argument(
        "--model",
        type=role_route,
        action="append",
        default=[],
        metavar="ROLE=MODEL",
        help="route ROLE to MODEL instead of the spec's [models] (repeatable)",
    )
    args = parser.parse_args()
    try:
        sys.exit(anyio.run(main, args.live, dict(args.model)))
    except jeeves.JeevesError as exc:  # a missing API key, a provider that failed: one line, no traceback
        sys.exit(f"error: {exc}")
