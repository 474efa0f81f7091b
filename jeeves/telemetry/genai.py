"""GenAI semantic-convention values from jeeves data: provider names, request parameters, messages.

Messages follow the conventions' JSON schemas (a list of `{"role", "parts"}` objects,
parts typed `text`, `tool_call` or `tool_call_response`) and go on spans as JSON strings,
which the conventions allow where structured attributes are not supported.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.util.types import AttributeValue

from jeeves.messages import Message, ModelResponse

__all__ = [
    "CONTENT_KEYS",
    "input_messages",
    "output_messages",
    "provider_name",
    "request_attributes",
    "system_instructions",
    "task_messages",
]

CONTENT_KEYS = frozenset(
    {
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.system_instructions",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
        "jeeves.watchdog.window",
        "jeeves.steering.message",
        "gen_ai.evaluation.explanation",
    }
)
"""Attributes that carry what users and models wrote: set only when content capture is on."""

_PROVIDERS = {
    "anthropic": "anthropic",
    "azure": "azure.ai.openai",
    "azure_ai": "azure.ai.inference",
    "bedrock": "aws.bedrock",
    "cohere": "cohere",
    "deepseek": "deepseek",
    "gemini": "gcp.gemini",
    "groq": "groq",
    "mistral": "mistral_ai",
    "openai": "openai",
    "perplexity": "perplexity",
    "vertex_ai": "gcp.vertex_ai",
    "watsonx": "ibm.watsonx.ai",
    "xai": "x_ai",
}
"""litellm model prefixes whose provider the conventions name differently (or the same)."""

_PARAMS = {
    "temperature": "gen_ai.request.temperature",
    "max_tokens": "gen_ai.request.max_tokens",
    "max_completion_tokens": "gen_ai.request.max_tokens",
    "top_p": "gen_ai.request.top_p",
    "top_k": "gen_ai.request.top_k",
    "seed": "gen_ai.request.seed",
    "frequency_penalty": "gen_ai.request.frequency_penalty",
    "presence_penalty": "gen_ai.request.presence_penalty",
    "stop": "gen_ai.request.stop_sequences",
}
"""The only request parameters copied to spans. An allow-list, so `api_key`, `api_base`,
custom headers and whatever else a route carries never reach a span."""


def provider_name(model: str) -> str:
    """`gen_ai.provider.name` from a litellm model string: "openai/gpt-4o" → "openai".

    A known prefix maps to the conventions' name ("bedrock/…" → "aws.bedrock"), another
    prefix is kept as it is ("ollama/…" → "ollama"), and no prefix gives "unknown".
    """
    prefix, slash, _ = model.partition("/")
    if not slash or not prefix:
        return "unknown"
    return _PROVIDERS.get(prefix, prefix)


def request_attributes(params: Mapping[str, Any]) -> dict[str, AttributeValue]:
    """`gen_ai.request.*` attributes for the allow-listed parameters that are set."""
    out: dict[str, AttributeValue] = {}
    for name, value in params.items():
        key = _PARAMS.get(name)
        if key is None or value is None:
            continue
        if isinstance(value, str) and name == "stop":
            out[key] = (value,)
        elif isinstance(value, bool | int | float | str):
            out[key] = value
        elif isinstance(value, Sequence) and all(isinstance(v, str) for v in value):
            out[key] = tuple(value)
    return out


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _arguments(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _parts(message: Message) -> list[dict[str, Any]]:
    if message.role == "tool":
        return [{"type": "tool_call_response", "id": message.tool_call_id, "response": message.content or ""}]
    parts: list[dict[str, Any]] = []
    if message.content:
        parts.append({"type": "text", "content": message.content})
    parts.extend(
        {"type": "tool_call", "id": c.id, "name": c.name, "arguments": _arguments(c.arguments)}
        for c in message.tool_calls
    )
    return parts


def input_messages(messages: Sequence[Message]) -> str:
    """`gen_ai.input.messages`: the chat history sent, system messages excepted."""
    return _dumps([{"role": m.role, "parts": _parts(m)} for m in messages if m.role != "system"])


def system_instructions(messages: Sequence[Message]) -> str | None:
    """`gen_ai.system_instructions`: the system messages' text parts, or None when there are none."""
    parts = [{"type": "text", "content": m.content} for m in messages if m.role == "system" and m.content]
    return _dumps(parts) if parts else None


def output_messages(response: ModelResponse) -> str:
    """`gen_ai.output.messages`: the reply as one assistant message."""
    message = Message(role="assistant", content=response.text or None, tool_calls=response.tool_calls)
    return _dumps(
        [{"role": "assistant", "parts": _parts(message), "finish_reason": response.finish_reason or "stop"}]
    )


def task_messages(task: str) -> str:
    """`gen_ai.input.messages` of a session span: its task, as one user message."""
    return _dumps([{"role": "user", "parts": [{"type": "text", "content": task}]}])
