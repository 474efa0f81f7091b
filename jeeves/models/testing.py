"""Models for tests and offline demos: `ScriptedModel` and `FunctionModel`.

Both are ordinary `ModelClient`s: put them in a Router (or pass `model=` to `jeeves.run`)
and every architecture runs without a network. Neither ever makes up an answer: a call
the script does not cover raises `UnexpectedModelCall`, and `assert_consumed()` raises
`UnconsumedSteps` when steps are left over.
"""

from __future__ import annotations

import inspect
import json
import re
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from jeeves._base.validate import short_repr
from jeeves.errors import UnconsumedSteps, UnexpectedModelCall, UserError, UserTypeError
from jeeves.messages import ModelRequest, ModelResponse, ToolCall, Usage
from jeeves.models.base import DeltaSink
from jeeves.models.router import role_keys

__all__ = ["FunctionModel", "Reply", "ScriptedModel", "Step", "call"]

_CHUNKS = re.compile(r"\s*\S+\s*|\s+")


def call(name: str, arguments: Mapping[str, Any] | str | None = None, *, id: str | None = None) -> ToolCall:
    """A tool call for a script: `call("word_count", {"text": "a b c"})`."""
    args = arguments if isinstance(arguments, str) else json.dumps(dict(arguments or {}))
    return ToolCall(id=id or "", name=name, arguments=args)


@dataclass
class Reply:
    """One scripted reply: text, tool calls, and (optionally) the usage to report."""

    text: str = ""
    tool_calls: Sequence[ToolCall] = ()
    usage: Usage | None = None


Step: TypeAlias = str | Reply | ModelResponse | BaseException
"""A script step: reply text, a Reply, a full ModelResponse, or an exception to raise."""


def _estimate_usage(request: ModelRequest, text: str) -> Usage:
    prompt = sum(len((m.content or "").split()) for m in request.messages)
    return Usage(input_tokens=prompt, output_tokens=len(text.split()), model_calls=1)


def _to_response(step: str | Reply | ModelResponse, request: ModelRequest) -> ModelResponse:
    if isinstance(step, ModelResponse):
        return step.model_copy(update={"model": step.model or request.model})
    reply = Reply(text=step) if isinstance(step, str) else step
    calls = list(reply.tool_calls)
    if not all(c.id for c in calls):  # ids made up from the turn: counted only when one is needed
        turn = sum(1 for m in request.messages if m.role == "assistant")
        calls = [c if c.id else c.model_copy(update={"id": f"call_{turn}_{i}"}) for i, c in enumerate(calls)]
    usage = reply.usage or _estimate_usage(request, reply.text)
    return ModelResponse(
        text=reply.text, tool_calls=calls, usage=usage, model=request.model, finish_reason="stop"
    )


async def _stream(text: str, on_delta: DeltaSink | None) -> None:
    if on_delta is not None:
        for chunk in _CHUNKS.findall(text):
            await on_delta(chunk)


def _steps(key: object, steps: object) -> list[Step]:
    """A script's steps, or a UserError naming the script and the step that cannot be one."""
    if not isinstance(key, str):
        raise UserTypeError(f"ScriptedModel script keys are role paths or session ids (str), got {key!r}.")
    if isinstance(steps, str):  # a str is iterable: it would script one step per character
        raise UserTypeError(
            f"ScriptedModel script {key!r} is a bare string {steps!r}; pass a list of steps: [{steps!r}]."
        )
    if not isinstance(steps, Iterable):
        raise UserTypeError(f"ScriptedModel script {key!r} is {short_repr(steps)}; pass a list of steps.")
    found = list(steps)
    for i, step in enumerate(found):
        if not isinstance(step, str | Reply | ModelResponse | BaseException):
            raise UserTypeError(
                f"ScriptedModel script {key!r} step {i} is {short_repr(step)}; a step is reply text, "
                f"a jeeves.testing.Reply, a jeeves.ModelResponse or an exception to raise."
            )
    return found


class ScriptedModel:
    """Answers from scripts, one per role (or session id), in order.

    ```python
    ScriptedModel({
        "actor": ["def add(a, b): return a - b", "def add(a, b): return a + b"],
        "critic": ['{"score": 0.2, "issues": ["subtracts"]}', '{"score": 1.0}'],
    })
    ```

    A call is matched against the keys the way the router matches routes: the session id
    first, then the role path from most to least specific (`coder.critic`, `critic`), then
    `default`. A plain list is the `default` script. Text replies are streamed word by word.
    """

    def __init__(
        self, scripts: Mapping[str, Iterable[Step]] | Iterable[Step], *, model_name: str = "scripted"
    ) -> None:
        items = scripts.items() if isinstance(scripts, Mapping) else [("default", scripts)]
        self._scripts: dict[str, deque[Step]] = {key: deque(_steps(key, steps)) for key, steps in items}
        self.model_name = model_name
        self.requests: list[ModelRequest] = []
        """Every request received, in order (for assertions)."""

    def _pop(self, request: ModelRequest) -> Step:
        step = self._take(request.session_id, request.role_path)
        if step is not None:
            return step
        keys = [request.session_id, *role_keys(request.role_path)]
        last_user = next((m.content for m in reversed(request.messages) if m.role == "user"), "")
        raise UnexpectedModelCall(
            f"ScriptedModel has no step left for session {request.session_id!r} (looked up {keys!r}); "
            f"the call asked about {(last_user or '')[:120]!r}. Add a step to one of those scripts."
        )

    async def complete(self, request: ModelRequest, *, on_delta: DeltaSink | None = None) -> ModelResponse:
        self.requests.append(request)
        step = self._pop(request)
        if isinstance(step, BaseException):
            raise step
        response = _to_response(step, request)
        await _stream(response.text, on_delta)
        return response

    def _take(self, session_id: str, role_path: Sequence[str]) -> Step | None:
        for key in (session_id, *role_keys(role_path)):
            script = self._scripts.get(key)
            if script:
                return script.popleft()
        return None

    def skip(self, session_id: str, role_path: Sequence[str]) -> None:
        """Drop the step a call of this session would get, as if it had been made: a resumed
        run's calls served from its journal, so the script goes on where the run stopped."""
        self._take(session_id, role_path)

    def remaining(self) -> dict[str, int]:
        """Steps left per script key."""
        return {key: len(steps) for key, steps in self._scripts.items() if steps}

    def assert_consumed(self) -> None:
        """Raise UnconsumedSteps if any script still has steps."""
        left = self.remaining()
        if left:
            raise UnconsumedSteps(
                f"ScriptedModel steps were never used: {left!r}. Remove them or check the run."
            )


ModelFunction = Callable[
    [ModelRequest], "str | Reply | ModelResponse | Awaitable[str | Reply | ModelResponse]"
]


@dataclass
class FunctionModel:
    """Answers each call with a Python function of the request (sync or async).

    ```python
    FunctionModel(lambda request: f"echo: {request.messages[-1].content}")
    ```

    The function may return text, a `Reply` or a `ModelResponse`, or raise (a
    `jeeves.RateLimited` to test retries, say). Text replies are streamed word by word.
    """

    function: ModelFunction
    model_name: str = "function"
    requests: list[ModelRequest] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not callable(self.function):
            raise UserTypeError(
                f"FunctionModel needs a function of the request, got {short_repr(self.function)}; "
                f"e.g. FunctionModel(lambda request: 'reply text')."
            )

    async def complete(self, request: ModelRequest, *, on_delta: DeltaSink | None = None) -> ModelResponse:
        self.requests.append(request)
        result = self.function(request)
        if inspect.isawaitable(result):
            result = await result
        if not isinstance(result, str | Reply | ModelResponse):
            raise UserError(
                f"FunctionModel's function returned {result!r}; return a str, a jeeves.testing.Reply "
                f"or a jeeves.ModelResponse."
            )
        response = _to_response(result, request)
        await _stream(response.text, on_delta)
        return response
