"""Trace a supervisor over an actor-critic coder with OpenTelemetry, and print the span tree.

    python examples/telemetry.py                                  # offline: scripted models
    python examples/telemetry.py --otlp http://localhost:4318     # also send to a collector
    python examples/telemetry.py --capture-content                # prompts and replies on spans
    python examples/telemetry.py --live                           # real models through litellm

The team:

    lead (Supervisor)
    ├── research (Agent with a `search` tool)
    └── coder (ActorCritic: an actor Agent, reviewed by an LLMCritic)

The lead delegates to both in one reply, so they run at once; the printed tree shows each
worker's spans under its own delegation all the same, and each critic round with its score. Spans are collected in memory (the
SDK's InMemorySpanExporter) on a provider made here and passed to the run as its tracer, so
nothing global is touched. Needs the SDK: `pip install 'jeeves[otel]'`.

`--live` routes every role to `$JEEVES_MODEL` (default `openai/gpt-4o-mini`; set the
provider's API key), and the critic to `$JEEVES_CRITIC_MODEL` when that is set.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TextIO

import anyio
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import jeeves
from jeeves import ActorCritic, Agent, LLMCritic, Router, ScriptedModel, Supervisor, tool
from jeeves.telemetry import OTelTracer
from jeeves.testing import Reply, call

TASK = "Write slugify(title) in Python and say how it treats accented letters."

SLUGIFY = (
    "import re, unicodedata\n\ndef slugify(title):\n"
    "    plain = unicodedata.normalize('NFKD', title).encode('ascii', 'ignore').decode()\n"
    "    return re.sub(r'[^a-z0-9]+', '-', plain.lower()).strip('-')\n"
)

NOTES = {
    "accents": "unicodedata.normalize('NFKD', s) splits letters from accents; encode to ASCII to drop them."
}


@tool
def search(topic: str) -> str:
    """Look a topic up in the team's notes."""
    return NOTES.get(topic, f"No notes on {topic!r}.")


def team() -> Supervisor:
    research = Agent("You look things up with the search tool and answer briefly.", tools=[search])
    actor = Agent("You write small, correct Python functions. Reply with the code only.")
    coder = ActorCritic(actor, LLMCritic(), max_rounds=2)
    return Supervisor({"research": research, "coder": coder})


def offline_model() -> ScriptedModel:
    return ScriptedModel(
        {
            "example": [
                Reply(
                    tool_calls=[
                        call("delegate", {"worker": "research", "instructions": "How are accents removed?"}),
                        call("delegate", {"worker": "coder", "instructions": "Write slugify(title)."}),
                    ]
                ),
                "slugify lower-cases the title, drops accents (NFKD) and joins words with '-'.",
            ],
            "example__research_0": [
                Reply(tool_calls=[call("search", {"topic": "accents"})]),
                "Normalise with NFKD, then encode to ASCII, ignoring errors.",
            ],
            "example__coder_0__actor_0": ["def slugify(title): return title.lower()"],
            "example__coder_0__critic_0": ['{"score": 0.3, "issues": ["accents and spaces are kept"]}'],
            "example__coder_0__actor_1": [SLUGIFY],
            "example__coder_0__critic_1": ['{"score": 0.9, "issues": [], "summary": "correct"}'],
        },
        model_name="scripted",
    )


def live_router() -> Router:
    routes = {"default": os.environ.get("JEEVES_MODEL", "openai/gpt-4o-mini")}
    if os.environ.get("JEEVES_CRITIC_MODEL"):
        routes["critic"] = os.environ["JEEVES_CRITIC_MODEL"]
    return Router(routes)


def outline(spans: list[ReadableSpan]) -> list[str]:
    """The spans as an indented tree, siblings in start order, with their telling attributes."""
    children: dict[int | None, list[ReadableSpan]] = {}
    for span in spans:
        children.setdefault(span.parent.span_id if span.parent else None, []).append(span)
    keys = ("jeeves.worker", "jeeves.round", "jeeves.critic.score", "gen_ai.tool.call.id", "error.type")
    lines: list[str] = []

    def walk(parent: int | None, depth: int) -> None:
        for span in sorted(children.get(parent, []), key=lambda s: s.start_time or 0):
            a = dict(span.attributes or {})
            shown = [f"{k}={a[k]}" for k in keys if k in a]
            if "gen_ai.usage.input_tokens" in a:
                shown.append(f"tokens={a['gen_ai.usage.input_tokens']}+{a['gen_ai.usage.output_tokens']}")
            lines.append(f"{'  ' * depth}{span.name}" + (f"  ({', '.join(shown)})" if shown else ""))
            assert span.context is not None
            walk(span.context.span_id, depth + 1)

    walk(None, 0)
    return lines


async def main(
    live: bool = False, otlp: str | None = None, capture_content: bool = False, out: TextIO = sys.stdout
) -> list[ReadableSpan]:
    """Run the team with tracing on; print and return the finished spans."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "jeeves-example"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    if otlp:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(
            BatchSpanProcessor(OTLPSpanExporter(endpoint=otlp.rstrip("/") + "/v1/traces"))
        )
    tracer = OTelTracer(provider, capture_content=capture_content)
    router = live_router() if live else Router({"default": offline_model()})
    result = await jeeves.run(team(), TASK, router=router, session_id="example", tracer=tracer)
    provider.shutdown()  # flushes the OTLP batch, if any
    spans = list(exporter.get_finished_spans())
    print("\n".join(outline(spans)), file=out)
    print(f"\n{result.text}", file=out)
    return spans


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--live", action="store_true", help="use real models through litellm")
    parser.add_argument("--otlp", metavar="URL", help="also send spans to an OTLP/HTTP collector")
    parser.add_argument("--capture-content", action="store_true", help="put prompts and replies on spans")
    args = parser.parse_args()
    try:
        anyio.run(main, args.live, args.otlp, args.capture_content)
    except jeeves.JeevesError as exc:  # a missing API key, a provider that failed: one line, no traceback
        sys.exit(f"error: {exc}")
