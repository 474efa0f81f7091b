"""Architectures the eval tests run by reference (`tests.evals.archs:solver`), offline."""

from __future__ import annotations

from jeeves import ActorCritic, Agent, FunctionModel, Verdict
from jeeves.messages import ModelRequest


def _code(name: str, op: str) -> str:
    return f"```python\ndef {name}(a, b):\n    return {op}\n```"


def _task(request: ModelRequest) -> str:
    return next(m.content or "" for m in request.messages if m.role == "user")


def _answer(request: ModelRequest) -> str:
    """add right, mul wrong (it adds), `Say hi` → hi."""
    task = _task(request)
    if "add(" in task:
        return _code("add", "a + b")
    if "mul(" in task:
        return _code("mul", "a + b")
    return "hi" if "hi" in task else "no idea"


def _drafts(request: ModelRequest) -> str:
    """A first draft that returns 0; a revision that is right."""
    task = _task(request)
    name = "mul" if "mul(" in task else "add"
    if "## Your previous answer" in task:
        return _code(name, "a * b" if name == "mul" else "a + b")
    return _code(name, "0")


def _no_zero(task: str, output: str) -> Verdict:
    ok = "return 0" not in output
    return Verdict(score=1.0 if ok else 0.0, hard_fail=not ok, issues=[] if ok else ["returns 0"])


solver = Agent("You write Python.", model=FunctionModel(_answer))
looped = ActorCritic(Agent("You write Python.", model=FunctionModel(_drafts)), _no_zero, max_rounds=2)
