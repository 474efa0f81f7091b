"""Plausible replies to any request a jeeves example sends, decided from the request alone.

`respond(body)` is a responder for `tests.models.mock_openai.serve`: it reads the OpenAI
chat request a jeeves session sent and answers the way a cooperative model would, so an
example's `--live` path runs to completion over HTTP whatever order its parallel sessions
call in. The rules, first match wins:

1. a critic (the request asks for the `Verdict` JSON schema, or its system prompt asks for
   a score) gets a passing verdict;
2. a supervisor (the request offers `delegate`) that has not delegated yet delegates the
   task to every worker its schema names, all in one reply; once the results are in, it
   forwards the one worker's output, or answers with all of them;
3. an agent offered other tools that has not called one yet calls the first, with
   arguments made from its schema; with the result in, it answers from it;
4. a coder (its system prompt says it writes Python) answers with a ```python block: the
   solution below for the function its task names, which passes the examples' tests;
5. anything else gets a short sentence.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tests.models.mock_openai import Behaviour, Calls, Text, Tool

PASSING_VERDICT = json.dumps({"score": 0.9, "issues": [], "summary": "ok"})

SOLUTIONS = {
    "parse_duration": (
        "import re\n\n"
        '_PART = re.compile(r"(\\d+)([hms])")\n'
        '_SECONDS = {"h": 3600, "m": 60, "s": 1}\n\n\n'
        "def parse_duration(text: str) -> int:\n"
        '    compact = text.replace(" ", "")\n'
        "    parts = _PART.findall(compact)\n"
        '    if not parts or "".join(n + u for n, u in parts) != compact:\n'
        '        raise ValueError(f"not a duration: {text!r}")\n'
        "    return sum(int(n) * _SECONDS[u] for n, u in parts)\n"
    ),
    "slugify": (
        "import re\nimport unicodedata\n\n\n"
        "def slugify(text: str) -> str:\n"
        '    plain = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()\n'
        '    return re.sub(r"[^a-z0-9]+", "-", plain.lower()).strip("-")\n'
    ),
    "fizzbuzz": (
        "def fizzbuzz(n: int) -> list[str]:\n"
        "    return [\n"
        '        "FizzBuzz" if i % 15 == 0 else "Fizz" if i % 3 == 0 else "Buzz" if i % 5 == 0 else str(i)\n'
        "        for i in range(1, n + 1)\n"
        "    ]\n"
    ),
    "add": "def add(a, b):\n    return a + b\n",
}
"""Correct code for each function an example asks for, by name."""

_CODER = re.compile(r"\bwrite\b.*\bpython\b", re.IGNORECASE)
_SUPERVISOR_TOOLS = ("delegate", "forward")


def is_jeevesagent_critique(body: dict[str, Any]) -> bool:
    """A review asked by `jeeves.compat.jeevesagent`'s critic: jeevesagent's critique template
    in the user turn, read as text (no output schema)."""
    return any('"score": 0.0-1.0' in _text(m) for m in body["messages"] if m["role"] == "user")


def respond(body: dict[str, Any]) -> Behaviour:
    messages: list[dict[str, Any]] = body["messages"]
    system = "\n".join(_text(m) for m in messages if m["role"] == "system")
    users = [_text(m) for m in messages if m["role"] == "user"]
    offered = {t["function"]["name"]: t["function"] for t in body.get("tools", [])}
    called = [c["function"] for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    results = [_text(m) for m in messages if m["role"] == "tool"]
    call_id = f"call_{len(messages)}"  # unique in a conversation: it grows with every turn

    if "response_format" in body or '"score"' in system or is_jeevesagent_critique(body):
        schema = body.get("response_format", {}).get("json_schema", {}).get("name", "Verdict")
        if schema != "Verdict":
            raise ValueError(f"no plausible reply for the output schema {schema!r}")
        return Text(PASSING_VERDICT)
    if "delegate" in offered:
        delegated = [json.loads(c["arguments"])["worker"] for c in called if c["name"] == "delegate"]
        if not delegated:
            workers = offered["delegate"]["parameters"]["properties"]["worker"]["enum"]
            arguments = [json.dumps({"worker": w, "instructions": users[0]}) for w in workers]
            return Calls(tuple(Tool("delegate", a, id=f"{call_id}_{i}") for i, a in enumerate(arguments)))
        if len(delegated) == 1 and "forward" in offered:
            return Tool("forward", json.dumps({"worker": delegated[0]}), id=call_id)
        return Text("\n\n".join(results))
    tools = [name for name in offered if name not in _SUPERVISOR_TOOLS]
    if tools and not called:
        return Tool(tools[0], json.dumps(_arguments(offered[tools[0]]["parameters"])), id=call_id)
    if results:
        return Text(f"From {called[-1]['name']}: {results[-1]}")
    if _CODER.search(system):
        name = next((n for n in SOLUTIONS if re.search(rf"\b{n}\(", "\n".join(users))), None)
        code = SOLUTIONS[name] if name else "def solution() -> None:\n    pass\n"
        return Text(f"```python\n{code}```\n")
    return Text("A short, plain answer.")


def _text(message: dict[str, Any]) -> str:
    content = message.get("content") or ""
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content)
    return str(content)


def _arguments(schema: dict[str, Any]) -> dict[str, Any]:
    """A value for each required parameter: the first of an enum, else one of the right type."""
    samples = {"string": "python", "integer": 1, "number": 1, "boolean": True}
    properties = schema.get("properties", {})
    return {
        name: properties[name].get("enum", [samples.get(properties[name].get("type"))])[0]
        for name in schema.get("required", [])
    }
