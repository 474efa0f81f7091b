from __future__ import annotations

import functools
import gzip
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import jeeves
from jeeves import (
    ActorCritic,
    Agent,
    Context,
    LLMCritic,
    MemoryJournal,
    Output,
    Route,
    ScriptedModel,
    Supervisor,
    tool,
)
from jeeves._run.concurrency import run_all
from jeeves.errors import BadResponse, ProviderError, UserError
from jeeves.telemetry import OTelTracer, configure
from jeeves.telemetry.tracer import NullTracer, default_tracer, set_default_tracer
from jeeves.testing import Reply, call
from tests.conftest import REPO, subprocess_env

pytestmark = pytest.mark.anyio

SECRET = "sk-test-0123456789-never-on-a-span"


@tool
def word_count(text: str) -> int:
    """Count the words in a text."""
    return len(text.split())


class Traced:
    """An SDK provider with an in-memory exporter, and the OTelTracer writing to it."""

    def __init__(self, *, capture_content: bool = False) -> None:
        self.exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.provider = provider
        self.tracer = OTelTracer(provider, capture_content=capture_content)

    @property
    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, name: str) -> ReadableSpan:
        found = [s for s in self.spans if s.name == name]
        assert len(found) == 1, [s.name for s in self.spans]
        return found[0]

    def tree(self) -> list[str]:
        """The spans as an indented outline, siblings sorted by name, session id and tool call id."""
        spans = self.spans
        children: dict[int | None, list[ReadableSpan]] = {}
        for span in spans:
            parent = span.parent.span_id if span.parent is not None else None
            children.setdefault(parent, []).append(span)

        def key(span: ReadableSpan) -> tuple[str, str, str]:
            a = attrs(span)
            return span.name, str(a.get("jeeves.session.id", "")), str(a.get("gen_ai.tool.call.id", ""))

        def walk(parent: int | None, depth: int) -> Iterator[str]:
            for span in sorted(children.get(parent, []), key=key):
                yield "  " * depth + span.name
                assert span.context is not None
                yield from walk(span.context.span_id, depth + 1)

        return list(walk(None, 0))


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def event_text(span: ReadableSpan) -> str:
    """The span's events (a recorded exception's message and stacktrace) as text."""
    return json.dumps([[e.name, dict(e.attributes or {})] for e in span.events])


@pytest.fixture
def traced() -> Traced:
    return Traced()


class Pair:
    """A test-only architecture: runs two children at once, as `left` and `right`."""

    name = "pair"

    def __init__(self, left: Agent, right: Agent) -> None:
        self.left, self.right = left, right

    async def run(self, ctx: Context, task: str) -> Output:
        outputs = await run_all(
            [
                functools.partial(ctx.run, self.left, task, role="left"),
                functools.partial(ctx.run, self.right, task, role="right"),
            ]
        )
        return Output.of(" | ".join(o.text for o in outputs))


def rendezvous_tool() -> Any:
    """A tool whose two calls (one per parallel child) each wait for the other to start."""
    arrived: list[str] = []
    both = anyio.Event()

    @tool
    async def rendezvous(side: str) -> str:
        """Waits until both sides are in."""
        arrived.append(side)
        if len(arrived) == 2:
            both.set()
        with anyio.fail_after(5):
            await both.wait()
        return f"{side} met"

    return rendezvous


async def test_parallel_children_spans_hang_under_their_own_session(traced: Traced) -> None:
    meet = rendezvous_tool()
    model = ScriptedModel(
        {
            "left": [Reply(tool_calls=[call("rendezvous", {"side": "left"})]), "left done"],
            "right": [Reply(tool_calls=[call("rendezvous", {"side": "right"})]), "right done"],
        }
    )
    arch = Pair(Agent("l", tools=[meet]), Agent("r", tools=[meet]))
    result = await jeeves.run(arch, "go", model=model, session_id="job", tracer=traced.tracer)
    assert result.output == "left done | right done"
    assert traced.tree() == [
        "invoke_agent pair",
        "  invoke_agent left",
        "    chat scripted",
        "    chat scripted",
        "    execute_tool rendezvous",
        "  invoke_agent right",
        "    chat scripted",
        "    chat scripted",
        "    execute_tool rendezvous",
    ]
    # Each chat and tool span sits under the session that made it, though both ran at once.
    by_id = {s.context.span_id: s for s in traced.spans if s.context is not None}
    for span in traced.spans:
        if span.name.startswith(("chat", "execute_tool")):
            assert span.parent is not None
            parent = by_id[span.parent.span_id]
            assert attrs(parent)["jeeves.session.id"] == attrs(span)["jeeves.session.id"]
    left = [s for s in traced.spans if attrs(s).get("jeeves.session.id") == "job__left_0"]
    tool_span = next(s for s in left if s.name == "execute_tool rendezvous")
    assert attrs(tool_span)["gen_ai.tool.call.id"] == "call_0_0"


async def test_session_chat_and_tool_attributes(traced: Traced) -> None:
    scripted = ScriptedModel(
        {"counter": [Reply(tool_calls=[call("word_count", {"text": "a b c"})]), "3 words."]}
    )
    route = Route(model="openai/gpt-4o-mini", client=scripted, params={"temperature": 0.2, "api_key": SECRET})
    agent = Agent("You count words.", role="counter", tools=[word_count], params={"max_tokens": 50})
    await jeeves.run(agent, "How many?", model=route, session_id="job-1", tracer=traced.tracer)

    session = traced.named("invoke_agent counter")
    assert session.kind == SpanKind.INTERNAL
    assert attrs(session) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "counter",
        "gen_ai.conversation.id": "job-1",
        "gen_ai.request.model": "openai/gpt-4o-mini",
        "jeeves.session.id": "job-1",
        "jeeves.session.index": 0,
        "jeeves.role": "counter",
        "jeeves.role_path": "counter",
        "jeeves.architecture": "agent",
        "jeeves.stop_reason": "completed",
    }
    chats = [s for s in traced.spans if s.name == "chat openai/gpt-4o-mini"]
    assert len(chats) == 2
    chat = chats[0]
    assert chat.kind == SpanKind.CLIENT
    assert chat.status.status_code == StatusCode.UNSET
    first = attrs(chat)
    assert first["gen_ai.operation.name"] == "chat"
    assert first["gen_ai.provider.name"] == "openai"
    assert first["gen_ai.request.model"] == first["gen_ai.response.model"] == "openai/gpt-4o-mini"
    assert first["gen_ai.request.temperature"] == 0.2
    assert first["gen_ai.request.max_tokens"] == 50
    assert first["gen_ai.usage.input_tokens"] == 5  # words in "You count words." and "How many?"
    assert first["gen_ai.usage.output_tokens"] == 0
    assert first["jeeves.cost_usd"] == 0.0
    assert first["gen_ai.output.type"] == "text"
    assert first["jeeves.session.id"] == "job-1"
    assert "gen_ai.input.messages" not in first and "gen_ai.output.messages" not in first

    tool_span = traced.named("execute_tool word_count")
    assert tool_span.kind == SpanKind.INTERNAL
    assert attrs(tool_span) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "word_count",
        "gen_ai.tool.call.id": "call_0_0",
        "gen_ai.tool.type": "function",
        "jeeves.session.id": "job-1",
    }
    assert all(SECRET not in json.dumps(attrs(s)) for s in traced.spans)


async def test_content_is_captured_only_when_asked_and_api_keys_never() -> None:
    traced = Traced(capture_content=True)

    scripted = ScriptedModel([Reply(tool_calls=[call("word_count", {"text": "a b c"})]), "3 words."])
    route = Route(model="anthropic/claude-x", client=scripted, params={"api_key": SECRET, "api_base": SECRET})
    agent = Agent("You count words.", tools=[word_count])
    await jeeves.run(agent, "Count 'a b c'.", model=route, tracer=traced.tracer)

    first, second = [s for s in traced.spans if s.name.startswith("chat")]
    assert attrs(first)["gen_ai.provider.name"] == "anthropic"
    assert json.loads(attrs(first)["gen_ai.system_instructions"]) == [
        {"type": "text", "content": "You count words."}
    ]
    assert json.loads(attrs(first)["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "Count 'a b c'."}]}
    ]
    assert json.loads(attrs(first)["gen_ai.output.messages"]) == [
        {
            "role": "assistant",
            "parts": [
                {"type": "tool_call", "id": "call_0_0", "name": "word_count", "arguments": {"text": "a b c"}}
            ],
            "finish_reason": "stop",
        }
    ]
    history = json.loads(attrs(second)["gen_ai.input.messages"])
    assert history[-1] == {
        "role": "tool",
        "parts": [{"type": "tool_call_response", "id": "call_0_0", "response": "3"}],
    }
    tool_attrs = attrs(traced.named("execute_tool word_count"))
    assert tool_attrs["gen_ai.tool.call.arguments"] == '{"text": "a b c"}'
    assert tool_attrs["gen_ai.tool.call.result"] == "3"
    session = attrs(traced.named("invoke_agent agent"))
    assert json.loads(session["gen_ai.input.messages"])[0]["parts"][0]["content"] == "Count 'a b c'."
    everything = json.dumps([attrs(s) for s in traced.spans]) + repr([s.events for s in traced.spans])
    assert SECRET not in everything


async def test_a_failing_model_call_sets_error_status_and_type(traced: Traced) -> None:
    model = ScriptedModel({"agent": [BadResponse("the provider sent half a JSON body")]})
    route = jeeves.Route(model="scripted", client=model, retries=0)  # BadResponse is retryable
    with pytest.raises(BadResponse):
        await jeeves.run(Agent("x"), "t", model=route, session_id="job", tracer=traced.tracer)
    chat = traced.named("chat scripted")
    assert chat.status.status_code == StatusCode.ERROR
    assert attrs(chat)["error.type"] == "BadResponse"
    assert "gen_ai.response.model" not in attrs(chat)
    assert "half a JSON" not in (chat.status.description or "")  # messages are content: opt-in
    session = traced.named("invoke_agent agent")
    assert session.status.status_code == StatusCode.ERROR
    assert attrs(session)["error.type"] == "BadResponse"


async def test_error_messages_go_on_spans_with_content_capture() -> None:
    traced = Traced(capture_content=True)
    model = ScriptedModel([BadResponse("the provider sent half a JSON body")])
    route = jeeves.Route(model="scripted", client=model, retries=0)
    with pytest.raises(BadResponse):
        await jeeves.run(Agent("x"), "t", model=route, tracer=traced.tracer)
    chat = traced.named("chat scripted")
    assert chat.status.description == "BadResponse: the provider sent half a JSON body"
    assert [e.name for e in chat.events] == ["exception"]


async def test_a_tool_error_marks_its_span(traced: Traced) -> None:
    @tool
    def divide(a: int, b: int) -> float:
        """Divide a by b."""
        return a / b

    model = ScriptedModel([Reply(tool_calls=[call("divide", {"a": 1, "b": 0})]), "cannot"])
    await jeeves.run(Agent("x", tools=[divide]), "t", model=model, tracer=traced.tracer)
    span = traced.named("execute_tool divide")
    assert span.status.status_code == StatusCode.ERROR
    assert attrs(span)["error.type"] == "tool_error"
    assert traced.named("invoke_agent agent").status.status_code == StatusCode.UNSET


async def test_a_supervisor_over_an_actor_critic_gives_the_session_tree(traced: Traced) -> None:
    @tool
    def search(topic: str) -> str:
        """Look a topic up."""
        return f"notes on {topic}"

    coder = ActorCritic(Agent("write code"), LLMCritic(), max_rounds=2)
    team = Supervisor({"research": Agent("look up", tools=[search]), "coder": coder})
    model = ScriptedModel(
        {
            "job": [
                Reply(
                    tool_calls=[
                        call("delegate", {"worker": "research", "instructions": "find"}),
                        call("delegate", {"worker": "coder", "instructions": "write"}),
                    ]
                ),
                "all done",
            ],
            "job__research_0": [Reply(tool_calls=[call("search", {"topic": "slugs"})]), "found"],
            "job__coder_0__actor_0": ["def f(): retur"],
            "job__coder_0__critic_0": ['{"score": 0.4, "issues": ["syntax error"], "summary": "broken"}'],
            "job__coder_0__actor_1": ["def f(): return 1"],
            "job__coder_0__critic_1": ['{"score": 0.9, "issues": [], "summary": "good"}'],
        }
    )
    result = await jeeves.run(team, "t", model=model, session_id="job", tracer=traced.tracer)
    assert result.output == "all done"
    model.assert_consumed()
    assert traced.tree() == [
        "invoke_agent supervisor",
        "  chat scripted",
        "  chat scripted",
        "  execute_tool delegate",
        "    invoke_agent research",
        "      chat scripted",
        "      chat scripted",
        "      execute_tool search",
        "  execute_tool delegate",
        "    invoke_agent coder",
        "      invoke_agent actor",
        "        chat scripted",
        "      invoke_agent actor",
        "        chat scripted",
        "      invoke_agent critic",
        "        chat scripted",
        "      invoke_agent critic",
        "        chat scripted",
    ]
    for worker in ("research", "coder"):
        session = traced.named(f"invoke_agent {worker}")
        assert attrs(session)["jeeves.worker"] == worker
        assert attrs(session)["jeeves.parent.architecture"] == "supervisor"
        assert session.parent is not None
        delegation = next(
            s for s in traced.spans if s.context and s.context.span_id == session.parent.span_id
        )
        assert attrs(delegation)["jeeves.worker"] == worker
        assert attrs(delegation)["gen_ai.tool.name"] == "delegate"
    assert attrs(traced.named("invoke_agent coder"))["jeeves.architecture"] == "actor_critic"
    assert attrs(traced.named("invoke_agent coder"))["jeeves.stop_reason"] == "approved"
    critics = sorted(
        (attrs(s) for s in traced.spans if s.name == "invoke_agent critic"), key=lambda a: a["jeeves.round"]
    )
    assert [(a["jeeves.round"], a["jeeves.critic.score"]) for a in critics] == [(0, 0.4), (1, 0.9)]
    assert [a["jeeves.session.id"] for a in critics] == ["job__coder_0__critic_0", "job__coder_0__critic_1"]
    assert all(a["jeeves.role_path"] == "supervisor.coder.critic" for a in critics)
    assert all("jeeves.worker" not in a for a in critics)
    actors = [attrs(s) for s in traced.spans if s.name == "invoke_agent actor"]
    assert all("jeeves.round" not in a and "jeeves.critic.score" not in a for a in actors)
    assert "jeeves.worker" not in attrs(traced.named("invoke_agent supervisor"))


async def test_replayed_steps_open_no_chat_or_tool_spans() -> None:
    journal = MemoryJournal()
    agent = Agent("count", tools=[word_count])
    model = ScriptedModel([Reply(tool_calls=[call("word_count", {"text": "a b"})]), "2"])
    live = Traced()
    await jeeves.run(agent, "t", model=model, session_id="job", journal=journal, tracer=live.tracer)
    assert live.tree() == [
        "invoke_agent agent",
        "  chat scripted",
        "  chat scripted",
        "  execute_tool word_count",
    ]
    assert "jeeves.replayed_steps" not in attrs(live.named("invoke_agent agent"))

    replay = Traced()
    result = await jeeves.run(
        agent, "t", session_id="job", journal=journal, mode="replay", tracer=replay.tracer
    )
    assert result.output == "2"
    assert replay.tree() == ["invoke_agent agent"]
    assert attrs(replay.named("invoke_agent agent"))["jeeves.replayed_steps"] == 3


async def test_a_cancelled_session_is_marked_cancelled_not_failed(traced: Traced) -> None:
    entered = anyio.Event()

    @tool
    async def hang() -> str:
        """Never returns."""
        entered.set()
        await anyio.sleep_forever()
        return "unreachable"

    model = ScriptedModel([Reply(tool_calls=[call("hang")])])
    async with anyio.create_task_group() as group:
        group.start_soon(
            functools.partial(jeeves.run, Agent("x", tools=[hang]), "t", model=model, tracer=traced.tracer)
        )
        await entered.wait()
        group.cancel_scope.cancel()
    for name in ("invoke_agent agent", "execute_tool hang"):
        span = traced.named(name)
        assert attrs(span)["jeeves.cancelled"] is True
        assert span.status.status_code == StatusCode.UNSET


async def test_configure_with_a_provider_installs_the_default_tracer(traced: Traced) -> None:
    assert isinstance(default_tracer(), NullTracer)
    try:
        tracer = configure(tracer_provider=traced.provider)
        assert default_tracer() is tracer
        await jeeves.run(Agent("x"), "t", model=ScriptedModel(["ok"]))
    finally:
        set_default_tracer(None)
    assert traced.tree() == ["invoke_agent agent", "  chat scripted"]


def test_configure_without_the_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m.startswith("opentelemetry.sdk")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk", None)
    with pytest.raises(UserError, match=r"jeeves\[otel\]"):
        configure(console=True)
    assert isinstance(default_tracer(), NullTracer)


def test_configure_rejects_an_endpoint_that_is_not_http() -> None:
    with pytest.raises(UserError, match="'localhost:4318' is not an http"):
        configure(otlp_endpoint="localhost:4318", tracer_provider=TracerProvider())
    assert isinstance(default_tracer(), NullTracer)


def _python(*args: str) -> subprocess.CompletedProcess[str]:
    """Run this checkout's Python with no OTEL_* settings from the outside (a fresh global provider)."""
    env = {k: v for k, v in subprocess_env().items() if not k.startswith("OTEL_")}
    return subprocess.run(
        [sys.executable, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )


def test_importing_telemetry_needs_only_the_api_and_a_provider_set_later_is_picked_up() -> None:
    code = (
        "import sys, anyio, jeeves, jeeves.telemetry\n"
        "assert not [m for m in sys.modules if m.startswith('opentelemetry.sdk')], 'SDK imported'\n"
        "tracer = jeeves.telemetry.OTelTracer()\n"
        "go = lambda: jeeves.run(jeeves.Agent('x'), 't', model=jeeves.ScriptedModel(['ok']), tracer=tracer)\n"
        "assert anyio.run(go).output == 'ok'\n"
        "from opentelemetry import trace\n"
        "from opentelemetry.sdk.trace import TracerProvider\n"
        "from opentelemetry.sdk.trace.export import SimpleSpanProcessor\n"
        "from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter\n"
        "exporter = InMemorySpanExporter()\n"
        "provider = TracerProvider()\n"
        "provider.add_span_processor(SimpleSpanProcessor(exporter))\n"
        "trace.set_tracer_provider(provider)\n"
        "anyio.run(go)\n"
        "print(sorted(s.name for s in exporter.get_finished_spans()))\n"
    )
    done = _python("-c", code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['chat scripted', 'invoke_agent agent']"


def test_demo_trace_prints_the_span_tree_to_stderr(tmp_path: Path) -> None:
    done = _python("-m", "jeeves", "demo", "--json", "--trace", "--journal", str(tmp_path / "demo.jsonl"))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[0])["type"] == "session.started"  # stdout stays events only
    spans = json.loads("[" + done.stderr.strip().replace("}\n{", "},\n{") + "]")
    by_name: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        by_name.setdefault(span["name"], []).append(span)
    assert {
        "invoke_agent lead",
        "execute_tool delegate",
        "invoke_agent coder",
        "execute_tool python_docs",
    } <= set(by_name)
    assert "chat scripted:anthropic/claude-sonnet-4-5" in by_name and "chat scripted:openai/gpt-4o" in by_name
    (root,) = by_name["invoke_agent lead"]
    delegations = {s["context"]["span_id"] for s in by_name["execute_tool delegate"]}
    assert {s["parent_id"] for s in by_name["execute_tool delegate"]} == {root["context"]["span_id"]}
    assert by_name["invoke_agent coder"][0]["parent_id"] in delegations
    assert root["resource"]["attributes"]["service.name"] == "jeeves"


class _Collector(BaseHTTPRequestHandler):
    """An OTLP/HTTP trace endpoint on 127.0.0.1 that keeps what it is sent."""

    bodies: list[tuple[str, bytes]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        self.bodies.append((self.path, body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[tuple[str, list[tuple[str, bytes]]]]:
    _Collector.bodies = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", _Collector.bodies
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_configure_sends_spans_to_an_otlp_collector(collector: tuple[str, list[tuple[str, bytes]]]) -> None:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    url, bodies = collector
    code = (
        "import anyio, jeeves\n"
        "from jeeves.telemetry import configure\n"
        f"tracer = configure(otlp_endpoint={url!r}, service_name='jeeves-test')\n"
        "agent = jeeves.Agent('x', role='writer')\n"
        "anyio.run(lambda: jeeves.run(agent, 't', model=jeeves.ScriptedModel(['ok']), session_id='otlp'))\n"
        "tracer.provider.shutdown()\n"
    )
    done = _python("-c", code)
    assert done.returncode == 0, done.stderr
    assert bodies and all(path == "/v1/traces" for path, _ in bodies)
    names: dict[str, dict[str, Any]] = {}
    for _, body in bodies:
        request = ExportTraceServiceRequest.FromString(body)
        for resource_spans in request.resource_spans:
            resource = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
            assert resource["service.name"] == "jeeves-test"
            for scope_spans in resource_spans.scope_spans:
                assert scope_spans.scope.name == "jeeves"
                for span in scope_spans.spans:
                    names[span.name] = {a.key: a.value for a in span.attributes}
    assert set(names) == {"invoke_agent writer", "chat scripted"}
    assert names["invoke_agent writer"]["jeeves.session.id"].string_value == "otlp"


async def test_no_span_carries_a_credential_from_params_headers_or_a_divergence() -> None:
    traced = Traced(capture_content=True)
    rotated = SECRET + "-rotated"

    def writer(key: str, instructions: str) -> Agent:
        headers = {"Authorization": f"Bearer {key}", "X-Api-Key": key}
        return Agent(
            instructions, role="writer", params={"api_key": key, "extra_headers": headers, "top_p": 1}
        )

    journal = MemoryJournal()
    route = Route(
        model="openai/gpt-4o", client=ScriptedModel(["A draft."]), params={"headers": {"Cookie": SECRET}}
    )
    await jeeves.run(
        writer(SECRET, "You write."), "t", model=route, journal=journal, session_id="s", tracer=traced.tracer
    )
    with pytest.raises(jeeves.ReplayDivergence):  # its message, on the span, is a diff of the two requests
        await jeeves.replay(writer(rotated, "You write tersely."), journal, "s", tracer=traced.tracer)

    failed = [s for s in traced.spans if s.status.status_code == StatusCode.ERROR]
    assert failed and "You write tersely." in str(failed[0].status.description)
    assert attrs(traced.spans[0])["gen_ai.request.top_p"] == 1
    for span in traced.spans:
        shown = json.dumps(attrs(span)) + event_text(span) + str(span.status.description)
        assert SECRET not in shown and rotated not in shown


async def test_a_provider_error_quoting_the_key_is_scrubbed_on_the_span() -> None:
    traced = Traced(capture_content=True)
    failing = ScriptedModel([ProviderError(f"401: key {SECRET} is not valid", status_code=401)])
    route = Route(model="openai/gpt-4o", client=failing, params={"api_key": SECRET})
    with pytest.raises(ProviderError):
        await jeeves.run(Agent("x"), "t", model=route, session_id="s", tracer=traced.tracer)

    chat = traced.named("chat openai/gpt-4o")
    assert chat.status.description == "ProviderError: 401: key <redacted> is not valid"
    for span in traced.spans:
        assert SECRET not in json.dumps(attrs(span)) + event_text(span) + str(span.status.description)


# -- watchdog verdicts and steering ----------------------------------------------------------
def _watched_goal() -> tuple[jeeves.Goal, ScriptedModel]:
    @tool
    def restart(name: str) -> str:
        """Restart a service."""
        return f"{name} restarted"

    agent = Agent("You operate a box.", tools=[restart], max_turns=10)
    again = call("restart", {"name": "web"})
    model = ScriptedModel(
        {
            "agent": [
                Reply(tool_calls=[again]),
                Reply(tool_calls=[again]),
                Reply(tool_calls=[call("claim_complete", {"report": "restarted"})]),
            ]
        }
    )
    goal = jeeves.Goal(
        agent,
        goal="web answers 200",
        success=lambda task, output: True,
        watchdog=jeeves.Watchdog(every=0, repeat_limit=2),
    )
    return goal, model


@pytest.mark.parametrize("capture", [False, True])
async def test_watchdog_verdicts_and_steering_are_events_on_the_agents_span(capture: bool) -> None:
    traced = Traced(capture_content=capture)
    goal, model = _watched_goal()
    result = await jeeves.run(goal, "Fix web.", model=model, session_id="ops", tracer=traced.tracer)
    assert result.stop_reason == "verified"
    agent_span = traced.named("invoke_agent agent")
    assert attrs(agent_span)["jeeves.session.id"] == "ops__agent_0"
    events = [(e.name, dict(e.attributes or {})) for e in agent_span.events]
    names = ["jeeves.watchdog.verdict", "gen_ai.evaluation.result", "jeeves.steering.injected"]
    assert [name for name, _ in events] == names
    verdict, evaluation, steering = events[0][1], events[1][1], events[2][1]
    assert (evaluation["gen_ai.evaluation.name"], evaluation["gen_ai.evaluation.score.label"]) == (
        "watchdog",
        "stuck",
    )
    assert evaluation["jeeves.evaluated.session.id"] == "ops__agent_0"
    assert ("gen_ai.evaluation.explanation" in evaluation) is capture
    assert verdict["jeeves.watchdog.verdict"] == "STUCK"
    assert verdict["jeeves.watchdog.source"] == "signal"
    assert "restart with the same arguments 2 times" in str(verdict["jeeves.watchdog.reason"])
    assert verdict["jeeves.watchdog.session.id"] == "ops"
    assert (steering["jeeves.steering.cause"], steering["jeeves.steering.source"]) == (
        "stuck",
        "goal",
    )
    # The window (tool arguments and results) and the message are content: kept only on capture.
    assert ("jeeves.watchdog.window" in verdict) is capture
    assert ("jeeves.steering.message" in steering) is capture
    if capture:
        assert list(verdict["jeeves.watchdog.window"])[0].startswith('restart({"name": "web"})')
    # the goal's own span carries only its success critic's verdict, as an evaluation
    assert [e.name for e in traced.named("invoke_agent goal").events] == ["gen_ai.evaluation.result"]
