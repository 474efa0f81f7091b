"""OpenTelemetry tracing for jeeves runs, following the GenAI semantic conventions.

```
invoke_agent supervisor                   INTERNAL  one span per session
├── chat openai/gpt-4o                    CLIENT    one span per live model call
└── execute_tool delegate                 INTERNAL  one span per live tool call; jeeves.worker=coder
    └── invoke_agent coder                jeeves.architecture=actor_critic, jeeves.worker=coder
        ├── invoke_agent actor
        │   ├── chat anthropic/claude-…
        │   └── execute_tool run_tests
        └── invoke_agent critic           jeeves.round=0, jeeves.critic.score=0.4
            └── chat openai/gpt-4o
```

`OTelTracer` implements `Tracer` (the protocol `tracer=` takes) with opentelemetry-api alone; `configure`
sets up the SDK (imported only there) and makes the tracer the default for every run.
While no tracer provider is configured (none given, none set globally), each hook is the
NullTracer's: no span objects, no attributes computed; a provider set later is picked
up at the next span.

Invariants:
- spans nest through context variables, which anyio copies into the tasks it starts, so a
  parallel worker's spans hang under the session that started it;
- replayed steps open no spans: the context opens a chat span only around a live call and
  the agent a tool span only around a live tool. Session spans are still opened on replay
  (the tree is the run's structure) and say `jeeves.replayed_steps`;
- message contents, tool arguments and results, and error messages go on spans only with
  `capture_content=True`; request parameters are copied from an allow-list, so API keys
  and other credentials in route params never reach a span.
"""

from typing import TYPE_CHECKING

from jeeves._base.lazy import lazy_names
from jeeves.telemetry.tracer import SpanHandle, Tracer

if TYPE_CHECKING:
    from jeeves.telemetry.otel import OTelTracer
    from jeeves.telemetry.setup import configure

# The kernel imports only the tracer protocol (`jeeves.telemetry.tracer`); OpenTelemetry loads
# when a user asks for it.
_LAZY = {"OTelTracer": "jeeves.telemetry.otel", "configure": "jeeves.telemetry.setup"}


__getattr__ = lazy_names("jeeves.telemetry", _LAZY)


__all__ = ["OTelTracer", "SpanHandle", "Tracer", "configure"]
